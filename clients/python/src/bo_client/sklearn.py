"""scikit-learn users switch to bo in one line: :class:`BoSearchCV` is a drop-in for
``RandomizedSearchCV`` — the same arguments, in the same order, with the same defaults — whose
candidates come from a bo study.

    search = BoSearchCV(SVC(), {"C": loguniform(1e-3, 1e3), "kernel": ["rbf", "linear"]}, n_iter=30, cv=5, random_state=0)
    search.fit(X, y)
    search.best_params_, search.best_estimator_, search.cv_results_

``n_iter`` (10 by default, as scikit-learn's) candidates in all. A search's own study (no
``study_name``) declares ``n_iter`` as its ``maxNumTrials``: the server then spends at most a
quarter of them (but no fewer than 10) on its quasi-random start before it models the scores. A
named study declares nothing, so that a later search under the same name goes on from its trials.
``random_state`` seeds the bo study (an int, or a ``numpy`` ``RandomState`` an int is drawn
from): the same seed and data give the same candidates. The server is ``url`` (default: the
``BO_URL`` environment variable, else ``http://127.0.0.1:8080``), with ``api_key`` (default
``BO_API_KEY``).

It is scikit-learn's own ``BaseSearchCV`` — ``fit``, ``refit``, ``scoring`` (one scorer or
several, with ``refit`` naming the one bo optimises), ``cv``, ``error_score``,
``return_train_score``, ``best_params_``, ``best_estimator_``, ``best_score_``, ``cv_results_``,
``predict``/``score`` — with the search itself done by bo: each round asks the study for
``n_jobs`` candidates (each from its own bo client), scikit-learn cross-validates them
(in parallel over ``n_jobs``), and each candidate's trial records every fold's score as a
measurement (step = fold number) and completes with the mean. A candidate whose folds failed
(``error_score`` NaN) is INFEASIBLE.

Distributions: ``scipy.stats.loguniform(a, b)`` → a DOUBLE on a log scale, ``uniform(loc,
scale)`` → a DOUBLE over ``[loc, loc + scale]``, ``randint(low, high)`` → an INTEGER over
``[low, high - 1]``; a list of numbers → DISCRETE, a list of anything else → CATEGORICAL (the
values mapped back, ``None`` and classes included). Other distributions are refused by name.

Not done: stopping a candidate between its folds (scikit-learn cross-validates a candidate's
folds together), so the study's stopping rules see the folds only after the fact.

Needs scikit-learn and scipy; the rest of ``bo_client`` does not."""

from __future__ import annotations

import math
import os
import secrets
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import numpy as np
from sklearn.model_selection._search import BaseSearchCV
from sklearn.utils import check_random_state

from ._numbers import as_metric
from .client import Client
from .spec import StudyStopping
from .study import Study
from .space import SearchSpace, Value

__all__ = ["BoSearchCV", "space_from_sklearn"]

Back = Dict[str, Callable[[Value], Any]]


def _label_to_value(by_label: Dict[str, Any]) -> Callable[[Value], Any]:
    return lambda v: by_label[str(v)]


def space_from_sklearn(param_distributions: Mapping[str, Any]) -> Tuple[SearchSpace, Back]:
    """bo's search space for ``param_distributions`` (see the module docs), and how each bo
    value maps back to the estimator's parameter."""
    if not isinstance(param_distributions, Mapping):
        raise ValueError("BoSearchCV takes one dict of parameter distributions (a list of grids is not supported)")
    space = SearchSpace()
    back: Back = {}
    for name, d in param_distributions.items():
        if hasattr(d, "dist") and hasattr(d, "support"):
            kind = d.dist.name
            low, high = (float(v) for v in d.support())
            if kind in ("loguniform", "reciprocal"):
                space.float(name, low, high, log=True)
                back[name] = float
            elif kind == "uniform":
                space.float(name, low, high)
                back[name] = float
            elif kind == "randint":
                space.integer(name, int(low), int(high))
                back[name] = lambda v: int(round(float(v)))
            else:
                raise ValueError(f"{name}: scipy.stats.{kind} is not a distribution bo maps (loguniform, uniform, randint, or a list)")
        elif isinstance(d, (list, tuple, np.ndarray)):
            values = list(d)
            if not values:
                raise ValueError(f"{name}: an empty list of values")
            numbers = all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) for v in values)
            if numbers and len(set(float(v) for v in values)) == len(values):
                space.discrete(name, sorted(float(v) for v in values))
                ints = all(isinstance(v, (int, np.integer)) for v in values)
                back[name] = (lambda v: int(round(float(v)))) if ints else float
            else:
                labels = [str(v) for v in values]
                if len(set(labels)) != len(labels):
                    labels = [repr(v) for v in values]
                if len(set(labels)) != len(labels):
                    raise ValueError(f"{name}: the values {values!r} cannot be told apart by their text")
                space.categorical(name, labels)
                back[name] = _label_to_value(dict(zip(labels, values)))
        else:
            raise ValueError(f"{name}: {d!r} is neither a scipy.stats distribution nor a list of values")
    return space, back


class BoSearchCV(BaseSearchCV):  # type: ignore[misc]
    """Hyperparameter search with cross-validation whose candidates come from a bo study (see
    the module docs): ``RandomizedSearchCV``'s arguments, then bo's (the server, the project,
    the study's name — by default the estimator's class and the time, a new study per ``fit`` —
    and its algorithm)."""

    def __init__(
        self,
        estimator: Any,
        param_distributions: Mapping[str, Any],
        *,
        n_iter: int = 10,
        scoring: Any = None,
        n_jobs: Optional[int] = None,
        refit: Any = True,
        cv: Any = None,
        verbose: int = 0,
        pre_dispatch: Any = "2*n_jobs",
        random_state: Any = None,
        error_score: Any = np.nan,
        return_train_score: bool = False,
        url: Optional[str] = None,
        project: str = "demo",
        api_key: Optional[str] = None,
        study_name: Optional[str] = None,
        algorithm: Optional[str] = None,
    ) -> None:
        super().__init__(
            estimator=estimator,
            scoring=scoring,
            n_jobs=n_jobs,
            refit=refit,
            cv=cv,
            verbose=verbose,
            pre_dispatch=pre_dispatch,
            error_score=error_score,
            return_train_score=return_train_score,
        )
        self.param_distributions = param_distributions
        self.n_iter = n_iter
        self.random_state = random_state
        self.url = url
        self.project = project
        self.api_key = api_key
        self.study_name = study_name
        self.algorithm = algorithm

    def _workers(self) -> int:
        jobs: Optional[int] = self.n_jobs
        if jobs is None:
            return 1
        if jobs < 0:
            return max(1, (os.cpu_count() or 1) + 1 + int(jobs))
        return max(1, int(jobs))

    def _run_search(self, evaluate_candidates: Callable[[List[Dict[str, Any]]], Dict[str, Any]]) -> None:
        if self.n_iter < 1:
            raise ValueError(f"n_iter must be at least 1, got {self.n_iter}")
        space, back = space_from_sklearn(self.param_distributions)
        metric = self.refit if isinstance(self.refit, str) else "score"
        name = self.study_name or f"{type(self.estimator).__name__}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
        client = Client(
            self.url or os.environ.get("BO_URL") or "http://127.0.0.1:8080",
            project=self.project,
            api_key=self.api_key or os.environ.get("BO_API_KEY") or None,
        )
        config: Dict[str, Any] = {}
        if self.random_state is not None:
            # scikit-learn's convention: an int, or a RandomState an int is drawn from. A seeded
            # search is reproducible: its candidates depend on the seed and the data only.
            if isinstance(self.random_state, (int, np.integer)):
                seed = int(self.random_state)
            else:
                seed = int(check_random_state(self.random_state).randint(2**31 - 1))
            config = {"seed": seed, "reproducible": True}
        study: Study = client.create_study(
            name, space, {metric: "MAXIMIZE"}, algorithm=self.algorithm, algorithm_config=config or None,
            # A study of its own knows its budget; a named one may be searched again, and a
            # declared budget would end it at the first search's n_iter.
            study_stopping=StudyStopping(max_num_trials=self.n_iter) if self.study_name is None else None,
        )
        #: The bo study this search used (kept after fit).
        self.study_ = study
        done = 0
        fitted = False
        failed: Optional[ValueError] = None
        while done < self.n_iter:
            trials = [t for i in range(min(self._workers(), self.n_iter - done)) for t in study.suggest(1, f"{name}-{i}")]
            if not trials:
                break  # the study suggests nothing more (a finished grid of lists)
            candidates = [{k: back[k](v) for k, v in t.parameters.items()} for t in trials]
            try:
                results = evaluate_candidates(candidates)
            except ValueError as e:
                # scikit-learn raises when every fit of a call failed (with error_score a number,
                # after warning); a round of bo's is one call: its candidates failed, the search
                # goes on, and raises at the end if no candidate ever fitted.
                if isinstance(self.error_score, str) and self.error_score == "raise":
                    raise
                failed = e
                reason = next((line for line in str(e).splitlines() if line.strip()), "every fit failed")
                for trial in trials:
                    trial.complete(infeasible=f"every fold failed ({reason.strip()}); its score is error_score")
                done += len(trials)
                continue
            fitted = True
            key = "score" if "mean_test_score" in results else metric
            if f"mean_test_{key}" not in results:
                raise ValueError(f"BoSearchCV with several scorers needs refit= naming the one bo optimises, not {self.refit!r}")
            first = len(results["params"]) - len(candidates)
            splits = sorted(int(k[5:].split("_", 1)[0]) for k in results if k.startswith("split") and k.endswith(f"_test_{key}"))
            for i, trial in enumerate(trials):
                row = first + i
                for fold in splits:
                    score = float(results[f"split{fold}_test_{key}"][row])
                    if math.isfinite(score):
                        trial.add_measurement({metric: score}, step=fold + 1)
                mean = float(results[f"mean_test_{key}"][row])
                if math.isfinite(mean):
                    trial.complete({metric: as_metric(mean, metric)})
                else:
                    trial.complete(infeasible="the estimator failed on a fold (its score is error_score)")
            done += len(trials)
        if not fitted and failed is not None:
            raise failed
