"""``study.optimize(objective, n_trials, n_workers)``: the loop most users need.

Each worker is a thread with its own ``clientId`` (``{client_id}-{i}``): it asks for one trial,
calls ``objective(trial)``, and completes the trial with what it returned —

- a number: the study's one objective; a dict: metric values by id. A number is anything
  numeric the ML stack returns — ``float``, ``int``, numpy scalars, 0-d arrays, torch and jax
  scalars, ``Decimal`` (``_numbers.py``);
- ``None``: the trial's own measurements decide (``trial.add_measurement`` was called), as
  ``:complete`` without a final measurement does;
- NaN, infinity, or ``None`` without a measurement: the trial is INFEASIBLE, saying which metric
  had which value (as Optuna fails such a trial), and the loop goes on;
- :class:`Infeasible` raised: the trial is INFEASIBLE with its message, and the loop goes on.

Exceptions follow Optuna's contract. By default (``catch=()``) an exception raised by the
objective marks its trial INFEASIBLE with the exception's type and message and is raised again
out of ``optimize``: a typo (``NameError``) stops the run at its first trial instead of turning
every trial INFEASIBLE in silence. An exception of a class in ``catch`` marks the trial the same
way, is logged with its traceback (logger ``bo_client``, level WARNING), and the loop goes on.
(Before 0.2 the default was ``catch=(Exception,)``: pass it to keep going past every error.)

Ctrl-C (or any other exception) stops the loop: every trial still running is marked INFEASIBLE
("interrupted: KeyboardInterrupt"), so none is left ACTIVE, and the exception is raised again.
The loop ends early when the study has nothing more to suggest. In a terminal a progress line
shows trials done, the best value and the time per trial.

The loop knows no class of the client: it asks of a study and its trials only what the
protocols below name, so ``study.py`` (whose :meth:`Study.optimize` calls it) is the one that
imports."""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Generic, List, Mapping, Optional, Protocol, Sequence, TextIO, Tuple, Type, TypeVar, Union

from ._http import ApiError
from ._identity import default_client_id
from ._numbers import as_metric

__all__ = ["Infeasible", "Objective", "OptimizeResult", "optimize"]

logger = logging.getLogger("bo_client")

#: What an objective returns (numbers of any numeric type; see the module docs).
Result = Union[None, float, Mapping[str, float], Any]


class _Trial(Protocol):
    """What the loop asks of a trial (:class:`bo_client.Trial` is one)."""

    @property
    def id(self) -> int: ...

    @property
    def state(self) -> str: ...

    @property
    def value(self) -> Optional[float]: ...

    @property
    def measurements(self) -> Sequence[object]: ...

    def complete(self, value: Optional[Dict[str, float]] = None, *, infeasible: Optional[str] = None) -> object: ...

    def refresh(self) -> object: ...


T = TypeVar("T", bound=_Trial)
T_co = TypeVar("T_co", bound=_Trial, covariant=True)


class _Study(Protocol[T_co]):
    """What the loop asks of a study (:class:`bo_client.Study` is one, of its trials)."""

    @property
    def metric_ids(self) -> List[str]: ...

    @property
    def objective_ids(self) -> List[str]: ...

    @property
    def goals(self) -> Dict[str, str]: ...

    def suggest(self, count: int = 1, client_id: Optional[str] = None) -> Sequence[T_co]: ...


#: An objective: a trial in, a result out.
Objective = Callable[[T], Result]


class Infeasible(Exception):
    """Raise it from an objective to mark the trial INFEASIBLE with this reason."""


@dataclass
class OptimizeResult(Generic[T]):
    """What a run of :func:`optimize` did (``OptimizeResult[Trial]``)."""

    #: Trials completed by this run, in the order they finished.
    trials: List[T] = field(default_factory=list)
    #: Of those, the ones marked INFEASIBLE.
    infeasible: int = 0
    #: Why the run ended: ``"n_trials"``, or ``"exhausted"``: the study suggested nothing more (a
    #: finished grid, a study-stopping rule, :meth:`Study.stop`; ``study.inactive_reason`` says which).
    reason: str = "n_trials"


class _Progress:
    """One line in a terminal, redrawn as trials finish."""

    def __init__(self, total: int, out: TextIO, enabled: bool, maximize: bool) -> None:
        self.total, self.out, self.enabled, self.maximize = total, out, enabled, maximize
        self.done = 0
        self.best: Optional[float] = None
        self.start = time.monotonic()

    def update(self, value: Optional[float]) -> None:
        self.done += 1
        if value is not None and math.isfinite(value):
            if self.best is None or (value > self.best if self.maximize else value < self.best):
                self.best = value
        if not self.enabled:
            return
        width = 24
        filled = int(width * self.done / max(self.total, 1))
        per = (time.monotonic() - self.start) / self.done
        best = "-" if self.best is None else f"{self.best:.6g}"
        self.out.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} best {best} {per:.2f} s/trial ")
        self.out.flush()

    def close(self) -> None:
        if self.enabled:
            self.out.write("\n")
            self.out.flush()


def optimize(
    study: _Study[T],
    objective: Callable[[T], Result],
    n_trials: int,
    *,
    n_workers: int = 1,
    client_id: Optional[str] = None,
    progress: Optional[bool] = None,
    catch: Tuple[Type[BaseException], ...] = (),
) -> OptimizeResult[T]:
    """Runs ``objective`` on ``n_trials`` trials of ``study`` with ``n_workers`` threads."""
    if n_trials < 1 or n_workers < 1:
        raise ValueError(f"n_trials and n_workers must be at least 1, got {n_trials} and {n_workers}")
    prefix = client_id or default_client_id()
    objective_id = study.objective_ids[0]
    bar = _Progress(
        n_trials, sys.stderr, sys.stderr.isatty() if progress is None else progress, study.goals.get(objective_id) != "MINIMIZE"
    )
    result: OptimizeResult[T] = OptimizeResult()
    lock = threading.Lock()
    claimed = 0
    stop = threading.Event()
    running: Dict[int, T] = {}
    failures: List[BaseException] = []

    def claim() -> bool:
        nonlocal claimed
        with lock:
            if stop.is_set() or claimed >= n_trials:
                return False
            claimed += 1
            return True

    def finish(trial: T) -> None:
        with lock:
            running.pop(trial.id, None)
            result.trials.append(trial)
            if trial.state == "INFEASIBLE":
                result.infeasible += 1
            bar.update(trial.value if trial.state == "SUCCEEDED" else None)

    def worker(i: int) -> None:
        me = f"{prefix}-{i}"
        try:
            while claim():
                trials = study.suggest(1, me)
                if not trials:
                    with lock:
                        result.reason = "exhausted"
                    stop.set()
                    return
                trial = trials[0]
                with lock:
                    running[trial.id] = trial
                try:
                    returned = objective(trial)
                except Infeasible as e:
                    finish(_complete(trial, infeasible=str(e) or "infeasible"))
                    continue
                except catch as e:
                    logger.warning("trial %s failed; the loop goes on (catch=%s)", trial.id, _names(catch), exc_info=True)
                    finish(_complete(trial, infeasible=_reason(e)))
                    continue
                except Exception as e:
                    # Not caught: the trial says why, then the exception ends the run.
                    finish(_complete(trial, infeasible=_reason(e), quiet=True))
                    raise
                if stop.is_set() and trial.id not in running:
                    return  # interrupted meanwhile: already marked
                value, problem = _usable(returned, trial, study.metric_ids)
                if problem is not None:
                    logger.warning("trial %s: %s; marked INFEASIBLE", trial.id, problem)
                    finish(_complete(trial, infeasible=problem))
                else:
                    finish(_complete(trial, value=value))
        except BaseException as e:  # noqa: BLE001 - handed to the main thread, which re-raises
            with lock:
                failures.append(e)
            stop.set()

    threads = [threading.Thread(target=worker, args=(i,), name=f"bo-optimize-{i}", daemon=True) for i in range(n_workers)]
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(timeout=0.1)
            if failures:
                raise failures[0]
    except BaseException as e:
        stop.set()
        with lock:
            left = list(running.values())
            running.clear()
        for trial in left:
            _complete(trial, infeasible=f"interrupted: {type(e).__name__}", quiet=True)
        bar.close()
        raise
    bar.close()
    return result


def _reason(e: BaseException) -> str:
    text = str(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _names(classes: Tuple[Type[BaseException], ...]) -> str:
    return "(" + ", ".join(c.__name__ for c in classes) + ")"


def _usable(returned: Result, trial: _Trial, ids: List[str]) -> Tuple[Union[None, Dict[str, float]], Optional[str]]:
    """What a returned value completes the trial with — ``None`` (its measurements decide) or
    metric values as plain floats — or why it cannot (as Optuna fails a trial that returns NaN)."""
    if returned is None:
        return None, (None if trial.measurements else "the objective returned None and reported no measurement")
    if isinstance(returned, Mapping):
        pairs = [(str(k), v) for k, v in returned.items()]
    else:
        if len(ids) != 1:
            return None, f"the objective returned {returned!r}; the study has metrics {ids}: return their values as a dict"
        pairs = [(ids[0], returned)]
    values: Dict[str, float] = {}
    for metric, v in pairs:
        try:
            values[metric] = as_metric(v, metric)
        except ValueError as e:
            return None, f"the objective returned an unusable value: {e}"
    return values, None


def _complete(trial: T, *, value: Optional[Dict[str, float]] = None, infeasible: Optional[str] = None, quiet: bool = False) -> T:
    """Completes ``trial`` (which takes the server's answer) and returns it."""
    try:
        if infeasible is not None:
            trial.complete(infeasible=infeasible)
        else:
            trial.complete(value)
    except ApiError as e:
        if e.code == "FAILED_PRECONDITION":
            # Completed meanwhile (by the interrupt, or by another worker of this client after a
            # lease): the trial's stored state stands.
            trial.refresh()
        elif not quiet:
            raise
    return trial
