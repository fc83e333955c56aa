"""Numbers as the ML stack hands them over: Python's own, numpy scalars of every width, 0-d (or
one-element) arrays, torch and jax scalars, ``decimal.Decimal``, ``fractions.Fraction`` —
anything with ``__float__`` or ``__index__`` — made plain ``float``/``int`` before they reach
the wire. ``bool`` (Python's, numpy's, a boolean tensor) is refused: ``True`` as a metric is
far more often a bug than a 1. Strings are refused too (``"0.5"`` is not a measured value).
Every refusal is a ``ValueError`` naming ``what`` the value was for and the value.

No import of numpy, torch or jax: their values are recognised by the protocols they implement."""

from __future__ import annotations

import math
import operator
from typing import Any, Union

__all__ = ["as_metric", "as_number", "as_parameter_value"]


def _shape(value: Any) -> Any:
    shape = getattr(value, "shape", None)
    if shape is None or isinstance(value, (int, float)):
        return None
    try:
        return tuple(int(n) for n in shape)
    except TypeError:
        return None


def _is_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    # numpy.bool_ / numpy.bool, a boolean array or tensor: their dtype says so.
    dtype = getattr(value, "dtype", None)
    if dtype is not None and "bool" in str(dtype):
        return True
    return type(value).__name__ in ("bool_", "bool8")


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def as_number(value: Any, what: str) -> Union[int, float]:
    """``value`` as a plain ``int`` (when it is an integer type) or ``float``; see the module."""
    if _is_bool(value):
        raise ValueError(f"{what}: {_describe(value)} is a boolean, not a number")
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{what}: {_describe(value)} is a string, not a number")
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    shape = _shape(value)
    if shape is not None:
        # An array, tensor or numpy scalar: its one element as Python's own number (``item``),
        # taken off autograd's graph first (a loss that still requires grad is a common return).
        if math.prod(shape) != 1:
            raise ValueError(f"{what}: an array of shape {shape}, not one number")
        detach = getattr(value, "detach", None)
        item = getattr(detach() if callable(detach) else value, "item", None)
        if callable(item):
            return as_number(item(), what)
    kind = type(value)
    if hasattr(kind, "__index__"):  # an integer type by definition (PEP 357)
        return operator.index(value)
    if hasattr(kind, "__float__"):
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError) as e:
            raise ValueError(f"{what}: {_describe(value)} is not a number ({e})") from None
    raise ValueError(f"{what}: {_describe(value)} (a {kind.__name__}) is not a number")


def as_metric(value: Any, metric: str) -> float:
    """A metric's value: a finite ``float`` (``ValueError`` naming the metric otherwise)."""
    number = float(as_number(value, f"metric {metric!r}"))
    if not math.isfinite(number):
        raise ValueError(f"metric {metric!r}: {number!r} is not a finite number")
    return number


def as_parameter_value(value: Any, parameter: str) -> Union[int, float, str]:
    """A parameter's value: a ``str`` as it is (a categorical), else a finite number."""
    if isinstance(value, str):
        return value
    number = as_number(value, f"parameter {parameter!r}")
    if isinstance(number, float) and not math.isfinite(number):
        raise ValueError(f"parameter {parameter!r}: {number!r} is not a finite number")
    return number
