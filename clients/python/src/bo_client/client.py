"""Studies and trials as a Vizier user knows them, over bo's REST API.

    client = Client("http://127.0.0.1:8080", project="demo")
    study = client.create_study("mnist", space, metrics={"accuracy": "MAXIMIZE"})
    for trial in study.suggest(count=2, client_id="worker-1"):
        trial.add_measurement({"accuracy": 0.91}, step=100)
        if not trial.should_stop():
            trial.complete({"accuracy": 0.94})

Every call is one request (or a page loop, or an operation poll); objects hold what the server
last said and :meth:`Trial.refresh` reads it again. The loop over a function is
:meth:`Study.optimize` (``optimize.py``). The study and its trials are ``study.py``'s; this file
opens studies: creates, finds, lists and imports them."""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ._http import ApiError, ConnectionFailed, RetryPolicy, Transport, quote
from .measurement import Measurement, Metrics, Prediction
from .space import SearchSpace
from .spec import Metric, MedianStopping, Stopping, StudyStopping
from .study import Study, Trial

logger = logging.getLogger("bo_client")

# Measurement, Prediction, Study and Trial are re-exported: ``from bo_client.client import Trial``
# keeps working.
__all__ = ["Client", "Measurement", "Prediction", "Study", "Trial", "Metrics"]

Json = Any

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

    def ping(self) -> None:
        """Checks that the server answers (``GET /healthz``): :class:`ConnectionFailed` within the
        connect timeout, naming the URL and the cause, when nothing does."""
        self._t.request("GET", "/healthz")

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
        return f"/v1/projects/{quote(self.project)}/locations/{quote(self.location)}"

    def create_study(
        self,
        display_name: str,
        space: Union[SearchSpace, Sequence[Json], None],
        metrics: Union[Mapping[str, str], Sequence[Union[Metric, Json]]],
        *,
        open_space: bool = False,
        trial_lease: Optional[float] = None,
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
        - ``open_space=True``: the space grows as trials ask for parameters (a define-by-run
          objective; ``space`` may then be ``None``): :meth:`Trial.add_parameters`.
        - ``trial_lease``: seconds a running trial's client may go unseen before the trial goes
          to another client (a worker killed mid-trial); default: the server's ``--trial-lease``.
        - ``prior_studies``: studies (or their names) whose trials inform this one's model, the
          base first (otherwise the service chooses among the location's COMPLETED studies of the
          same space and objective; ``study.spec["transferLearningConfig"]["priorStudyNames"]``
          says which); ``transfer_learning=False`` turns transfer off."""
        if isinstance(metrics, Mapping):
            metric_specs = [Metric(str(k), str(g)).to_vertex() for k, g in metrics.items()]
        else:
            metric_specs = [m.to_vertex() if isinstance(m, Metric) else dict(m) for m in metrics]
        if space is None and not open_space:
            raise ValueError("a study needs a search space, unless open_space=True (it grows as trials ask)")
        spec: Dict[str, Any] = {
            "metrics": metric_specs,
            "parameters": space.to_vertex() if isinstance(space, SearchSpace) else list(space or []),
        }
        if open_space:
            spec["openSearchSpace"] = True
        if algorithm is not None and algorithm.upper() != "AUTO":
            spec["algorithm"] = algorithm.upper()
        config = dict(algorithm_config or {})
        if trial_lease is not None:
            config["trialLease"] = f"{float(trial_lease):g}s"
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
        ``…/imports/{id}:append``) and the study appears in one step at the end (``:commit``,
        which the server may answer with its progress while it runs on; this waits for it):
        all of it or, after any failure before the commit ends (Ctrl-C too), nothing — the
        upload is deleted. An
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
        at = f"{self._path}/imports/{quote(name)}"
        try:
            for part in parts[1:]:
                last = int(part[-1]["id"])

                def already_there(last: int = last) -> Tuple[bool, Json]:
                    # The part reached the server before the connection broke.
                    now = self._t.request("GET", at)
                    return int(now.get("lastTrialId", "0")) >= last, now

                self._t.request("POST", f"{at}:append", {"trials": part}, on_ambiguous=already_there)

            # A commit outlasting the server's wait answers 202 with the upload's progress and
            # runs on; asked again (a resend after a lost answer too) it answers the study.
            while True:
                answer = self._t.request("POST", f"{at}:commit", {})
                if "/imports/" not in str(answer.get("name", "")):
                    return Study(self, answer)
                logger.info("importing %s: %s of %s trials moved", name, answer.get("committedTrialCount"), answer.get("trialCount"))
                time.sleep(0.5)
        except BaseException:
            try:
                self._t.request("DELETE", at)
            except Exception:
                pass  # it expires by itself
            raise
