"""Intermediate measurements sent in the background, and the study's stopping rule answered
between the server's answers — what makes a pruning step cost what a local pruner costs.

A training loop reports a step and asks at once whether to stop. Here a report is queued and a
thread sends each trial's queue in order, several steps in one request (``measurements``, a bo
extension), asking the rule each time (``checkEarlyStopping``). The question is answered from
what the server last said of the trial: its decision, and under the median rule its thresholds
at the next steps (the median of the completed trials' running averages), against the trial's
own best value so far — the comparison the server makes. The thresholds depend on the
completed trials only, the same for every running trial, so the answers about any trial of
the study serve all of them (a new trial's first steps are judged by its predecessors'
answers); the newest answer covering a step wins. Nothing is lost: a request is retried
through a restart within the retry policy (a lost answer is checked on the trial before sending
again, so no step is recorded twice), and :meth:`Reports.flush` waits for a trial's steps before
it is completed. A process that dies loses at most the unsent steps of its own running trials."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ._http import Transport
from .measurement import Measurement

__all__ = ["Answer", "MedianRule", "Reports"]

Json = Any

#: The most steps one request carries.
BATCH = 200

#: The answers kept for their thresholds, newest first.
KEPT_ANSWERS = 64


@dataclass(frozen=True)
class MedianRule:
    """Where the study's median rule judges a trial: from ``min_step_count``, and with
    ``interval_steps`` only at the first step past each interval boundary (the server's
    ``medianAutomatedStoppingSpec``)."""

    min_step_count: float = 0.0
    interval_steps: Optional[float] = None

    @classmethod
    def of(cls, spec: Json) -> Optional["MedianRule"]:
        rule = spec.get("medianAutomatedStoppingSpec")
        if rule is None:
            return None
        every = rule.get("intervalSteps")
        return cls(float(rule.get("minStepCount", 0.0)), float(every) if every is not None else None)

    def judges(self, step: float, steps: Iterable[float]) -> bool:
        if step < self.min_step_count:
            return False
        if self.interval_steps is None:
            return True
        boundary = self.min_step_count + math.floor((step - self.min_step_count) / self.interval_steps) * self.interval_steps
        before = max((s for s in steps if s < step), default=-math.inf)
        return before < boundary


@dataclass(frozen=True)
class Answer:
    """What the server last said of a trial: at ``step``, whether it should stop, why, and the
    median rule's thresholds from there on (``(position, value or None)``) through
    ``through`` (``None``: for good)."""

    step: float
    should_stop: bool
    reason: str
    thresholds: Tuple[Tuple[float, Optional[float]], ...] = ()
    through: Optional[float] = None
    #: Each threshold holds at its own position only (the median of values at a position).
    pointwise: bool = False

    @classmethod
    def from_wire(cls, step: float, raw: Json) -> "Answer":
        points = tuple((float(t["position"]), float(t["value"]) if t.get("value") is not None else None) for t in raw.get("medianThresholds", []))
        through = raw.get("thresholdsThrough")
        return cls(
            step,
            bool(raw.get("shouldStop", False)),
            str(raw.get("reason", "")),
            points,
            float(through) if through is not None else None,
            bool(raw.get("thresholdsPointwise", False)),
        )

    def covers(self, step: float) -> bool:
        """Whether the thresholds say what holds at ``step``."""
        return bool(self.thresholds) and self.thresholds[0][0] <= step and (self.through is None or step <= self.through)

    def threshold(self, step: float) -> Optional[float]:
        """The threshold at ``step`` (which the answer covers); ``None``: the trial goes on."""
        value: Optional[float] = None
        for position, v in self.thresholds:
            if position == step or (position < step and not self.pointwise):
                value = v
            elif position < step:
                value = None
        return value


@dataclass
class _Stream:
    """One trial's reports: its path, what waits, what is on its way, what the server holds."""

    path: str
    held: int
    pending: List[Tuple[float, Json]] = field(default_factory=list)
    in_flight: List[Tuple[float, Json]] = field(default_factory=list)
    answer: Optional[Answer] = None
    error: Optional[BaseException] = None


class Reports:
    """The background sender of one process's intermediate measurements (see the module docs).
    Thread-safe; the sending thread starts with the first report."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport
        self._cond = threading.Condition()
        self._streams: Dict[str, _Stream] = {}
        self._order: List[str] = []
        self._thread: Optional[threading.Thread] = None
        #: The newest answers with thresholds, newest first (for every trial: see the docs).
        self._answers: List[Answer] = []

    def add(self, path: str, held: int, step: float, metrics: Dict[str, float]) -> None:
        """Queues a measurement of the trial at ``path`` (a trial's REST path; ``held``: how many
        measurements it had when its stream started)."""
        wire = Measurement(metrics, int(step) if float(step).is_integer() else None, None).to_vertex()
        with self._cond:
            stream = self._streams.setdefault(path, _Stream(path, held))
            stream.pending.append((float(step), wire))
            if path not in self._order:
                self._order.append(path)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="bo-reports", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def answer(self, path: str) -> Optional[Answer]:
        """The server's last answer about the trial, if any."""
        with self._cond:
            stream = self._streams.get(path)
            return stream.answer if stream else None

    def decide(self, path: str, step: float, best: float, maximize: bool, rule: Optional[MedianRule], steps: Iterable[float]) -> bool:
        """Whether the trial at ``path`` stops at ``step`` with ``best`` its best value so far:
        the server said so at an earlier step or this one; or, past its last answer, the median
        rule's threshold at ``step`` — from the newest answer about any trial that covers it —
        says so."""
        with self._cond:
            stream = self._streams.get(path)
            own = stream.answer if stream else None
            if own is not None and (own.should_stop or own.step >= step):
                return own.should_stop
            if rule is None or math.isnan(best) or not rule.judges(step, steps):
                return False
            covering = next((a for a in self._answers if a.covers(step)), None)
        value = covering.threshold(step) if covering is not None else None
        if value is None:
            return False
        return best < value if maximize else best > value

    def flush(self, path: str, timeout: Optional[float] = None) -> Optional[Answer]:
        """Waits until every step of the trial queued so far is on the server, and forgets the
        trial; its last answer. Raises what made sending fail (the server gone past the retry
        policy), its steps kept."""
        with self._cond:
            stream = self._streams.get(path)
            if stream is None:
                return None
            done = self._cond.wait_for(lambda: stream.error is not None or not (stream.pending or stream.in_flight), timeout)
            if stream.error is not None:
                error, stream.error = stream.error, None
                self._cond.notify_all()
                raise error
            if not done:
                raise TimeoutError(f"the measurements of {path} were not sent within {timeout} s")
            del self._streams[path]
            return stream.answer

    def _next(self) -> Tuple[_Stream, List[Tuple[float, Json]]]:
        """The next batch to send: the oldest waiting trial's steps (a trial at a time, each in
        order)."""
        with self._cond:
            while True:
                for path in list(self._order):
                    stream = self._streams.get(path)
                    if stream is None:
                        self._order.remove(path)
                        continue
                    if stream.pending and not stream.in_flight and stream.error is None:
                        batch, stream.pending = stream.pending[:BATCH], stream.pending[BATCH:]
                        stream.in_flight = batch
                        # Round robin: this trial goes last.
                        self._order.remove(path)
                        self._order.append(path)
                        return stream, batch
                self._cond.wait()

    def _run(self) -> None:
        while True:
            stream, batch = self._next()
            held = stream.held
            body = {"measurements": [m for _, m in batch], "checkEarlyStopping": True}

            def already_there(stream: _Stream = stream, held: int = held, batch: List[Tuple[float, Json]] = batch) -> Tuple[bool, Json]:
                # The batch reached the server before the connection broke.
                t = self._t.request("GET", stream.path)
                return len(t.get("measurements", [])) >= held + len(batch), t

            try:
                t = self._t.request("POST", f"{stream.path}:addTrialMeasurement", body, on_ambiguous=already_there)
            except BaseException as e:  # the server gone past the retry policy: kept, and said at flush
                with self._cond:
                    stream.pending = stream.in_flight + stream.pending
                    stream.in_flight = []
                    stream.error = e
                    self._cond.notify_all()
                continue
            with self._cond:
                stream.in_flight = []
                stream.held = held + len(batch)
                if "earlyStopping" in t:
                    stream.answer = Answer.from_wire(batch[-1][0], t["earlyStopping"])
                    if stream.answer.thresholds:
                        self._answers.insert(0, stream.answer)
                        del self._answers[KEPT_ANSWERS:]
                elif t.get("state") == "STOPPING" and stream.answer is not None:
                    stream.answer = Answer(batch[-1][0], True, "the trial was asked to stop")
                self._cond.notify_all()
