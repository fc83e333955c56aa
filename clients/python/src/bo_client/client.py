"""Studies and trials as a Vizier user knows them, over bo's REST API.

    client = Client("http://127.0.0.1:8080", project="demo")
    study = client.create_study("mnist", space, metrics={"accuracy": "MAXIMIZE"})
    for trial in study.suggest(count=2, client_id="worker-1"):
        trial.add_measurement({"accuracy": 0.91}, step=100)
        if not trial.should_stop():
            trial.complete({"accuracy": 0.94})

Every call is one request (or a page loop, or an operation poll); objects hold what the server
last said and :meth:`Trial.refresh` reads it again. The loop over a function is
:meth:`Study.optimize` (``optimize.py``)."""

from __future__ import annotations

import os
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Type, Union

from ._http import ApiError, ConnectionFailed, RetryPolicy, Transport
from ._identity import default_client_id
from ._numbers import as_metric, as_number, as_parameter_value
from .space import SearchSpace, Value
from .spec import Metric, MedianStopping, Stopping, StudyStopping

if TYPE_CHECKING:
    from .optimize import Objective, OptimizeResult

__all__ = ["Client", "Measurement", "Prediction", "Study", "Trial", "Metrics"]

#: Metric values by metric id.
Metrics = Mapping[str, float]

Json = Any


def _quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


@dataclass(frozen=True)
class Measurement:
    """A measurement: metric values, and when (training step, elapsed seconds)."""

    metrics: Dict[str, float]
    step: Optional[int] = None
    elapsed_seconds: Optional[float] = None

    @classmethod
    def from_vertex(cls, m: Json) -> "Measurement":
        step = m.get("stepCount")
        elapsed = m.get("elapsedDuration")
        # Vertex leaves out zeros: an absent step or duration is 0.
        return cls(
            {x["metricId"]: float(x.get("value", 0.0)) for x in m.get("metrics", [])},
            0 if step is None else int(step),
            float(elapsed.rstrip("s")) if elapsed else 0.0,
        )

    def to_vertex(self) -> Json:
        out: Dict[str, Any] = {"metrics": [{"metricId": k, "value": as_metric(v, k)} for k, v in self.metrics.items()]}
        if self.step is not None:
            step = as_number(self.step, "step")
            if not isinstance(step, int) and not float(step).is_integer():
                raise ValueError(f"step: {self.step!r} is not a whole number")
            out["stepCount"] = str(int(step))
        if self.elapsed_seconds is not None:
            elapsed = float(as_number(self.elapsed_seconds, "elapsed_seconds"))
            out["elapsedDuration"] = f"{elapsed:.9f}".rstrip("0").rstrip(".") + "s"
        return out


@dataclass(frozen=True)
class Prediction:
    """The model's predictive distribution of the objective at a point, in its units: the
    median and the central 90 % interval (``lower``, ``upper``: the 5 % and 95 % quantiles),
    and the mean and standard deviation where they are finite (``None`` otherwise). Under an
    output warp the distribution is skewed, so the mean and the median differ."""

    median: Optional[float]
    lower: Optional[float]
    upper: Optional[float]
    mean: Optional[float] = None
    stddev: Optional[float] = None

    @classmethod
    def _from_wire(cls, p: Mapping[str, Any]) -> "Prediction":
        def number(key: str) -> Optional[float]:
            value = p.get(key)
            return float(value) if value is not None else None

        return cls(number("median"), number("lower"), number("upper"), number("mean"), number("stddev"))


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
        return self.parameters[parameter]

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
        return self._update(self.study._client._t.request("GET", self._path))

    def add_measurement(self, metrics: Union[float, Metrics], *, step: Optional[int] = None, elapsed_seconds: Optional[float] = None) -> "Trial":
        """Reports an intermediate measurement (a float means the study's one objective)."""
        m = Measurement(self.study._metrics(metrics), step, elapsed_seconds).to_vertex()
        count = len(self.measurements)

        def already_there() -> Tuple[bool, Json]:
            t = self.study._client._t.request("GET", self._path)
            ms = t.get("measurements", [])
            return (len(ms) > count and _same_measurement(ms[-1], m), t)

        return self._update(
            self.study._client._t.request("POST", f"{self._path}:addTrialMeasurement", {"measurement": m}, on_ambiguous=already_there)
        )

    def should_stop(self) -> bool:
        """Asks the study's early-stopping rule whether to stop this trial now."""
        op = self.study._client._t.request("POST", f"{self._path}:checkTrialEarlyStoppingState", {})
        op = self.study._client._wait(op)
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
            t = self.study._client._t.request("GET", self._path)
            return (t.get("state") in ("SUCCEEDED", "INFEASIBLE"), t)

        return self._update(self.study._client._t.request("POST", f"{self._path}:complete", body, on_ambiguous=already_there))

    def stop(self) -> "Trial":
        """Asks the trial's worker to stop (STOPPING); it still completes it."""
        return self._update(self.study._client._t.request("POST", f"{self._path}:stop", {}))

    def delete(self) -> None:
        self.study._client._t.request("DELETE", self._path)


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

    def __init__(self, client: "Client", raw: Json) -> None:
        self._client = client
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
        return "/v1/" + "/".join(_quote(s) for s in self.name.split("/"))

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
        self._update(self._client._t.request("GET", self._path))
        return self

    def suggest(
        self, count: int = 1, client_id: Optional[str] = None, *, contexts: Optional[Sequence[Mapping[str, Value]]] = None
    ) -> List[Trial]:
        """Asks for ``count`` trials for ``client_id`` (default: this host and process). The same
        client asking again while its trials are ACTIVE gets the same trials back, so a worker that
        restarts with its id resumes where it was. Waits for the operation when the model is still
        fitting. An empty list means the study has nothing more to try (a finished grid, a
        stopped study).

        ``contexts`` (one per trial, e.g. ``[{"day": "tue"}]``) fixes parameters: each trial takes
        its context's values and the model chooses the rest (a study of one metric)."""
        body: Dict[str, Any] = {"suggestionCount": int(count), "clientId": client_id or default_client_id()}
        if contexts is not None:
            body["contexts"] = [{"parameters": _parameters(c)} for c in contexts]
        op = self._client._t.request("POST", f"{self._path}/trials:suggest", body)
        op = self._client._wait(op)
        return [Trial._from_vertex(self, t) for t in op.get("response", {}).get("trials", [])]

    def trial(self, trial_id: int) -> Trial:
        return Trial._from_vertex(self, self._client._t.request("GET", f"{self._path}/trials/{int(trial_id)}"))

    def trials(self, *, page_size: Optional[int] = None) -> Iterator[Trial]:
        """Every trial, in id order, a page at a time."""
        token: Optional[str] = None
        while True:
            query: Dict[str, str] = {}
            if page_size is not None:
                query["pageSize"] = str(page_size)
            if token:
                query["pageToken"] = token
            page = self._client._t.request("GET", f"{self._path}/trials", query=query)
            for t in page.get("trials", []):
                yield Trial._from_vertex(self, t)
            token = page.get("nextPageToken")
            if not token:
                return

    def add_trial(self, parameters: Mapping[str, Value], value: Union[None, float, Metrics] = None, *, infeasible: Optional[str] = None) -> Trial:
        """Adds a trial evaluated elsewhere (completed, or REQUESTED when given no result)."""
        body: Dict[str, Any] = {"parameters": _parameters(parameters)}
        if infeasible is not None:
            body.update(state="INFEASIBLE", infeasibleReason=infeasible)
        elif value is not None:
            body["finalMeasurement"] = Measurement(self._metrics(value)).to_vertex()
        return Trial._from_vertex(self, self._client._t.request("POST", f"{self._path}/trials", body))

    def optimal_trials(self) -> List[Trial]:
        """The best trial (one metric) or the Pareto-optimal trials (several), best first."""
        out = self._client._t.request("POST", f"{self._path}/trials:listOptimalTrials", {})
        return [Trial._from_vertex(self, t) for t in out.get("optimalTrials", [])]

    def best_trial(self) -> Optional[Trial]:
        """The study's best trial (None before any): the first of :meth:`optimal_trials`, which
        the service orders best first — for several objectives, the optimal trial best by the
        first objective. The dashboard and the model page name the same trial."""
        best = self.optimal_trials()
        return best[0] if best else None

    def model(self) -> Json:
        """What the study's model learned (``GET …/model``)."""
        return self._client._t.request("GET", f"{self._path}/model")

    def importance(self) -> Json:
        """Parameter importance (``GET …/importance``)."""
        return self._client._t.request("GET", f"{self._path}/importance")

    def predict(self, points: Sequence[Mapping[str, Value]]) -> List[Prediction]:
        """The model's predictive distribution at each point (each a dict of its active
        parameters): see :class:`Prediction`."""
        body = {"trials": [{"parameters": _parameters(p)} for p in points]}
        out = self._client._t.request("POST", f"{self._path}:predict", body)
        return [Prediction._from_wire(p) for p in out.get("predictions", [])]

    def stop(self) -> "Study":
        """Stops the study (``POST …:stop``, a bo extension): it becomes COMPLETED and suggests
        nothing more, so every worker's :meth:`optimize` loop ends after its current trial; trials
        still running can report and complete. Stopping a stopped study changes nothing."""
        self._update(self._client._t.request("POST", f"{self._path}:stop", {}))
        return self

    def delete(self) -> None:
        """Deletes the study with its trials (``DELETE``); it cannot be undone."""
        self._client._t.request("DELETE", self._path)

    def export(self, path: Union[str, "os.PathLike[str]"], format: str = "json") -> int:
        """Writes the study to the file ``path`` (``GET …:export``, streamed: any size) and
        returns its size in bytes. ``format``: ``"json"`` — bo's export document, every trial
        with its measurements and the model's state, for :meth:`Client.import_study`;
        ``"csv"`` — one row per trial, for pandas; ``"optuna-journal"`` — Optuna's journal file,
        for ``optuna-dashboard`` and ``optuna.load_study`` (``JournalFileBackend``). The file
        appears only once it is whole."""
        if format not in EXPORT_FORMATS:
            raise ValueError(f"format must be one of {', '.join(EXPORT_FORMATS)}, got {format!r}")
        return self._client._t.download(f"{self._path}:export", path, query={"format": format})

    def optimize(
        self,
        objective: "Objective",
        n_trials: int,
        *,
        n_workers: int = 1,
        client_id: Optional[str] = None,
        progress: Optional[bool] = None,
        catch: Tuple[Type[BaseException], ...] = (),
    ) -> "OptimizeResult":
        """Runs ``objective(trial)`` on ``n_trials`` trials with ``n_workers`` threads; an
        exception not in ``catch`` marks its trial INFEASIBLE and is raised again. See
        :func:`bo_client.optimize.optimize`."""
        from .optimize import optimize

        return optimize(self, objective, n_trials, n_workers=n_workers, client_id=client_id, progress=progress, catch=catch)


#: What :meth:`Study.export` writes.
EXPORT_FORMATS = ("json", "csv", "optuna-journal")

#: The most bytes of trials :meth:`Client.import_study` sends in one request (the server's
#: body limit is 1 MiB by default).
IMPORT_PART_BYTES = 512 * 1024


class Client:
    """One bo server, one project and location.

    ``url`` is the server (``http://127.0.0.1:8080``); ``api_key`` is sent as a bearer token;
    ``retry`` says how long a request keeps trying through 429s, 503s and dropped connections
    once the server has answered. Until it has, a server that cannot be reached is an error at
    once (within ``connect_timeout``) naming the URL and the cause; :meth:`wait_ready` waits for
    one that is starting."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:8080",
        *,
        project: str = "demo",
        location: str = "local",
        api_key: Optional[str] = None,
        timeout: float = 90.0,
        connect_timeout: float = 5.0,
        retry: RetryPolicy = RetryPolicy(),
    ) -> None:
        self._t = Transport(url, api_key, timeout=timeout, connect_timeout=connect_timeout, retry=retry)
        self.project = project
        self.location = location

    @property
    def transport(self) -> Transport:
        return self._t

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Waits until the server answers ``/readyz`` (a server still starting, a container
        coming up beside the training job); :class:`ConnectionFailed` after ``timeout`` seconds,
        with the last cause."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._t.request("GET", "/readyz")
                return
            except (ConnectionFailed, ApiError) as e:
                if time.monotonic() >= deadline:
                    raise ConnectionFailed(f"{self._t.base_url} was not ready within {timeout:.0f} s: {e}") from None
                time.sleep(0.25)

    @property
    def _path(self) -> str:
        return f"/v1/projects/{_quote(self.project)}/locations/{_quote(self.location)}"

    def create_study(
        self,
        display_name: str,
        space: Union[SearchSpace, Sequence[Json]],
        metrics: Union[Mapping[str, str], Sequence[Union[Metric, Json]]],
        *,
        algorithm: Optional[str] = None,
        algorithm_config: Optional[Mapping[str, Any]] = None,
        stopping: Optional[Stopping] = None,
        study_stopping: Optional[StudyStopping] = None,
        observation_noise: Optional[str] = None,
        measurement_selection: Optional[str] = None,
        prior_studies: Sequence[Union["Study", str]] = (),
        transfer_learning: bool = True,
        median_stopping: bool = False,
    ) -> Study:
        """Creates the study, or loads it when one of that name has the same spec (a different
        spec under the name is an :class:`ApiError` 409).

        - ``metrics``: ``{"accuracy": "MAXIMIZE"}``, or :class:`~bo_client.Metric` objects (safety
          metrics with their thresholds), or Vertex ``MetricSpec`` dicts.
        - ``algorithm``: one of bo's names (default ``AUTO``, which picks by the space) and its
          ``algorithm_config`` (the server lists every key and range).
        - ``stopping``: :class:`~bo_client.MedianStopping`, :class:`~bo_client.DecayCurveStopping`
          or :class:`~bo_client.ConvexStopping` — when to stop a trial early;
          ``median_stopping=True`` is ``stopping=MedianStopping()``.
        - ``study_stopping``: :class:`~bo_client.StudyStopping` — when the whole study stops.
        - ``observation_noise``: ``"LOW"`` or ``"HIGH"``; ``measurement_selection``:
          ``"LAST_MEASUREMENT"`` or ``"BEST_MEASUREMENT"``.
        - ``prior_studies``: studies (or their names) whose trials inform this one's model, the
          base first (otherwise the service chooses among the location's COMPLETED studies of the
          same space and objective; ``study.spec["transferLearningConfig"]["priorStudyNames"]``
          says which); ``transfer_learning=False`` turns transfer off."""
        if isinstance(metrics, Mapping):
            metric_specs = [Metric(str(k), str(g)).to_vertex() for k, g in metrics.items()]
        else:
            metric_specs = [m.to_vertex() if isinstance(m, Metric) else dict(m) for m in metrics]
        spec: Dict[str, Any] = {
            "metrics": metric_specs,
            "parameters": space.to_vertex() if isinstance(space, SearchSpace) else list(space),
        }
        if algorithm is not None and algorithm.upper() != "AUTO":
            spec["algorithm"] = algorithm.upper()
        config = dict(algorithm_config or {})
        if prior_studies:
            # bo names a study's priors in its algorithm's settings (Vertex's
            # `transferLearningConfig.priorStudyNames` is output only: which the service chose).
            config["priorStudies"] = [s.name if isinstance(s, Study) else str(s) for s in prior_studies]
        if config:
            spec["algorithmConfig"] = config
        if median_stopping:
            if stopping is not None and not isinstance(stopping, MedianStopping):
                raise ValueError("give median_stopping=True or stopping=, not both")
            stopping = stopping or MedianStopping()
        if stopping is not None:
            spec.update(stopping.to_vertex())
        if study_stopping is not None:
            spec["studyStoppingConfig"] = study_stopping.to_vertex()
        if measurement_selection is not None:
            spec["measurementSelectionType"] = measurement_selection.upper()
        if observation_noise is not None:
            spec["observationNoise"] = observation_noise.upper()
        if not transfer_learning:
            spec["transferLearningConfig"] = {"disableTransferLearning": True}
        return Study(self, self._t.request("POST", f"{self._path}/studies", {"displayName": display_name, "studySpec": spec}))

    def load_study(self, display_name: str) -> Study:
        """The study of that name (:class:`ApiError` 404 when there is none)."""
        return Study(self, self._t.request("POST", f"{self._path}/studies:lookup", {"displayName": display_name}))

    def study(self, study_id: int) -> Study:
        """The study of that number."""
        return Study(self, self._t.request("GET", f"{self._path}/studies/{int(study_id)}"))

    def studies(self) -> Iterator[Study]:
        """Every study of the project and location."""
        token: Optional[str] = None
        while True:
            page = self._t.request("GET", f"{self._path}/studies", query={"pageToken": token} if token else None)
            for s in page.get("studies", []):
                yield Study(self, s)
            token = page.get("nextPageToken")
            if not token:
                return

    def import_study(self, path: Union[str, "os.PathLike[str]"], *, display_name: Optional[str] = None, part_bytes: int = IMPORT_PART_BYTES) -> Study:
        """Creates a study of this project and location from a file :meth:`Study.export` wrote
        (format ``"json"``, from this server or another), with every trial, its id, state,
        measurements and times, and the model's state; returns it. ``display_name`` defaults to
        the exported study's (a study of that name here is an :class:`ApiError` 409).

        The trials go in parts of at most ``part_bytes`` (``POST …/studies:import``, then
        ``…/imports/{id}:append``) and the study appears in one step at the end (``:commit``):
        all of it or, after any failure (Ctrl-C too), nothing — the upload is deleted. An
        Optuna journal is read by ``bo-server import --format optuna-journal``, which takes the
        search space it lacks."""
        import json

        with open(path, "rb") as f:
            head = f.read(64)
            if head.lstrip()[:1] != b"{":
                raise ValueError(f"{os.fspath(path)} is not bo's JSON export (an Optuna journal or CSV cannot be imported over REST)")
            f.seek(0)
            try:
                doc = json.load(f)
            except ValueError as e:
                raise ValueError(f"{os.fspath(path)} is not bo's JSON export: {e}") from None
        if not isinstance(doc, dict) or "boExportFormat" not in doc:
            raise ValueError(f"{os.fspath(path)} is not bo's JSON export (it has no boExportFormat)")
        trials: List[Json] = doc.pop("trials", None) or []
        parts: List[List[Json]] = [[]]
        size = 0
        for t in trials:
            n = len(json.dumps(t, allow_nan=False)) + 1
            if parts[-1] and size + n > part_bytes:
                parts.append([])
                size = 0
            parts[-1].append(t)
            size += n
        query = {"displayName": display_name} if display_name is not None else None
        upload = self._t.request("POST", f"{self._path}/studies:import", {**doc, "trials": parts[0]}, query=query)
        name = upload["name"].rsplit("/", 1)[-1]
        at = f"{self._path}/imports/{_quote(name)}"
        try:
            for part in parts[1:]:
                last = int(part[-1]["id"])

                def already_there(last: int = last) -> Tuple[bool, Json]:
                    # The part reached the server before the connection broke.
                    now = self._t.request("GET", at)
                    return int(now.get("lastTrialId", "0")) >= last, now

                self._t.request("POST", f"{at}:append", {"trials": part}, on_ambiguous=already_there)

            def committed() -> Tuple[bool, Json]:
                try:
                    self._t.request("GET", at)
                    return False, None
                except ApiError as e:
                    if e.status != 404:
                        raise
                    target = display_name if display_name is not None else doc.get("study", {}).get("displayName", "")
                    return True, self._t.request("POST", f"{self._path}/studies:lookup", {"displayName": target})

            return Study(self, self._t.request("POST", f"{at}:commit", {}, on_ambiguous=committed))
        except BaseException:
            try:
                self._t.request("DELETE", at)
            except Exception:
                pass  # it expires by itself
            raise

    def _wait(self, op: Json, *, timeout: float = 3600.0) -> Json:
        """Polls a long-running operation until it is done; raises its error."""
        deadline = time.monotonic() + timeout
        wait = 0.05
        while not op.get("done"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"operation {op.get('name')} not done after {timeout:.0f} s")
            time.sleep(wait)
            wait = min(wait * 1.5, 2.0)
            op = self._t.request("GET", "/v1/" + "/".join(_quote(s) for s in op["name"].split("/")))
        if op.get("error"):
            err = op["error"]
            raise ApiError(200, str(err.get("status", err.get("code", ""))), str(err.get("message", "")))
        return op

