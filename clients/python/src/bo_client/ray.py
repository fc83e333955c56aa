"""Ray Tune on bo: a ``Searcher`` whose suggestions come from a bo study, and a ``Stopper`` that
asks the study's early-stopping rule.

    from ray import tune
    from bo_client.ray import BoSearch

    search = BoSearch(url="http://127.0.0.1:8080", project="demo", study="tune-mnist")
    tuner = tune.Tuner(train, param_space={"lr": tune.loguniform(1e-5, 1e-1), "layers": tune.randint(1, 9)},
                       tune_config=tune.TuneConfig(search_alg=search, metric="accuracy", mode="max", num_samples=40),
                       run_config=tune.RunConfig(stop=search.stopper()))

How Tune maps onto bo:

- Tune's search-space dict (``uniform``, ``loguniform``, ``quniform``, ``randint``, ``lograndint``,
  ``choice``; nested dicts become ``a/b`` parameter ids) becomes the study's parameters; or pass
  ``space=SearchSpace`` for a conditional space, whose inactive parameters are left out of the
  config. ``randint(1, 9)`` is bo's ``integer(1, 8)`` (Tune's upper end is exclusive). Samplers bo
  has no counterpart for (``randn``, ``sample_from``, ``grid_search``) are refused by name.
- ``TuneConfig(num_samples=…)``, which Tune hands the searcher with a ``param_space``, is the
  study's ``expectedNumTrials``: its first model comes after at most a quarter of the samples
  (never fewer than 10 quasi-random trials first), and the study does not stop there.
- ``suggest(trial_id)`` is one bo suggestion for ``clientId = "tune-" + trial_id``: a Tune trial
  that asks again (after a restore) gets its own bo trial back, and the study's trial lease hands
  the trial of a worker that never returns to the next.
- ``on_trial_result`` adds a measurement (step: ``training_iteration``); ``on_trial_complete``
  completes the trial with its last result, or marks it INFEASIBLE when it errored.
- A trial that Tune ends before it has trained in full — Tune's own scheduler (``ASHAScheduler``,
  ``HyperBandScheduler``, a median rule), a stopper, the end of the run — goes to the study as
  stopped early (``:stop``, then completed): bo learns it as a partial result, from its curve,
  not as the configuration's final value, and "best" leaves it out while a trial trained in full
  is there. "In full" is ``max_t`` (pass your scheduler's) or, without it, the furthest
  ``training_iteration`` any trial of the search has reached. Tune ends a trial at its scheduler's
  ``max_t`` too; a trainable that returns of itself has trained in full.
- :meth:`BoSearch.stopper` stops a trial when the study's early-stopping rule says so (the study
  needs one: ``median_stopping=True``, the default, or ``stopping=``).
- ``stopping=SuccessiveHalvingStopping(..., resume=True)`` is ASHA with checkpoints: the stopper
  pauses every trial at each rung, and a paused trial the study promotes comes back as a new Tune
  trial. Under it the config carries ``bo_trial_id`` (the bo trial's id: save the trainable's
  checkpoint under it, where every worker can read it, *before* each ``tune.report``, since the
  stopper may end the trial at any report) and, for a resumed trial, ``bo_resumed_from`` (the id
  whose checkpoint to load) and ``bo_resumed_at`` (the step it was saved at). A resumed trial's
  ``training_iteration`` starts again at 1; its measurements go on from ``bo_resumed_at``."""

from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple, Union

from ray.tune.search import Searcher
from ray.tune.search.sample import Categorical, Domain, Float, Integer, LogUniform, Quantized, Uniform
from ray.tune.stopper import Stopper
from ray.tune.utils.util import flatten_dict, unflatten_dict

from ._numbers import as_metric, as_number
from .client import Client
from .study import Study, Trial
from .space import SearchSpace, Value

__all__ = ["BoSearch", "BoStopper", "space_from_tune"]


def space_from_tune(config: Mapping[str, Any]) -> Tuple[SearchSpace, Dict[str, Dict[str, Any]]]:
    """bo's search space for Tune's ``param_space``, and for each categorical the map from bo's
    string values back to Tune's values (``choice([True, False])`` is ``"True"``/``"False"`` in
    bo). Constants are left to Tune; samplers with no counterpart raise ``ValueError``."""
    space = SearchSpace()
    back: Dict[str, Dict[str, Any]] = {}
    for name, domain in flatten_dict(dict(config), prevent_delimiter=True, delimiter="/").items():
        if name == "grid_search" or name.endswith("/grid_search"):
            raise ValueError(f"{name[: -len('grid_search')].rstrip('/')}: grid_search is Tune's own; use tune.choice (bo searches it) or bo's GRID_SEARCH")
        if not isinstance(domain, Domain):
            continue
        sampler = domain.get_sampler()
        q: Optional[float] = None
        if isinstance(sampler, Quantized):
            q = float(sampler.q)
            sampler = sampler.get_sampler()
        log = isinstance(sampler, LogUniform)
        if isinstance(domain, Categorical):
            values: List[Any] = list(domain.categories)
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                space.discrete(name, [float(v) for v in values])
                back[name] = {repr(float(v)): v for v in values}
            else:
                space.categorical(name, [str(v) for v in values])
                back[name] = {str(v): v for v in values}
        elif not isinstance(sampler, (Uniform, LogUniform)):
            raise ValueError(
                f"{name}: Tune's {type(sampler).__name__.strip('_').lower()} sampler has no bo counterpart (bo takes uniform, log-uniform, quantized and choice)"
            )
        elif isinstance(domain, Integer):
            lower, upper = int(domain.lower), int(domain.upper) - 1  # Tune's upper end is exclusive
            if q is not None and q != 1:
                space.discrete(name, [float(v) for v in range(lower, upper + 1, int(q))])
            else:
                space.integer(name, lower, upper, log=log)
        elif isinstance(domain, Float):
            lower_f, upper_f = float(domain.lower), float(domain.upper)
            if q is not None:
                n = int(math.floor((upper_f - lower_f) / q + 1e-9)) + 1
                if n > 1000:
                    raise ValueError(f"{name}: quniform with {n} values; bo takes at most 1,000 values (use uniform)")
                space.discrete(name, [round(lower_f + i * q, 12) for i in range(n)], log=log)
            else:
                space.float(name, lower_f, upper_f, log=log)
        else:
            raise ValueError(f"{name}: Tune's {type(domain).__name__} domain has no bo counterpart")
    return space, back


class BoSearch(Searcher):  # type: ignore[misc]
    """A Tune ``Searcher`` backed by a bo study named ``study`` (created, or loaded when it exists
    with the same spec)."""

    def __init__(
        self,
        space: Optional[SearchSpace] = None,
        *,
        metric: Optional[str] = None,
        mode: Optional[str] = None,
        url: str = "http://127.0.0.1:8080",
        project: str = "demo",
        location: str = "local",
        api_key: Optional[str] = None,
        study: str = "ray-tune",
        algorithm: Optional[str] = None,
        median_stopping: bool = True,
        stopping: Optional[Any] = None,
        max_t: Optional[int] = None,
        client: Optional[Client] = None,
    ) -> None:
        super().__init__(metric=metric, mode=mode)
        self._space = space
        self._back: Dict[str, Dict[str, Any]] = {}
        self._client = client or Client(url, project=project, location=location, api_key=api_key)
        self._study_name = study
        self._algorithm = algorithm
        self._median_stopping = median_stopping
        self._stopping = stopping
        self._resume = bool(getattr(stopping, "resume", False))
        self._study: Optional[Study] = None
        self._trials: Dict[str, Trial] = {}
        self._max_t: Optional[int] = None
        if max_t is not None:
            n = as_number(max_t, "max_t")
            if not (math.isfinite(n) and n == int(n) and n >= 1):
                raise ValueError(f"max_t must be a whole number of iterations, at least 1 (got {n!r})")
            self._max_t = int(n)
        # The furthest training_iteration any trial reached; each trial's last one Tune handed to
        # on_trial_result (a result Tune ends the trial on goes to on_trial_complete only); the
        # trials bo's own rule stopped (already STOPPING).
        self._furthest = 0
        self._last_result: Dict[str, int] = {}
        self._stopped_by_bo: Set[str] = set()
        # TuneConfig's num_samples, which Tune hands the searcher with a param_space.
        self._expected_trials: Optional[int] = None

    # -- Tune's protocol -------------------------------------------------------------------

    def set_search_properties(self, metric: Optional[str], mode: Optional[str], config: Dict[str, Any], **spec: Any) -> bool:
        if self._study is not None:
            return False
        if metric:
            self._metric = metric
        if mode:
            self._mode = mode
        if self._space is None and config:
            self._space, self._back = space_from_tune(config)
        samples = spec.get("num_samples")
        if isinstance(samples, int) and not isinstance(samples, bool) and 1 <= samples <= 2**31 - 1:
            self._expected_trials = samples
        return True

    def suggest(self, trial_id: str) -> Optional[Union[Dict[str, Any], str]]:
        study = self._ensure_study()
        trials = study.suggest(1, f"tune-{trial_id}")
        if not trials:
            return str(Searcher.FINISHED)
        trial = trials[0]
        self._trials[trial_id] = trial
        config: Dict[str, Any] = unflatten_dict({k: self._to_tune(k, v) for k, v in trial.parameters.items()}, delimiter="/")
        if self._resume:
            config["bo_trial_id"] = trial.id
            if trial.resumed_from is not None:
                config["bo_resumed_from"] = trial.resumed_from
                config["bo_resumed_at"] = int(trial.resumed_at or 0)
        return config

    def on_trial_result(self, trial_id: str, result: Dict[str, Any]) -> None:
        iteration = _iteration(result)
        if iteration is not None:
            self._last_result[trial_id] = iteration
            self._furthest = max(self._furthest, iteration)
        self._record(trial_id, result)

    def on_trial_complete(self, trial_id: str, result: Optional[Dict[str, Any]] = None, error: bool = False) -> None:
        trial = self._trials.pop(trial_id, None)
        last_result = self._last_result.pop(trial_id, None)
        stopped_by_bo = trial_id in self._stopped_by_bo
        self._stopped_by_bo.discard(trial_id)
        if trial is None or trial.done:
            return
        value = None if result is None else _metric_value(result, self._metric)
        if error:
            trial.complete(infeasible="the Tune trial raised an error")
        elif value is not None:
            assert self._metric is not None and result is not None
            step = _iteration(result)
            if step is not None:
                self._furthest = max(self._furthest, step)
                # Tune ended it (this result never reached on_trial_result) short of a full run.
                ended_by_tune = step != last_result
                if ended_by_tune and step < (self._max_t or self._furthest) and not stopped_by_bo:
                    trial.stop()
            trial.complete({self._metric: value}, step=None if step is None else _offset(trial) + step)
        else:
            raw = None if result is None or not self._metric else result.get(self._metric)
            trial.complete(infeasible=f"the trial's last result has no finite {self._metric!r} (it reported {raw!r})")

    def save(self, checkpoint_path: str) -> None:
        state = {"study": self._study.name if self._study else None, "trials": {k: t.id for k, t in self._trials.items()}}
        with open(checkpoint_path, "w") as f:
            json.dump(state, f)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path) as f:
            state = json.load(f)
        if state["study"]:
            self._study = self._client.study(int(state["study"].rsplit("/", 1)[1]))
            self._trials = {k: self._study.trial(v) for k, v in state["trials"].items()}

    # -- bo's side ---------------------------------------------------------------------------

    @property
    def study(self) -> Study:
        """The bo study (created on the first suggestion)."""
        return self._ensure_study()

    def stopper(self, *, check_every: int = 1) -> "BoStopper":
        """A Tune ``Stopper`` that stops a trial when the study's early-stopping rule says so."""
        return BoStopper(self, check_every=check_every)

    def _ensure_study(self) -> Study:
        if self._study is None:
            if self._space is None:
                raise ValueError("BoSearch needs a search space: pass space= or Tune's param_space")
            if not self._metric or self._mode not in ("max", "min"):
                raise ValueError(
                    "BoSearch needs metric= and mode='max' or 'min': in TuneConfig with Tune's param_space, or to "
                    "BoSearch itself when it is given space= (Tune tells a searcher the metric only with a param_space)"
                )
            self._study = self._client.create_study(
                self._study_name,
                self._space,
                {self._metric: "MAXIMIZE" if self._mode == "max" else "MINIMIZE"},
                algorithm=self._algorithm,
                algorithm_config={"expectedNumTrials": self._expected_trials} if self._expected_trials else None,
                stopping=self._stopping,
                median_stopping=self._median_stopping and self._stopping is None,
            )
        return self._study

    def _record(self, trial_id: str, result: Dict[str, Any]) -> None:
        """Adds the result as a measurement of its trial, once: the stopper records it before it
        asks the study (so a rule judges the result it stops on), and Tune hands it to
        ``on_trial_result`` after."""
        trial = self._trials.get(trial_id)
        value = _metric_value(result, self._metric)
        if trial is None or value is None:
            return
        assert self._metric is not None
        iteration = result.get("training_iteration")
        step = len(trial.measurements) + 1 if iteration is None else _offset(trial) + int(as_number(iteration, "training_iteration"))
        last = trial.measurements[-1].step if trial.measurements else None
        if last is not None and last >= step:
            return
        trial.add_measurement({self._metric: value}, step=step)

    def _to_tune(self, name: str, value: Value) -> Any:
        back = self._back.get(name)
        if back is None:
            return value
        key = repr(float(value)) if not isinstance(value, str) else value
        return back.get(key, value)


class BoStopper(Stopper):  # type: ignore[misc]
    """Stops a Tune trial when its bo study's early-stopping rule says so."""

    def __init__(self, search: BoSearch, *, check_every: int = 1) -> None:
        self._search = search
        self._check_every = max(1, check_every)
        self._seen: Dict[str, int] = {}

    def __call__(self, trial_id: str, result: Dict[str, Any]) -> bool:
        trial = self._search._trials.get(trial_id)
        if trial is None:
            return False
        self._search._record(trial_id, result)
        n = self._seen[trial_id] = self._seen.get(trial_id, 0) + 1
        stop = n % self._check_every == 0 and trial.should_stop()
        if stop:
            self._search._stopped_by_bo.add(trial_id)
        return stop

    def stop_all(self) -> bool:
        return False


def _offset(trial: Trial) -> int:
    """The steps a resumed trial took over from the trial it resumes: its Tune iterations count
    on from there."""
    return int(trial.resumed_at or 0) if trial.resumed_from is not None else 0


def _iteration(result: Dict[str, Any]) -> Optional[int]:
    """The result's ``training_iteration``, or None when it has none."""
    iteration = result.get("training_iteration")
    return None if iteration is None else int(as_number(iteration, "training_iteration"))


def _metric_value(result: Dict[str, Any], metric: Optional[str]) -> Optional[float]:
    """The metric's value in a Tune result as a plain float — Tune's results carry numpy and
    torch numbers as often as floats — or None when it is absent, not a number, or not finite."""
    if not metric or metric not in result:
        return None
    try:
        return as_metric(result[metric], metric)
    except ValueError:
        return None
