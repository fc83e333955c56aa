"""Optuna users switch to bo in one line: :class:`BoSampler` is an Optuna sampler whose
parameters come from a bo study, and :class:`BoPruner` prunes with the study's early-stopping
rule.

    study = optuna.create_study(sampler=BoSampler(url="http://127.0.0.1:8080"), pruner=BoPruner())
    study.optimize(objective, n_trials=50, n_jobs=4)      # the objective, unchanged

How Optuna's ideas map onto bo's:

- **Define-by-run.** Without ``search_space=``, the bo study's space grows as the objective asks
  (an *open* search space, a bo extension): each parameter is added when first asked, under the
  parameter it was asked after (the last categorical, or integer of at most five values, the
  trial holds — ``svc_c`` under ``classifier = SVC``), and widened where later trials ask for it
  elsewhere (a learning rate asked under every optimizer ends at the root). bo chooses every
  value: a parameter the study knows comes with the trial, a new one is chosen by the study's
  model given the trial's other values. So a conditional objective reaches bo's tree models
  (``ADD_TREE``, and ``AUTO`` among them).
- **A declared space**: ``search_space=`` (name → Optuna distribution, or a
  :class:`bo_client.SearchSpace` tree) fixes the bo study's space; a parameter outside it is
  sampled at random with a warning.
- **Distributions**: ``FloatDistribution`` → DOUBLE (log scale kept), or DISCRETE with a ``step``;
  ``IntDistribution`` → INTEGER (log kept), or DISCRETE with a ``step`` above 1;
  ``CategoricalDistribution`` → CATEGORICAL of the choices' text (choices of any type, mapped
  back). A parameter's distribution is fixed at first use: asking it with another is an error.
- **Objectives**: ``directions`` become goals; metric ids are ``study.metric_names`` when set,
  else ``objective`` (one) or ``objective_0``, ``objective_1``, … .
- **constraints_func** (``BoSampler(constraints_func=…)``, Optuna's convention: each value ≤ 0 is
  feasible) becomes safety metrics ``constraint_0``, … with threshold 0; the first trial, which
  says how many there are, is sampled at random and added with its result.
- **Pruning**: ``trial.report(value, step)`` is queued and sent in the background, and
  ``trial.should_prune()`` is answered at once from what the server last said of the trial (see
  :class:`BoPruner`). A pruned trial is completed as stopped early (its last value, a partial
  result), a failed one INFEASIBLE with Optuna's reason.
- **n_jobs=k** runs k bo clients (one client id per Optuna trial); an enqueued trial's
  parameters are used as given (the rest sampled at random) and it is added with its result.
- **The budget**: Optuna never tells a sampler ``study.optimize``'s ``n_trials``;
  ``BoSampler(n_trials=…)`` does (as optunahub's ``SMACSampler`` takes it). On a space without
  conditions the study then models from its trial after at most a quarter of them (never fewer
  than 10 quasi-random trials first), where it would otherwise wait for 2d + 2 of them in d
  parameters; it does not stop there, so ``optimize`` can be run again to go on.
- **The bo study** is made on the first trial, named after the Optuna study (``study_name=`` to
  choose; an unnamed Optuna study gives the script's name and the time), in ``project``
  (``demo``); each bo trial keeps Optuna's trial number as its label
  ``optuna.trial_number``. An existing study of the same name and settings is taken up.
- **A finished bo study** (its space used up, or stopped) ends ``optimize`` as Optuna's
  ``GridSampler`` does: the trial in hand is sampled at random, and ``study.stop()`` is called.
- **A killed worker**: a process killed mid-trial (SIGKILL, SIGTERM) leaves its bo trial
  ACTIVE. With ``trial_lease=`` seconds (longer than a trial runs without reporting), the study
  hands such a trial to the next worker after that long.

Needs Optuna (``pip install optuna``); the rest of ``bo_client`` does not."""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.samplers import BaseSampler, RandomSampler
from optuna.study import Study as OptunaStudy
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from ._http import ApiError, RetryPolicy
from ._numbers import as_metric, as_number
from ._reports import MedianRule, Reports
from .client import Client
from .space import SearchSpace, Value
from .spec import MedianStopping, Metric, Stopping
from .study import AskedParameter, Study, Trial

__all__ = ["BoPruner", "BoSampler", "space_from_optuna"]

logger = logging.getLogger("bo_client")

Json = Any

#: The most values a stepped distribution becomes a DISCRETE parameter with.
MAX_STEPPED_VALUES = 1000

#: The most values of an INTEGER (or stepped) parameter that other parameters are placed under.
MAX_BRANCH_VALUES = 5

#: Optuna's label on each bo trial: the Optuna trial's number.
TRIAL_NUMBER_LABEL = "optuna.trial_number"

Back = Dict[str, Callable[[Value], Any]]


def _choice_labels(choices: Sequence[Any]) -> List[str]:
    """Text for each categorical choice, unique (``1`` and ``"1"`` get their types added)."""
    labels = [str(c) for c in choices]
    if len(set(labels)) == len(labels):
        return labels
    return [f"{c!r}" for c in choices]


def _stepped(name: str, low: float, high: float, step: float) -> List[float]:
    count = int(math.floor((high - low) / step + 1e-9)) + 1
    if count > MAX_STEPPED_VALUES:
        raise ValueError(
            f"parameter {name!r}: a step of {step} makes {count} values; bo takes at most {MAX_STEPPED_VALUES} "
            "as a DISCRETE parameter: use a coarser step, or no step"
        )
    return [low + k * step for k in range(count)]


def _values_count(d: BaseDistribution) -> Optional[int]:
    """How many values a distribution has, when finitely many."""
    if isinstance(d, CategoricalDistribution):
        return len(d.choices)
    if isinstance(d, IntDistribution):
        return (d.high - d.low) // d.step + 1
    if isinstance(d, FloatDistribution) and d.step is not None:
        return int(math.floor((d.high - d.low) / d.step + 1e-9)) + 1
    return None


def _branches(d: BaseDistribution) -> bool:
    """Whether other parameters may be placed under this one's values: a categorical, or a
    number with a few values (a layer count)."""
    n = _values_count(d)
    if isinstance(d, CategoricalDistribution):
        return n is not None and n >= 2
    return n is not None and 2 <= n <= MAX_BRANCH_VALUES


def parameter_spec(name: str, d: BaseDistribution) -> Json:
    """The Vertex ``ParameterSpec`` of an Optuna distribution."""
    if isinstance(d, FloatDistribution):
        if d.step is None:
            spec: Json = {"parameterId": name, "doubleValueSpec": {"minValue": d.low, "maxValue": d.high}}
            if d.log:
                spec["scaleType"] = "UNIT_LOG_SCALE"
            return spec
        return {"parameterId": name, "discreteValueSpec": {"values": _stepped(name, d.low, d.high, d.step)}}
    if isinstance(d, IntDistribution):
        if d.step == 1:
            spec = {"parameterId": name, "integerValueSpec": {"minValue": str(d.low), "maxValue": str(d.high)}}
            if d.log:
                spec["scaleType"] = "UNIT_LOG_SCALE"
            return spec
        return {"parameterId": name, "discreteValueSpec": {"values": _stepped(name, d.low, d.high, d.step)}}
    if isinstance(d, CategoricalDistribution):
        return {"parameterId": name, "categoricalValueSpec": {"values": _choice_labels(d.choices)}}
    raise ValueError(f"parameter {name!r}: {type(d).__name__} is not a distribution bo maps (Float, Int, Categorical)")


def _domain(spec: Json) -> Tuple[Any, ...]:
    """What must agree between two asks of a parameter: its value spec (without a default) and
    its scale."""
    for key in ("doubleValueSpec", "integerValueSpec", "discreteValueSpec", "categoricalValueSpec"):
        if key in spec:
            values = {k: v for k, v in spec[key].items() if k != "defaultValue"}
            if key == "doubleValueSpec":
                values = {"minValue": float(values.get("minValue", 0.0)), "maxValue": float(values.get("maxValue", 0.0))}
            elif key == "integerValueSpec":
                values = {"minValue": int(values.get("minValue", 0)), "maxValue": int(values.get("maxValue", 0))}
            elif key == "discreteValueSpec":
                values = {"values": [round(float(v), 9) for v in values.get("values", [])]}
            scale = spec.get("scaleType", "UNIT_LINEAR_SCALE")
            return (key, repr(sorted(values.items())), "UNIT_LINEAR_SCALE" if scale == "SCALE_TYPE_UNSPECIFIED" else scale)
    return ("", "", "")


def _from_bo(name: str, d: BaseDistribution, v: Value) -> Any:
    """bo's value of a parameter as Optuna's trial returns it."""
    if isinstance(d, CategoricalDistribution):
        by_label = dict(zip(_choice_labels(d.choices), d.choices))
        if str(v) not in by_label:
            raise ValueError(f"parameter {name!r}: bo's value {v!r} is not one of {list(by_label)}")
        return by_label[str(v)]
    if isinstance(d, IntDistribution):
        return int(round(float(v)))
    return float(v)


def _to_bo(d: BaseDistribution, value: Any) -> Value:
    """An Optuna parameter value as the bo study's parameter takes it."""
    if isinstance(d, CategoricalDistribution):
        labels = _choice_labels(d.choices)
        return labels[d.choices.index(value)]
    if isinstance(d, IntDistribution) and d.step == 1:
        return int(value)
    return float(value)


def space_from_optuna(distributions: Dict[str, BaseDistribution]) -> Tuple[SearchSpace, Back]:
    """bo's (flat) search space for Optuna distributions, and for each parameter how a bo value
    maps back to what Optuna's trial returns."""
    space = SearchSpace()
    back: Back = {}
    for name, d in distributions.items():
        spec = parameter_spec(name, d)
        if "doubleValueSpec" in spec:
            space.float(name, d.low, d.high, log=bool(getattr(d, "log", False)))  # type: ignore[attr-defined]
        elif "integerValueSpec" in spec:
            space.integer(name, d.low, d.high, log=bool(getattr(d, "log", False)))  # type: ignore[attr-defined]
        elif "discreteValueSpec" in spec:
            space.discrete(name, spec["discreteValueSpec"]["values"])
        else:
            space.categorical(name, spec["categoricalValueSpec"]["values"])
        back[name] = _back(name, d)
    return space, back


def _back(name: str, d: BaseDistribution) -> Callable[[Value], Any]:
    return lambda v: _from_bo(name, d, v)


def _default_study_name(study: OptunaStudy) -> str:
    """The bo study's name for an Optuna study: its own, or for an unnamed one (Optuna's
    ``no-name-<uuid>``) the script's name, the time and a piece of the uuid."""
    name = study.study_name
    if not name.startswith("no-name-"):
        return name
    script = os.path.splitext(os.path.basename(sys.argv[0] or ""))[0] or "optuna"
    return f"{script}-{time.strftime('%Y%m%d-%H%M%S')}-{name[len('no-name-'):][:8]}"


@dataclass
class _Running:
    """An Optuna trial running on a bo trial: its parameters asked so far, in order, and its
    reports queued so far."""

    bo: Trial
    held: int
    queued: float = -math.inf
    asked: List[str] = field(default_factory=list)


class BoSampler(BaseSampler):
    """An Optuna sampler backed by a bo study (see the module docs). ``url`` defaults to the
    ``BO_URL`` environment variable, else ``http://127.0.0.1:8080``; ``api_key`` to
    ``BO_API_KEY``. The server is checked when the sampler is made: a wrong ``url`` fails here,
    before any trial runs."""

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        project: str = "demo",
        location: str = "local",
        api_key: Optional[str] = None,
        study_name: Optional[str] = None,
        search_space: Union[None, Dict[str, BaseDistribution], SearchSpace] = None,
        algorithm: Optional[str] = None,
        algorithm_config: Optional[Dict[str, Any]] = None,
        constraints_func: Optional[Callable[[FrozenTrial], Sequence[float]]] = None,
        trial_lease: Optional[float] = None,
        retry: RetryPolicy = RetryPolicy(),
        seed: Optional[int] = None,
        n_trials: Optional[int] = None,
    ) -> None:
        url = url or os.environ.get("BO_URL") or "http://127.0.0.1:8080"
        api_key = api_key or os.environ.get("BO_API_KEY") or None
        self._client = Client(url, project=project, location=location, api_key=api_key, retry=retry)
        self._client.ping()
        self._study_name = study_name
        if isinstance(search_space, dict):
            self._declared: Optional[SearchSpace] = space_from_optuna(search_space)[0]
        else:
            self._declared = search_space
        self._algorithm = algorithm
        self._algorithm_config = dict(algorithm_config or {})
        if n_trials is not None:
            # The trials the script will run (Optuna's samplers are never told): the study's
            # first model comes after at most a quarter of them, and the study runs on past them.
            count = as_number(n_trials, "n_trials")
            if not (math.isfinite(count) and count == int(count) and 1 <= count <= 2**31 - 1):
                raise ValueError(f"n_trials must be a whole number of trials from 1 to 2147483647, got {n_trials!r}")
            self._algorithm_config.setdefault("expectedNumTrials", int(count))
        if seed is not None:
            # Optuna's seed: the bo study's too, and its suggestions depend on it and the data
            # alone (not on timing).
            self._algorithm_config.setdefault("seed", int(seed))
            self._algorithm_config.setdefault("reproducible", True)
        self._constraints_func = constraints_func
        self._trial_lease = trial_lease
        self._random = RandomSampler(seed=seed)
        self._lock = threading.Lock()
        self._study: Optional[Study] = None
        self._specs: Dict[str, Json] = {}
        self._rule: Optional[MedianRule] = None
        self._reports = Reports(self._client.transport)
        #: bo's trial for each running Optuna trial, by its number.
        self._running: Dict[int, _Running] = {}
        self._warned: set[str] = set()

    # -- bo's side ---------------------------------------------------------------------------

    @property
    def study(self) -> Optional[Study]:
        """The bo study, once made (on the first trial)."""
        return self._study

    def bo_trial(self, number: int) -> Optional[Trial]:
        """bo's trial for the running Optuna trial ``number``."""
        with self._lock:
            running = self._running.get(number)
            return running.bo if running else None

    def _metrics(self, study: OptunaStudy) -> List[Metric]:
        directions = study.directions
        names = study.metric_names
        if names is None:
            names = ["objective"] if len(directions) == 1 else [f"objective_{k}" for k in range(len(directions))]
        return [Metric(n, "MAXIMIZE" if d == StudyDirection.MAXIMIZE else "MINIMIZE") for n, d in zip(names, directions)]

    def _objective_ids(self, study: OptunaStudy) -> List[str]:
        return [m.id for m in self._metrics(study)]

    def _index(self, spec: Json) -> None:
        """Records the parameters of the bo study's ``spec`` (caller holds the lock)."""

        def walk(p: Json) -> None:
            self._specs[p["parameterId"]] = {k: v for k, v in p.items() if k != "conditionalParameterSpecs"}
            for c in p.get("conditionalParameterSpecs", []):
                walk(c["parameterSpec"])

        for p in spec.get("parameters", []):
            walk(p)

    def _ensure_study(self, study: OptunaStudy, constraints: int) -> Study:
        with self._lock:
            if self._study is not None:
                return self._study
            metrics = self._metrics(study)
            metrics += [Metric(f"constraint_{k}", "MINIMIZE", safety_threshold=0.0) for k in range(constraints)]
            pruner = study.pruner
            stopping: Optional[Stopping] = pruner.stopping if isinstance(pruner, BoPruner) else None
            self._study = self._client.create_study(
                self._study_name or _default_study_name(study),
                self._declared,
                metrics,
                open_space=self._declared is None,
                algorithm=self._algorithm,
                algorithm_config=self._algorithm_config or None,
                stopping=stopping,
                trial_lease=self._trial_lease,
            )
            self._index(self._study.spec)
            self._rule = MedianRule.of(self._study.spec)
            return self._study

    def _running_for(self, study: OptunaStudy, trial: FrozenTrial, bo_study: Study) -> Optional[_Running]:
        """The bo trial of the Optuna trial, suggested on its first parameter; ``None`` when the
        bo study suggests nothing more (then Optuna's study is stopped, as its grid sampler
        does)."""
        with self._lock:
            running = self._running.get(trial.number)
        if running is not None:
            return running
        client_id = f"optuna-{study.study_name}-{trial.number}"[:128]
        trials = bo_study.suggest(1, client_id, labels={TRIAL_NUMBER_LABEL: str(trial.number)})
        if not trials:
            if "finished" not in self._warned:
                self._warned.add("finished")
                logger.warning(
                    "the bo study %s suggests nothing more (%s): this trial is sampled at random and the Optuna study stops",
                    bo_study.name,
                    bo_study.refresh().inactive_reason or "finished",
                )
            study.stop()
            return None
        running = _Running(trials[0], len(trials[0].measurements))
        with self._lock:
            self._running[trial.number] = running
        return running

    def _check_known(self, name: str, spec: Json, d: BaseDistribution) -> None:
        """Refuses a parameter asked with another domain than the bo study gave it."""
        with self._lock:
            known = self._specs.get(name)
        if known is None and self._study is not None:
            self._study.refresh()
            with self._lock:
                self._index(self._study.spec)
                known = self._specs.get(name)
        if known is not None and _domain(known) != _domain(spec):
            raise ValueError(
                f"parameter {name!r}: the objective asks {d}, but the bo study {self._study.name if self._study else ''} has it as "
                f"{ {k: v for k, v in known.items() if k != 'parameterId'} }: a parameter's distribution is fixed at first use"
            )

    @staticmethod
    def _parent(trial: FrozenTrial, bo: Trial, names: Sequence[str]) -> Optional[str]:
        """The parameter a new one was asked under: the last of ``names`` (asked before it)
        that branches and that the bo trial holds."""
        for name in reversed(names):
            d = trial.distributions.get(name)
            if d is not None and name in bo.parameters and _branches(d):
                return name
        return None

    # -- Optuna's side -------------------------------------------------------------------------

    def reseed_rng(self) -> None:
        self._random.reseed_rng()

    def infer_relative_search_space(self, study: OptunaStudy, trial: FrozenTrial) -> Dict[str, BaseDistribution]:
        # Every parameter is asked one at a time (sample_independent): a define-by-run space is
        # known only as the objective asks.
        return {}

    def sample_relative(self, study: OptunaStudy, trial: FrozenTrial, search_space: Dict[str, BaseDistribution]) -> Dict[str, Any]:
        return {}

    def before_trial(self, study: OptunaStudy, trial: FrozenTrial) -> None:
        self._random.before_trial(study, trial)

    def sample_independent(self, study: OptunaStudy, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution) -> Any:
        def random() -> Any:
            return self._random.sample_independent(study, trial, param_name, param_distribution)

        if "fixed_params" in trial.system_attrs or (self._constraints_func is not None and self._study is None):
            # An enqueued trial (its given parameters used as they are), or the first trial under
            # constraints (their number is seen when it ends): sampled at random, then added.
            return random()
        spec = parameter_spec(param_name, param_distribution)
        bo_study = self._ensure_study(study, 0)
        running = self._running_for(study, trial, bo_study)
        if running is None:
            return random()
        self._check_known(param_name, spec, param_distribution)
        bo = running.bo
        if param_name not in bo.parameters:
            if not bo_study.open_space:
                if param_name not in self._warned:
                    self._warned.add(param_name)
                    logger.warning(
                        "parameter %r is not in the bo study's declared search space: it is sampled at random, not by bo; "
                        "declare it in BoSampler(search_space=...), or leave search_space out to let the space grow",
                        param_name,
                    )
                return random()
            parent = self._parent(trial, bo, list(trial.params))
            try:
                bo.add_parameters([AskedParameter(spec, parent)])
            except ApiError as e:
                if e.status == 400:
                    raise ValueError(f"parameter {param_name!r}: {e.message}") from None
                raise
            with self._lock:
                self._specs[param_name] = spec
        running.asked.append(param_name)
        return _from_bo(param_name, param_distribution, bo.parameters[param_name])

    def after_trial(self, study: OptunaStudy, trial: FrozenTrial, state: TrialState, values: Optional[Sequence[float]]) -> None:
        constraints: List[float] = []
        if self._constraints_func is not None and state in (TrialState.COMPLETE, TrialState.PRUNED):
            constraints = [float(c) for c in self._constraints_func(trial)]
            study._storage.set_trial_system_attr(trial._trial_id, "constraints", tuple(constraints))
        with self._lock:
            running = self._running.pop(trial.number, None)
        metrics = self._result(study, state, values, constraints)
        if running is None:
            self._add_unsampled(study, trial, state, metrics, len(constraints))
            return
        bo = running.bo
        if trial.intermediate_values:
            self._queue(study, running, trial)
            self._reports.flush(bo._path)
        if state == TrialState.COMPLETE and metrics is not None:
            bo.complete(metrics)
        elif state == TrialState.PRUNED and (bo.measurements or trial.intermediate_values):
            # Pruned where bo's rule said stop, or between its answers: stopped, then completed
            # with its last value (Optuna's pruned value), a partial result. A trial the rule
            # advised stopping that trained on to the end is a full result.
            bo.stop()
            bo.complete()
        else:
            reason = trial.system_attrs.get("fail_reason") or f"the Optuna trial ended {state.name}"
            bo.complete(infeasible=str(reason))

    def _result(self, study: OptunaStudy, state: TrialState, values: Optional[Sequence[float]], constraints: List[float]) -> Optional[Dict[str, float]]:
        if state != TrialState.COMPLETE or values is None:
            return None
        ids = self._objective_ids(study)
        out = {metric: as_metric(v, metric) for metric, v in zip(ids, values)}
        out.update({f"constraint_{k}": as_metric(c, f"constraint_{k}") for k, c in enumerate(constraints)})
        return out

    def _add_unsampled(
        self, study: OptunaStudy, trial: FrozenTrial, state: TrialState, metrics: Optional[Dict[str, float]], constraints: int
    ) -> None:
        """A trial bo did not choose (an enqueued one, the first under constraints, or one
        sampled at random after the bo study finished): added to the study with its result —
        an open study grows with its parameters first; a declared one takes it only when its
        parameters fit."""
        names = [n for n in trial.params if not trial.distributions[n].single()]
        if not names or state not in (TrialState.COMPLETE, TrialState.FAIL):
            return
        if self._study is None and state != TrialState.COMPLETE:
            return  # the study is made from the first trial that completes
        bo_study = self._ensure_study(study, constraints)
        if bo_study.state == "COMPLETED":
            return
        parameters = {n: _to_bo(trial.distributions[n], trial.params[n]) for n in names}
        labels = {TRIAL_NUMBER_LABEL: str(trial.number)}
        try:
            if bo_study.open_space:
                asked = []
                for k, n in enumerate(names):
                    spec = parameter_spec(n, trial.distributions[n])
                    parent = next((p for p in reversed(names[:k]) if _branches(trial.distributions[p])), None)
                    asked.append(AskedParameter(spec, parent, parameters[n]))
                bo_study.add_parameters(asked)
                with self._lock:
                    self._index(bo_study.spec)
            if state == TrialState.COMPLETE and metrics is not None:
                bo_study.add_trial(parameters, metrics, labels=labels)
            else:
                reason = str(trial.system_attrs.get("fail_reason") or "the Optuna trial failed")
                bo_study.add_trial(parameters, infeasible=reason, labels=labels)
        except ApiError as e:
            if e.status != 400:
                raise
            # Another branch or another space than the declared one: nothing bo can use.
            logger.debug("trial %d was not added to the bo study: %s", trial.number, e.message)

    # -- pruning ---------------------------------------------------------------------------------

    def _queue(self, study: OptunaStudy, running: _Running, trial: FrozenTrial) -> None:
        """Queues the trial's reports not queued yet, in order of step."""
        objective = self._objective_ids(study)[0]
        for step in sorted(s for s in trial.intermediate_values if s > running.queued):
            value = float(trial.intermediate_values[step])
            running.queued = step
            if math.isfinite(value):
                self._reports.add(running.bo._path, running.held, step, {objective: value})

    def _should_prune(self, study: OptunaStudy, trial: FrozenTrial) -> bool:
        """BoPruner's answer: the reports queued, the question answered from the server's last
        answer about the trial (see ``_reports.py``)."""
        with self._lock:
            running = self._running.get(trial.number)
        step = trial.last_step
        if running is None or step is None:
            return False  # a trial bo did not choose (enqueued, random) is not pruned
        self._queue(study, running, trial)
        maximize = study.direction == StudyDirection.MAXIMIZE
        values = [v for s, v in trial.intermediate_values.items() if s <= step and not math.isnan(v)]
        if not values:
            return False
        best = max(values) if maximize else min(values)
        steps = (float(s) for s in trial.intermediate_values)
        return self._reports.decide(running.bo._path, float(step), best, maximize, self._rule, steps)


class BoPruner(optuna.pruners.BasePruner):
    """Prunes with the bo study's early-stopping rule (median by default), at the cost of a local
    pruner: ``trial.report(value, step)`` is queued and sent in the background, several steps in
    one request, each time asking the rule; ``trial.should_prune()`` answers at once from the
    server's last answer about the trial — its decision at that step and, under the median rule,
    its thresholds at the next steps against the trial's best value so far. So a decision may
    come one answer late where the other completed trials changed in between; never a round
    trip per step.

    By default it is Optuna's ``MedianPruner`` on the server: a trial's best value so far
    against the median of the fully trained trials' values at the same step (the study's
    ``medianAutomatedStoppingSpec`` with ``medianOf: VALUE_AT_POSITION``); ``n_startup_trials``
    (5, as Optuna's), ``n_warmup_steps`` and ``interval_steps`` mean what they mean there
    (``minCompletedTrials``, ``minStepCount``, ``intervalSteps``). ``stopping=`` chooses another
    rule: ``bo.MedianStopping()`` is Vizier's median rule, the median of the completed trials'
    *running averages* up to the step — on a climbing learning curve a running average trails
    the value at the step, so it stops fewer trials, later (about half as many on Optuna's
    ``pruning.py``); ``bo.DecayCurveStopping()`` and the others are answered with the server's
    decision at each answer. Needs the study's sampler to be a :class:`BoSampler`, which sets
    the rule when it makes the study."""

    def __init__(
        self,
        stopping: Optional[Stopping] = None,
        *,
        n_startup_trials: Optional[int] = None,
        n_warmup_steps: Optional[int] = None,
        interval_steps: Optional[int] = None,
    ) -> None:
        optuna_args = (n_startup_trials, n_warmup_steps, interval_steps)
        if stopping is not None and any(a is not None for a in optuna_args):
            raise ValueError("give stopping= or n_startup_trials/n_warmup_steps/interval_steps (which set the median rule), not both")
        if n_startup_trials is not None and n_startup_trials < 1:
            raise ValueError(f"n_startup_trials must be at least 1, got {n_startup_trials}")
        if n_warmup_steps is not None and n_warmup_steps < 0:
            raise ValueError(f"n_warmup_steps must be at least 0, got {n_warmup_steps}")
        if interval_steps is not None and interval_steps < 1:
            raise ValueError(f"interval_steps must be at least 1, got {interval_steps}")
        self.stopping: Stopping = stopping or MedianStopping(
            min_completed_trials=5 if n_startup_trials is None else n_startup_trials,
            min_step_count=float(n_warmup_steps) if n_warmup_steps else None,
            interval_steps=float(interval_steps) if interval_steps and interval_steps > 1 else None,
            median_of="VALUE_AT_POSITION",
        )

    def prune(self, study: OptunaStudy, trial: FrozenTrial) -> bool:
        sampler = study.sampler
        if not isinstance(sampler, BoSampler):
            raise ValueError(f"BoPruner needs optuna.create_study(sampler=BoSampler(...)); the study's sampler is {type(sampler).__name__}")
        return sampler._should_prune(study, trial)
