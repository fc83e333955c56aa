"""Optuna users switch to bo in one line: :class:`BoSampler` is an Optuna sampler whose
parameters come from a bo study, and :class:`BoPruner` prunes with the study's early-stopping
rule.

    study = optuna.create_study(sampler=BoSampler(url="http://127.0.0.1:8080"), pruner=BoPruner())
    study.optimize(objective, n_trials=50, n_jobs=4)      # the objective, unchanged

How Optuna's ideas map onto bo's:

- **The search space** is fixed when the bo study is made: from ``search_space=`` (name →
  Optuna distribution) when given, else from the parameters the first trial asked for (that
  trial is sampled at random, then added to the study with its result). A parameter outside the
  space is sampled at random, as Optuna's own relative samplers do, and a warning says so once —
  declare it in ``search_space=`` to have bo choose it. A parameter whose distribution differs from
  the one in the space is an error. In a trial that does not ask for some parameters (a
  conditional objective), bo's values for them go unused.
- **Distributions**: ``FloatDistribution`` → DOUBLE (log scale kept), or DISCRETE with a ``step``;
  ``IntDistribution`` → INTEGER (log kept), or DISCRETE with a ``step`` above 1;
  ``CategoricalDistribution`` → CATEGORICAL of the choices' text (choices of any type, mapped back).
- **Objectives**: ``directions`` become goals; metric ids are ``study.metric_names`` when set,
  else ``objective`` (one) or ``objective_0``, ``objective_1``, … .
- **constraints_func** (``BoSampler(constraints_func=…)``, Optuna's convention: each value ≤ 0 is
  feasible) becomes safety metrics ``constraint_0``, … with threshold 0.
- **Pruning**: ``trial.report(value, step)`` becomes a measurement and ``trial.should_prune()``
  asks the study's stopping rule (``BoPruner(stopping=…)``, median by default). A pruned trial is
  completed from its measurements, a failed one INFEASIBLE with Optuna's reason.
- **n_jobs=k** runs k bo clients (one client id per Optuna trial); ``enqueue_trial`` parameters are
  used as given and the trial is added to the bo study with its result.
- **The bo study** is made on the first trial, named after the Optuna study (``study_name=`` to
  choose), in ``project`` (``demo``); an existing one of the same name and spec is taken up.

Needs Optuna (``pip install optuna``); the rest of ``bo_client`` does not."""

from __future__ import annotations

import logging
import math
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.samplers import BaseSampler, RandomSampler
from optuna.study import Study as OptunaStudy
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from ._http import RetryPolicy
from ._numbers import as_metric
from .client import Client
from .study import Study, Trial
from .space import SearchSpace, Value
from .spec import MedianStopping, Metric, Stopping

__all__ = ["BoPruner", "BoSampler", "space_from_optuna"]

logger = logging.getLogger("bo_client")

#: The most values a stepped distribution becomes a DISCRETE parameter with.
MAX_STEPPED_VALUES = 1000

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


def space_from_optuna(distributions: Dict[str, BaseDistribution]) -> Tuple[SearchSpace, Back]:
    """bo's search space for Optuna distributions, and for each parameter how a bo value maps
    back to what Optuna's trial returns."""
    space = SearchSpace()
    back: Back = {}
    for name, d in distributions.items():
        if isinstance(d, FloatDistribution):
            if d.step is None:
                space.float(name, d.low, d.high, log=d.log)
                back[name] = float
            else:
                space.discrete(name, _stepped(name, d.low, d.high, d.step))
                back[name] = float
        elif isinstance(d, IntDistribution):
            if d.step == 1:
                space.integer(name, d.low, d.high, log=d.log)
            else:
                space.discrete(name, _stepped(name, d.low, d.high, d.step))
            back[name] = lambda v: int(round(float(v)))
        elif isinstance(d, CategoricalDistribution):
            labels = _choice_labels(d.choices)
            space.categorical(name, labels)
            back[name] = _label_to_choice(dict(zip(labels, d.choices)))
        else:
            raise ValueError(f"parameter {name!r}: {type(d).__name__} is not a distribution bo maps (Float, Int, Categorical)")
    return space, back


def _label_to_choice(by_label: Dict[str, Any]) -> Callable[[Value], Any]:
    return lambda v: by_label[str(v)]


def _to_bo(distribution: BaseDistribution, value: Any) -> Value:
    """An Optuna parameter value as the bo study's parameter takes it."""
    if isinstance(distribution, CategoricalDistribution):
        labels = _choice_labels(distribution.choices)
        return labels[distribution.choices.index(value)]
    if isinstance(distribution, IntDistribution) and distribution.step == 1:
        return int(value)
    return float(value)


class BoSampler(BaseSampler):
    """An Optuna sampler backed by a bo study (see the module docs)."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:8080",
        *,
        project: str = "demo",
        location: str = "local",
        api_key: Optional[str] = None,
        study_name: Optional[str] = None,
        search_space: Optional[Dict[str, BaseDistribution]] = None,
        algorithm: Optional[str] = None,
        algorithm_config: Optional[Dict[str, Any]] = None,
        constraints_func: Optional[Callable[[FrozenTrial], Sequence[float]]] = None,
        retry: RetryPolicy = RetryPolicy(),
        seed: Optional[int] = None,
    ) -> None:
        self._client = Client(url, project=project, location=location, api_key=api_key, retry=retry)
        self._study_name = study_name
        self._declared = dict(search_space) if search_space is not None else None
        self._algorithm = algorithm
        self._algorithm_config = algorithm_config
        self._constraints_func = constraints_func
        self._random = RandomSampler(seed=seed)
        self._lock = threading.Lock()
        self._study: Optional[Study] = None
        self._distributions: Dict[str, BaseDistribution] = {}
        self._back: Back = {}
        #: bo's trial for each Optuna trial (by its number) while it runs.
        self._trials: Dict[int, Trial] = {}
        self._warned: set[str] = set()

    # -- bo's side ---------------------------------------------------------------------------

    @property
    def study(self) -> Optional[Study]:
        """The bo study, once made (on the first trial)."""
        return self._study

    def bo_trial(self, number: int) -> Optional[Trial]:
        """bo's trial for the running Optuna trial ``number``."""
        with self._lock:
            return self._trials.get(number)

    def _metrics(self, study: OptunaStudy) -> List[Metric]:
        directions = study.directions
        names = study.metric_names
        if names is None:
            names = ["objective"] if len(directions) == 1 else [f"objective_{k}" for k in range(len(directions))]
        metrics = [Metric(n, "MAXIMIZE" if d == StudyDirection.MAXIMIZE else "MINIMIZE") for n, d in zip(names, directions)]
        return metrics

    def _objective_ids(self, study: OptunaStudy) -> List[str]:
        return [m.id for m in self._metrics(study)]

    def _ensure_study(self, study: OptunaStudy, distributions: Dict[str, BaseDistribution], constraints: int) -> Study:
        with self._lock:
            if self._study is not None:
                return self._study
            space, back = space_from_optuna(distributions)
            metrics = self._metrics(study)
            metrics += [Metric(f"constraint_{k}", "MINIMIZE", safety_threshold=0.0) for k in range(constraints)]
            pruner = study.pruner
            stopping: Optional[Stopping] = pruner.stopping if isinstance(pruner, BoPruner) else None
            self._study = self._client.create_study(
                self._study_name or study.study_name,
                space,
                metrics,
                algorithm=self._algorithm,
                algorithm_config=self._algorithm_config,
                stopping=stopping,
            )
            self._distributions = dict(distributions)
            self._back = back
            return self._study

    # -- Optuna's side -------------------------------------------------------------------------

    def reseed_rng(self) -> None:
        self._random.reseed_rng()

    def infer_relative_search_space(self, study: OptunaStudy, trial: FrozenTrial) -> Dict[str, BaseDistribution]:
        if self._declared is not None:
            return dict(self._declared)
        with self._lock:
            return dict(self._distributions)

    def sample_relative(self, study: OptunaStudy, trial: FrozenTrial, search_space: Dict[str, BaseDistribution]) -> Dict[str, Any]:
        if not search_space or "fixed_params" in trial.system_attrs:
            # The first trial without a declared space (sampled at random, then added), or an
            # enqueued one (its parameters are given).
            return {}
        if self._constraints_func is not None and self._study is None:
            # How many constraints there are is seen on the first finished trial: it is sampled
            # at random, and the study made with its result.
            return {}
        bo_study = self._ensure_study(study, search_space, 0)
        trials = bo_study.suggest(1, f"optuna-{study.study_name}-{trial.number}")
        if not trials:
            raise optuna.exceptions.OptunaError(f"the bo study {bo_study.name} suggests nothing more (finished or stopped)")
        bo_trial = trials[0]
        with self._lock:
            self._trials[trial.number] = bo_trial
        return {name: self._back[name](value) for name, value in bo_trial.parameters.items() if name in self._back}

    def sample_independent(self, study: OptunaStudy, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution) -> Any:
        with self._lock:
            known = self._distributions.get(param_name) or (self._declared or {}).get(param_name)
            first = self._study is None and self._declared is None
        if known is not None and known != param_distribution:
            raise ValueError(
                f"parameter {param_name!r}: the objective asks {param_distribution}, but the bo study's space has {known}; "
                "a parameter's distribution cannot change within a study"
            )
        if not first and param_name not in self._warned:
            self._warned.add(param_name)
            logger.warning(
                "parameter %r is not in the bo study's search space (fixed from %s): it is sampled at random, not by bo; "
                "declare it in BoSampler(search_space=...) to have bo choose it",
                param_name,
                "search_space=" if self._declared is not None else "the first trial",
            )
        return self._random.sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study: OptunaStudy, trial: FrozenTrial) -> None:
        self._random.before_trial(study, trial)

    def after_trial(self, study: OptunaStudy, trial: FrozenTrial, state: TrialState, values: Optional[Sequence[float]]) -> None:
        constraints: List[float] = []
        if self._constraints_func is not None and state == TrialState.COMPLETE:
            constraints = [float(c) for c in self._constraints_func(trial)]
            study._storage.set_trial_system_attr(trial._trial_id, "constraints", constraints)
        with self._lock:
            bo_trial = self._trials.pop(trial.number, None)
            space = dict(self._distributions)
        changed = [n for n, d in trial.distributions.items() if n in space and d != space[n]]
        if bo_trial is not None and changed:
            # Optuna gave the objective bo's value for a parameter it asked with another range.
            why = (
                f"parameter {changed[0]!r}: the objective asked {trial.distributions[changed[0]]}, but the bo study's space has "
                f"{space[changed[0]]}; a parameter's distribution cannot change within a study"
            )
            bo_trial.complete(infeasible=why)
            raise ValueError(why)
        metrics = self._result(study, state, values, constraints)
        if bo_trial is None:
            self._add_unsampled(study, trial, state, metrics, len(constraints))
            return
        if state == TrialState.COMPLETE and metrics is not None:
            bo_trial.complete(metrics)
        elif state == TrialState.PRUNED and bo_trial.refresh().measurements:
            bo_trial.complete()  # its measurements decide, as Optuna's pruned value is the last reported
        else:
            reason = trial.system_attrs.get("fail_reason") or f"the Optuna trial ended {state.name}"
            bo_trial.complete(infeasible=str(reason))

    def _result(
        self, study: OptunaStudy, state: TrialState, values: Optional[Sequence[float]], constraints: List[float]
    ) -> Optional[Dict[str, float]]:
        if state != TrialState.COMPLETE or values is None:
            return None
        ids = self._objective_ids(study)
        out = {metric: as_metric(v, metric) for metric, v in zip(ids, values)}
        out.update({f"constraint_{k}": as_metric(c, f"constraint_{k}") for k, c in enumerate(constraints)})
        return out

    def _add_unsampled(
        self, study: OptunaStudy, trial: FrozenTrial, state: TrialState, metrics: Optional[Dict[str, float]], constraints: int
    ) -> None:
        """A trial bo did not choose (the first, or an enqueued one): added to the study with its
        result, when its parameters fit the study's space."""
        if not trial.distributions:
            return
        if self._study is None and state != TrialState.COMPLETE:
            return  # the study is made from the first trial that completes
        bo_study = self._ensure_study(study, self._declared or dict(trial.distributions), constraints)
        with self._lock:
            space = dict(self._distributions)
        if set(space) - set(trial.params) or any(trial.distributions[n] != space[n] for n in space if n in trial.distributions):
            return  # another branch or another space: nothing bo can use
        parameters = {name: _to_bo(space[name], trial.params[name]) for name in space}
        if state == TrialState.COMPLETE and metrics is not None:
            bo_study.add_trial(parameters, metrics)
        elif state == TrialState.FAIL:
            bo_study.add_trial(parameters, infeasible=str(trial.system_attrs.get("fail_reason") or "the Optuna trial failed"))


class BoPruner(optuna.pruners.BasePruner):
    """Prunes with the bo study's early-stopping rule: each ``trial.report(value, step)`` is a
    measurement of the trial's bo twin, and ``trial.should_prune()`` asks the study's rule
    (``stopping``, median by default: set when :class:`BoSampler` makes the study). Needs the
    study's sampler to be a :class:`BoSampler`."""

    def __init__(self, stopping: Optional[Stopping] = None) -> None:
        self.stopping: Stopping = stopping or MedianStopping()

    def prune(self, study: OptunaStudy, trial: FrozenTrial) -> bool:
        sampler = study.sampler
        if not isinstance(sampler, BoSampler):
            raise ValueError(f"BoPruner needs optuna.create_study(sampler=BoSampler(...)); the study's sampler is {type(sampler).__name__}")
        bo_trial = sampler.bo_trial(trial.number)
        step = trial.last_step
        if bo_trial is None or step is None:
            return False  # a trial bo did not choose (the first, an enqueued one) is not pruned
        # A step reported since the last measurement is sent once (``should_prune`` may be asked
        # several times a step); the bo trial holds what it has (one thread runs one trial).
        last = bo_trial.measurements[-1].step if bo_trial.measurements else None
        if last is None or last < step:
            objective = sampler._objective_ids(study)[0]
            bo_trial.add_measurement({objective: trial.intermediate_values[step]}, step=step)
        return bo_trial.should_stop()
