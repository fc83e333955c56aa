"""A study and its trials as a Vizier user knows them, each with the verbs of its life over bo's
REST API. A :class:`Trial` belongs to its :class:`Study` (``trial.study``) and a study hands out
its trials, so the two live here together; :class:`~bo_client.Client` opens studies, and the
loop over a function is ``optimize.py``'s, which knows neither class.

Every call is one request (or a page loop, or an operation poll); objects hold what the server
last said and :meth:`Trial.refresh` reads it again."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Protocol, Sequence, Tuple, Type, Union

from ._http import Transport, quote
from ._identity import default_client_id
from ._numbers import as_metric, as_parameter_value
from .measurement import Measurement, Metrics, Prediction
from .optimize import OptimizeResult, Result, optimize
from .space import SearchSpace, Value

__all__ = ["EXPORT_FORMATS", "AskedParameter", "Study", "Trial"]

Json = Any

class _Connected(Protocol):
    """What a study needs of its client (:class:`~bo_client.Client` is one): the connection."""

    @property
    def transport(self) -> Transport: ...


#: What :meth:`Study.export` writes.
EXPORT_FORMATS = ("json", "csv", "optuna-journal")


@dataclass
class Trial:
    """A trial as the server last described it, with the verbs of its life."""

    study: "Study" = field(repr=False)
    id: int
    state: str
    #: The active parameters, by id.
    parameters: Dict[str, Value]
    client_id: str = ""
    final_measurement: Optional[Measurement] = None
    measurements: List[Measurement] = field(default_factory=list)
    infeasible_reason: str = ""
    start_time: str = ""
    end_time: str = ""
    #: Under ``SuccessiveHalvingStopping(resume=True)``: the id of the paused trial this one
    #: resumes. It starts with that trial's parameters and measurements; load the checkpoint you
    #: saved for that trial and train on from ``resumed_at``.
    resumed_from: Optional[int] = None
    #: With ``resumed_from``: the step (or elapsed seconds, under ``use_elapsed_duration``) of the
    #: last measurement taken over, where training goes on from.
    resumed_at: Optional[float] = None
    #: When the trial was asked to stop (RFC 3339), by the study's stopping rule or its client;
    #: empty when it never was.
    stop_time: str = ""
    #: The client's own names for the trial (``{"optuna.trial_number": "7"}``), shown by the
    #: dashboard.
    labels: Dict[str, str] = field(default_factory=dict)
    #: In a study with an open search space: the revision of the space when the trial's
    #: parameters were last given.
    space_revision: int = 0

    @classmethod
    def _from_vertex(cls, study: "Study", t: Json) -> "Trial":
        fm = t.get("finalMeasurement")
        return cls(
            study,
            int(t["id"]),
            t.get("state", "STATE_UNSPECIFIED"),
            {p["parameterId"]: p["value"] for p in t.get("parameters", [])},
            t.get("clientId", ""),
            Measurement.from_vertex(fm) if fm else None,
            [Measurement.from_vertex(m) for m in t.get("measurements", [])],
            t.get("infeasibleReason", ""),
            t.get("startTime", ""),
            t.get("endTime", ""),
            int(t["resumedFrom"].rsplit("/", 1)[1]) if t.get("resumedFrom") else None,
            float(t["resumedAt"]) if t.get("resumedAt") is not None else None,
            t.get("stopTime", ""),
            dict(t.get("labels", {})),
            int(t.get("searchSpaceRevision", 0)),
        )

    def _update(self, t: Json) -> "Trial":
        fresh = Trial._from_vertex(self.study, t)
        self.__dict__.update({k: v for k, v in fresh.__dict__.items() if k != "study"})
        return self

    @property
    def name(self) -> str:
        return f"{self.study.name}/trials/{self.id}"

    @property
    def _path(self) -> str:
        return f"{self.study._path}/trials/{self.id}"

    def __getitem__(self, parameter: str) -> Value:
        try:
            return self.parameters[parameter]
        except KeyError:
            held = ", ".join(repr(p) for p in self.parameters) or "none"
            raise KeyError(
                f"{parameter!r} is not a parameter of trial {self.id} (it is inactive there, or not in the study); "
                f"the trial's parameters: {held}"
            ) from None

    def get(self, parameter: str, default: Optional[Value] = None) -> Optional[Value]:
        """The parameter's value, or ``default`` when it is inactive in this trial."""
        return self.parameters.get(parameter, default)

    @property
    def value(self) -> Optional[float]:
        """The objective's final value (the study's first objective), when completed."""
        if self.final_measurement is None or not self.study.objective_ids:
            return None
        return self.final_measurement.metrics.get(self.study.objective_ids[0])

    @property
    def done(self) -> bool:
        return self.state in ("SUCCEEDED", "INFEASIBLE")

    @property
    def partial(self) -> bool:
        """Whether the trial was stopped before it completed: its final value is a point on a
        curve cut short, which the study learns as such, not the configuration's result."""
        return bool(self.stop_time)

    def refresh(self) -> "Trial":
        """Reads the trial again."""
        return self._update(self.study._t.request("GET", self._path))

    def add_measurement(self, metrics: Union[float, Metrics], *, step: Optional[int] = None, elapsed_seconds: Optional[float] = None) -> "Trial":
        """Reports an intermediate measurement (a float means the study's one objective)."""
        m = Measurement(self.study._metrics(metrics), step, elapsed_seconds).to_vertex()
        count = len(self.measurements)

        def already_there() -> Tuple[bool, Json]:
            t = self.study._t.request("GET", self._path)
            ms = t.get("measurements", [])
            return (len(ms) > count and _same_measurement(ms[-1], m), t)

        return self._update(
            self.study._t.request("POST", f"{self._path}:addTrialMeasurement", {"measurement": m}, on_ambiguous=already_there)
        )

    def should_stop(self) -> bool:
        """Asks the study's early-stopping rule whether to stop this trial now."""
        op = self.study._t.request("POST", f"{self._path}:checkTrialEarlyStoppingState", {})
        op = self.study._t.wait_operation(op)
        return bool(op.get("response", {}).get("shouldStop", False))

    def complete(
        self,
        value: Union[None, float, Metrics] = None,
        *,
        infeasible: Optional[str] = None,
        step: Optional[int] = None,
        elapsed_seconds: Optional[float] = None,
    ) -> "Trial":
        """Completes the trial: with its final value (a float for the one objective, or metric
        values by id), or without one (the study picks among its intermediate measurements), or
        ``infeasible="why"`` when it could not be evaluated."""
        body: Dict[str, Any]
        if infeasible is not None:
            if value is not None:
                raise ValueError("give a value or infeasible=, not both")
            body = {"trialInfeasible": True, "infeasibleReason": str(infeasible)[:1000]}
        elif value is None:
            body = {}
        else:
            body = {"finalMeasurement": Measurement(self.study._metrics(value), step, elapsed_seconds).to_vertex()}

        def already_there() -> Tuple[bool, Json]:
            t = self.study._t.request("GET", self._path)
            return (t.get("state") in ("SUCCEEDED", "INFEASIBLE"), t)

        return self._update(self.study._t.request("POST", f"{self._path}:complete", body, on_ambiguous=already_there))

    def stop(self) -> "Trial":
        """Asks the trial's worker to stop (STOPPING); it still completes it."""
        return self._update(self.study._t.request("POST", f"{self._path}:stop", {}))

    def add_parameters(self, parameters: Sequence["AskedParameter"]) -> "Trial":
        """In a study with an open search space: gives the running trial the parameters its
        objective asks for that it lacks (``POST …:addTrialParameters``). Each is added to the
        study's space under its ``parent`` (the parameter it was asked under, at the value this
        trial holds) and takes its ``value``, or one the study's model chooses given the trial's
        other values. Parameters the trial holds keep their values, so asking again is safe."""
        body = {"parameters": [p.to_vertex() for p in parameters]}
        return self._update(self.study._t.request("POST", f"{self._path}:addTrialParameters", body))

    def delete(self) -> None:
        self.study._t.request("DELETE", self._path)


@dataclass(frozen=True)
class AskedParameter:
    """A parameter a define-by-run objective asked for: its spec as Vertex's ``ParameterSpec``
    (one value spec, its scale, no children), the parameter it was asked under (``None``: a
    root), and its value when fixed (``None``: the study chooses)."""

    spec: Json
    parent: Optional[str] = None
    value: Optional[Value] = None

    def to_vertex(self) -> Json:
        out: Dict[str, Any] = {"parameterSpec": self.spec}
        if self.parent is not None:
            out["parentParameterId"] = self.parent
        if self.value is not None:
            out["value"] = as_parameter_value(self.value, str(self.spec.get("parameterId", "")))
        return out


def _parameters(values: Mapping[str, Any]) -> List[Json]:
    """Parameter values on the wire: strings as they are, numbers of any numeric type as plain
    ``int``/``float``."""
    return [{"parameterId": str(k), "value": as_parameter_value(v, str(k))} for k, v in values.items()]


def _same_measurement(a: Json, b: Json) -> bool:
    def key(m: Json) -> Tuple[Any, ...]:
        return (
            str(m.get("stepCount", "0")),
            sorted((x["metricId"], float(x.get("value", 0.0))) for x in m.get("metrics", [])),
        )

    return key(a) == key(b)


class Study:
    """A study as the server last described it."""

    def __init__(self, client: Union[Transport, _Connected], raw: Json) -> None:
        """The study ``raw`` (its Vertex JSON, ``name`` at least) of ``client`` — a
        :class:`~bo_client.Client`, or its transport."""
        self._t = client if isinstance(client, Transport) else client.transport
        self._update(raw)

    def _update(self, raw: Json) -> None:
        self.raw = raw
        #: ``projects/…/locations/…/studies/{n}``.
        self.name: str = raw["name"]
        self.display_name: str = raw.get("displayName", "")
        self.state: str = raw.get("state", "STATE_UNSPECIFIED")
        #: Why the study is not ACTIVE (a stopping rule, an exhausted space, :meth:`stop`).
        self.inactive_reason: str = raw.get("inactiveReason", "")
        self.spec: Json = raw.get("studySpec", {})
        self.metric_ids: List[str] = [m["metricId"] for m in self.spec.get("metrics", [])]
        self.goals: Dict[str, str] = {m["metricId"]: m.get("goal", "MAXIMIZE") for m in self.spec.get("metrics", [])}
        #: The metrics optimised: those without a ``safetyConfig`` (safety metrics are constraints).
        self.objective_ids: List[str] = [m["metricId"] for m in self.spec.get("metrics", []) if "safetyConfig" not in m]

    def __repr__(self) -> str:
        return f"Study({self.name!r}, display_name={self.display_name!r}, state={self.state!r})"

    @property
    def id(self) -> int:
        return int(self.name.rsplit("/", 1)[1])

    @property
    def _path(self) -> str:
        return "/v1/" + "/".join(quote(s) for s in self.name.split("/"))

    @property
    def search_space(self) -> SearchSpace:
        return SearchSpace.from_vertex(self.spec.get("parameters", []))

    def _metrics(self, value: Union[float, Metrics, Any]) -> Dict[str, float]:
        """Metric values as plain finite floats, from a dict or from one number for the study's one
        metric (numbers of any numeric type: numpy, torch, ``Decimal``; ``_numbers.py``)."""
        if isinstance(value, Mapping):
            return {str(k): as_metric(v, str(k)) for k, v in value.items()}
        if len(self.metric_ids) != 1:
            raise ValueError(f"the study has metrics {self.metric_ids}: give their values as a dict")
        return {self.metric_ids[0]: as_metric(value, self.metric_ids[0])}

    def refresh(self) -> "Study":
        self._update(self._t.request("GET", self._path))
        return self

    def suggest(
        self,
        count: int = 1,
        client_id: Optional[str] = None,
        *,
        contexts: Optional[Sequence[Mapping[str, Value]]] = None,
        labels: Optional[Mapping[str, str]] = None,
    ) -> List[Trial]:
        """Asks for ``count`` trials for ``client_id`` (default: this host and process). The same
        client asking again while its trials are ACTIVE gets the same trials back, so a worker that
        restarts with its id resumes where it was. Waits for the operation when the model is still
        fitting. An empty list means the study has nothing more to try (a finished grid, a
        stopped study).

        ``contexts`` (one per trial, e.g. ``[{"day": "tue"}]``) fixes parameters: each trial takes
        its context's values and the model chooses the rest (a study of one metric). ``labels``
        name the trials this call creates (``{"run": "nightly"}``; at most 16)."""
        body: Dict[str, Any] = {"suggestionCount": int(count), "clientId": client_id or default_client_id()}
        if labels:
            body["labels"] = {str(k): str(v) for k, v in labels.items()}
        if contexts is not None:
            body["contexts"] = [{"parameters": _parameters(c)} for c in contexts]
        op = self._t.request("POST", f"{self._path}/trials:suggest", body)
        op = self._t.wait_operation(op)
        return [Trial._from_vertex(self, t) for t in op.get("response", {}).get("trials", [])]

    def trial(self, trial_id: int) -> Trial:
        return Trial._from_vertex(self, self._t.request("GET", f"{self._path}/trials/{int(trial_id)}"))

    def trials(self, *, page_size: Optional[int] = None) -> List[Trial]:
        """Every trial, in id order, as a list (as Optuna's ``study.trials``); read a page at a
        time. For a study too large to hold, :meth:`iter_trials`."""
        return list(self.iter_trials(page_size=page_size))

    def iter_trials(self, *, page_size: Optional[int] = None) -> Iterator[Trial]:
        """Every trial, in id order, a page at a time, as they are read."""
        token: Optional[str] = None
        while True:
            query: Dict[str, str] = {}
            if page_size is not None:
                query["pageSize"] = str(page_size)
            if token:
                query["pageToken"] = token
            page = self._t.request("GET", f"{self._path}/trials", query=query)
            for t in page.get("trials", []):
                yield Trial._from_vertex(self, t)
            token = page.get("nextPageToken")
            if not token:
                return

    def add_trial(
        self,
        parameters: Mapping[str, Value],
        value: Union[None, float, Metrics] = None,
        *,
        infeasible: Optional[str] = None,
        labels: Optional[Mapping[str, str]] = None,
    ) -> Trial:
        """Adds a trial evaluated elsewhere (completed, or REQUESTED when given no result)."""
        body: Dict[str, Any] = {"parameters": _parameters(parameters)}
        if labels:
            body["labels"] = {str(k): str(v) for k, v in labels.items()}
        if infeasible is not None:
            body.update(state="INFEASIBLE", infeasibleReason=infeasible)
        elif value is not None:
            body["finalMeasurement"] = Measurement(self._metrics(value)).to_vertex()
        return Trial._from_vertex(self, self._t.request("POST", f"{self._path}/trials", body))

    def add_parameters(self, parameters: Sequence[AskedParameter]) -> "Study":
        """In a study with an open search space: grows it with parameters asked outside a
        running trial (``POST …:addParameters``), in the order asked; an entry's ``value`` is what
        a later entry's ``parent`` places it under. Then :meth:`add_trial` can add a trial with
        them."""
        body = {"parameters": [p.to_vertex() for p in parameters]}
        self._update(self._t.request("POST", f"{self._path}:addParameters", body))
        return self

    @property
    def open_space(self) -> bool:
        """Whether the study's search space grows as trials ask for parameters."""
        return bool(self.spec.get("openSearchSpace", False))

    def optimal_trials(self) -> List[Trial]:
        """The best trial (one metric) or the Pareto-optimal trials (several), best first."""
        out = self._t.request("POST", f"{self._path}/trials:listOptimalTrials", {})
        return [Trial._from_vertex(self, t) for t in out.get("optimalTrials", [])]

    def best_trial(self) -> Optional[Trial]:
        """The study's best trial (None before any): the first of :meth:`optimal_trials`, which
        the service orders best first — for several objectives, the optimal trial best by the
        first objective. The dashboard and the model page name the same trial."""
        best = self.optimal_trials()
        return best[0] if best else None

    def model(self) -> Json:
        """What the study's model learned (``GET …/model``)."""
        return self._t.request("GET", f"{self._path}/model")

    def importance(self) -> Json:
        """Parameter importance (``GET …/importance``)."""
        return self._t.request("GET", f"{self._path}/importance")

    def predict(self, points: Sequence[Mapping[str, Value]]) -> List[Prediction]:
        """The model's predictive distribution at each point (each a dict of its active
        parameters): see :class:`Prediction`."""
        body = {"trials": [{"parameters": _parameters(p)} for p in points]}
        out = self._t.request("POST", f"{self._path}:predict", body)
        return [Prediction._from_wire(p) for p in out.get("predictions", [])]

    def stop(self) -> "Study":
        """Stops the study (``POST …:stop``, a bo extension): it becomes COMPLETED and suggests
        nothing more, so every worker's :meth:`optimize` loop ends after its current trial; trials
        still running can report and complete. Stopping a stopped study changes nothing."""
        self._update(self._t.request("POST", f"{self._path}:stop", {}))
        return self

    def delete(self) -> None:
        """Deletes the study with its trials (``DELETE``); it cannot be undone."""
        self._t.request("DELETE", self._path)

    def export(self, path: Union[str, "os.PathLike[str]"], format: str = "json") -> int:
        """Writes the study to the file ``path`` (``GET …:export``, streamed: any size) and
        returns its size in bytes. ``format``: ``"json"`` — bo's export document, every trial
        with its measurements and the model's state, for :meth:`Client.import_study`;
        ``"csv"`` — one row per trial, for pandas; ``"optuna-journal"`` — Optuna's journal file,
        for ``optuna-dashboard`` and ``optuna.load_study`` (``JournalFileBackend``). The file
        appears only once it is whole."""
        if format not in EXPORT_FORMATS:
            raise ValueError(f"format must be one of {', '.join(EXPORT_FORMATS)}, got {format!r}")
        return self._t.download(f"{self._path}:export", path, query={"format": format})

    def optimize(
        self,
        objective: Callable[[Trial], Result],
        n_trials: int,
        *,
        n_workers: int = 1,
        client_id: Optional[str] = None,
        progress: Optional[bool] = None,
        catch: Tuple[Type[BaseException], ...] = (),
    ) -> OptimizeResult[Trial]:
        """Runs ``objective(trial)`` on ``n_trials`` trials with ``n_workers`` threads; an
        exception not in ``catch`` marks its trial INFEASIBLE and is raised again. See
        :func:`bo_client.optimize.optimize`."""
        return optimize(self, objective, n_trials, n_workers=n_workers, client_id=client_id, progress=progress, catch=catch)
