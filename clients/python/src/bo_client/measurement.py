"""What a trial reports and what the model predicts, as the client holds them: leaves that know
nothing of studies or the server."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional

from ._numbers import as_metric, as_number

__all__ = ["Measurement", "Metrics", "Prediction"]

#: Metric values by metric id.
Metrics = Mapping[str, float]

Json = Any


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
