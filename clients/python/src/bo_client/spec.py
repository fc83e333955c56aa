"""A study's spec beyond its search space, typed: metrics with goals and safety thresholds, the
automated stopping rules, the study's own stopping rules and transfer from prior studies — every
field of Vertex's ``StudySpec`` that bo accepts, so nothing needs raw JSON.

    client.create_study(
        "mnist", space,
        metrics=[bo.Metric("accuracy", "MAXIMIZE"), bo.Metric("latency_ms", "MINIMIZE", safety_threshold=50)],
        stopping=bo.DecayCurveStopping(),
        study_stopping=bo.StudyStopping(max_num_trials=200, max_num_trials_no_progress=40),
        prior_studies=[old_study],
    )

Each class's ``to_vertex()`` gives its wire form; ``tests/test_spec.py`` checks against the
server's OpenAPI document that every ``StudySpec`` field can be set from here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Union

__all__ = [
    "ConvexStopping",
    "DecayCurveStopping",
    "MedianStopping",
    "Metric",
    "Stopping",
    "StudyStopping",
    "SuccessiveHalvingStopping",
]

Json = Any

_GOALS = ("MAXIMIZE", "MINIMIZE")


def _seconds(value: float, what: str) -> str:
    """A proto3 duration: ``"3600s"``."""
    seconds = float(value)
    if not seconds >= 0:
        raise ValueError(f"{what}: {value!r} is not a duration in seconds")
    return f"{seconds:.9f}".rstrip("0").rstrip(".") + "s"


@dataclass(frozen=True)
class Metric:
    """A metric the trials report: optimised toward ``goal`` — or, with ``safety_threshold``,
    a safety constraint: a trial is safe when the metric is at least the threshold (MAXIMIZE) or
    at most it (MINIMIZE), and the designer keeps ``desired_min_safe_trials_fraction`` of trials
    safe (best effort)."""

    id: str
    goal: str = "MAXIMIZE"
    safety_threshold: Optional[float] = None
    desired_min_safe_trials_fraction: Optional[float] = None

    def __post_init__(self) -> None:
        if self.goal.upper() not in _GOALS:
            raise ValueError(f"metric {self.id!r}: goal must be MAXIMIZE or MINIMIZE, got {self.goal!r}")
        object.__setattr__(self, "goal", self.goal.upper())

    @property
    def is_safety(self) -> bool:
        return self.safety_threshold is not None or self.desired_min_safe_trials_fraction is not None

    def to_vertex(self) -> Json:
        out: Dict[str, Any] = {"metricId": self.id, "goal": self.goal}
        if self.is_safety:
            safety: Dict[str, Any] = {}
            if self.safety_threshold is not None:
                safety["safetyThreshold"] = float(self.safety_threshold)
            if self.desired_min_safe_trials_fraction is not None:
                safety["desiredMinSafeTrialsFraction"] = float(self.desired_min_safe_trials_fraction)
            out["safetyConfig"] = safety
        return out


@dataclass(frozen=True)
class MedianStopping:
    """Stop a trial whose best value so far is worse than the median of the completed trials'
    at the same step (or elapsed time, with ``use_elapsed_duration``) — by default the median of
    their running averages up to that step, Vizier's rule; with
    ``median_of="VALUE_AT_POSITION"`` the median of their values at the step itself, among the
    trials trained in full, Optuna's ``MedianPruner``. ``min_completed_trials`` completed trials
    must have reached the step first (default 3); a trial is judged from ``min_step_count`` on
    and, with ``interval_steps``, only at its first step past each interval boundary (Optuna's
    ``n_startup_trials``, ``n_warmup_steps`` and ``interval_steps``)."""

    use_elapsed_duration: bool = False
    min_completed_trials: Optional[int] = None
    min_step_count: Optional[float] = None
    interval_steps: Optional[float] = None
    median_of: Optional[str] = None

    def to_vertex(self) -> Json:
        spec: Dict[str, Any] = {"useElapsedDuration": self.use_elapsed_duration}
        if self.min_completed_trials is not None:
            spec["minCompletedTrials"] = int(self.min_completed_trials)
        if self.min_step_count is not None:
            spec["minStepCount"] = float(self.min_step_count)
        if self.interval_steps is not None:
            spec["intervalSteps"] = float(self.interval_steps)
        if self.median_of is not None:
            if self.median_of.upper() not in ("RUNNING_AVERAGE", "VALUE_AT_POSITION"):
                raise ValueError(f"median_of must be RUNNING_AVERAGE or VALUE_AT_POSITION, got {self.median_of!r}")
            spec["medianOf"] = self.median_of.upper()
        return {"medianAutomatedStoppingSpec": spec}


@dataclass(frozen=True)
class DecayCurveStopping:
    """Stop a trial whose learning curve, extrapolated, will not beat the best so far."""

    use_elapsed_duration: bool = False

    def to_vertex(self) -> Json:
        return {"decayCurveStoppingSpec": {"useElapsedDuration": self.use_elapsed_duration}}


@dataclass(frozen=True)
class ConvexStopping:
    """Vizier's convex rule: between ``min_step_count`` and ``max_step_count`` (steps, or
    seconds with ``use_elapsed_duration``), stop a trial whose curve's optimistic prediction
    cannot beat the best; ``learning_rate_parameter_name`` names a DOUBLE parameter the
    prediction uses."""

    min_step_count: Optional[int] = None
    max_step_count: Optional[int] = None
    min_measurement_count: Optional[int] = None
    learning_rate_parameter_name: str = ""
    use_elapsed_duration: bool = False
    update_all_stopped_trials: bool = False

    def to_vertex(self) -> Json:
        spec: Dict[str, Any] = {"useElapsedDuration": self.use_elapsed_duration, "updateAllStoppedTrials": self.update_all_stopped_trials}
        for key, value in (
            ("minStepCount", self.min_step_count),
            ("maxStepCount", self.max_step_count),
            ("minMeasurementCount", self.min_measurement_count),
        ):
            if value is not None:
                spec[key] = str(int(value))
        if self.learning_rate_parameter_name:
            spec["learningRateParameterName"] = self.learning_rate_parameter_name
        return {"convexAutomatedStoppingSpec": spec}


@dataclass(frozen=True)
class SuccessiveHalvingStopping:
    """Asynchronous successive halving (ASHA's promotion rule; a bo extension): at rungs
    ``min_step_count * reduction_factor**k`` below ``max_step_count`` (a full training, in steps
    or seconds with ``use_elapsed_duration``), a trial goes on only while it is among the best
    ``1 / reduction_factor`` of the trials that reached its rung (at the last rung, of those
    started before it: a newcomer never stops the leader there, so the first trial to reach the
    last rung trains in full). A stopped trial's result is
    partial: the model learns its value at the rung where it stopped, and it is not the study's
    best while a trial trained in full is there.

    ``brackets`` above 1 makes it asynchronous Hyperband: bracket ``b`` starts ``b`` rungs higher,
    each trial is judged within its bracket, and trials are spread over brackets as Hyperband
    spreads them (at most the number of rungs).

    ``promotion`` says which trials at a rung go on: ``"QUANTILE"`` (Ray Tune's ASHA; the default)
    those at least as good as the ``1 - 1/reduction_factor`` quantile of the others' values there;
    ``"TOP_K"`` (ASHA's paper, Optuna's ``SuccessiveHalvingPruner``) those among the best
    ``max(1, n // reduction_factor)`` of the ``n`` values there, their own included — stricter
    while few trials have reached the rung.

    ``resume=True`` is ASHA with checkpoints (Li et al. 2020, Algorithm 2), for training code that
    saves a checkpoint and can go on from it: every trial pauses at each rung (``should_stop()``
    says so; save a checkpoint and complete it), and a paused trial that becomes one of the best
    ``n // reduction_factor`` at its rung comes back from ``suggest`` as a new trial with
    ``resumed_from`` (the paused trial's id) and ``resumed_at`` (its last step): load that trial's
    checkpoint and train on from there. One bracket; promotion ``"TOP_K"`` (the default with it)."""

    max_step_count: int
    min_step_count: int = 1
    reduction_factor: float = 3.0
    use_elapsed_duration: bool = False
    brackets: int = 1
    promotion: Optional[str] = None
    resume: bool = False

    def __post_init__(self) -> None:
        if self.promotion not in (None, "QUANTILE", "TOP_K"):
            raise ValueError(f"promotion must be QUANTILE or TOP_K, got {self.promotion!r}")
        if self.resume and self.promotion == "QUANTILE":
            raise ValueError("resume=True promotes by ASHA's top k: promotion must be TOP_K or unset")
        if self.resume and int(self.brackets) != 1:
            raise ValueError(f"resume=True resumes within one bracket: brackets must be 1, got {self.brackets!r}")

    def to_vertex(self) -> Json:
        spec: Json = {
            "minStepCount": str(int(self.min_step_count)),
            "maxStepCount": str(int(self.max_step_count)),
            "reductionFactor": float(self.reduction_factor),
            "useElapsedDuration": bool(self.use_elapsed_duration),
            "brackets": int(self.brackets),
        }
        if self.promotion is not None:
            spec["promotion"] = self.promotion
        if self.resume:
            spec["resume"] = True
        return {"successiveHalvingStoppingSpec": spec}


@dataclass(frozen=True)
class StudyStopping:
    """When the whole study stops (``studyStoppingConfig``), read before each suggestion:
    ``should_stop_asap``; at ``max_num_trials``; after ``max_num_trials_no_progress`` completed
    trials or ``max_duration_no_progress`` seconds without a better objective (one objective
    only) — never before ``min_num_trials`` trials or ``minimum_runtime`` seconds; and at
    ``maximum_runtime`` seconds after the study's creation (or at ``maximum_end_time``, RFC 3339)."""

    should_stop_asap: bool = False
    min_num_trials: Optional[int] = None
    max_num_trials: Optional[int] = None
    max_num_trials_no_progress: Optional[int] = None
    max_duration_no_progress: Optional[float] = None
    minimum_runtime: Optional[float] = None
    minimum_end_time: Optional[str] = None
    maximum_runtime: Optional[float] = None
    maximum_end_time: Optional[str] = None

    def to_vertex(self) -> Json:
        out: Dict[str, Any] = {}
        if self.should_stop_asap:
            out["shouldStopAsap"] = True
        for key, value in (
            ("minNumTrials", self.min_num_trials),
            ("maxNumTrials", self.max_num_trials),
            ("maxNumTrialsNoProgress", self.max_num_trials_no_progress),
        ):
            if value is not None:
                out[key] = int(value)
        if self.max_duration_no_progress is not None:
            out["maxDurationNoProgress"] = _seconds(self.max_duration_no_progress, "max_duration_no_progress")
        for key, seconds, end in (
            ("minimumRuntimeConstraint", self.minimum_runtime, self.minimum_end_time),
            ("maximumRuntimeConstraint", self.maximum_runtime, self.maximum_end_time),
        ):
            if seconds is not None and end is not None:
                raise ValueError(f"{key}: give a runtime in seconds or an end time, not both")
            if seconds is not None:
                out[key] = {"maxDuration": _seconds(seconds, key)}
            elif end is not None:
                out[key] = {"endTime": end}
        return out


#: One of the automated stopping rules (a study has at most one).
Stopping = Union[MedianStopping, DecayCurveStopping, ConvexStopping, SuccessiveHalvingStopping]
