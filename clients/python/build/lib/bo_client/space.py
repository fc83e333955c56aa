"""A search space written in code, conditional children included, and its Vertex form.

    space = SearchSpace()
    optimizer = space.categorical("optimizer", ["sgd", "adam"])
    optimizer.when("sgd").float("momentum", 0.0, 0.99)
    optimizer.when("adam").float("beta1", 0.8, 0.999)
    space.float("learning_rate", 1e-5, 0.1, log=True)
    space.integer("layers", 1, 8)

``when(value, …)`` opens the children that are active when the parent takes one of the values;
they nest to any depth. :meth:`SearchSpace.to_vertex` gives ``studySpec.parameters``;
:meth:`SearchSpace.from_vertex` reads them back. Checks here are the ones a typo needs at once
(a duplicate name, an empty range); the server checks every limit."""

from __future__ import annotations

import builtins
import math
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

__all__ = ["Parameter", "SearchSpace", "Value"]

#: A parameter's value: a float or int for numbers, a str for a categorical.
Value = Union[float, int, str]

_KINDS = ("DOUBLE", "INTEGER", "DISCRETE", "CATEGORICAL")


@dataclass
class Parameter:
    """One parameter and the children under its values. Built by :class:`SearchSpace`."""

    name: str
    kind: str
    low: Optional[float] = None
    high: Optional[float] = None
    values: Tuple[Value, ...] = ()
    scale: Optional[str] = None
    default: Optional[Value] = None
    children: List[Tuple[Tuple[Value, ...], "SearchSpace"]] = field(default_factory=list)
    _root: Optional["SearchSpace"] = field(default=None, repr=False, compare=False)

    def when(self, *values: Value) -> "SearchSpace":
        """The children active when this parameter takes one of ``values`` (each child may have
        children of its own). Calling it again with the same values adds to the same group."""
        if self.kind == "DOUBLE":
            raise ValueError(f"{self.name}: a DOUBLE parameter cannot have children (Vertex conditions name values)")
        if not values:
            raise ValueError(f"{self.name}.when(): name at least one value")
        for v in values:
            self._check_value(v)
        for existing, sub in self.children:
            if existing == tuple(values):
                return sub
        sub = SearchSpace(_root=self._root)
        self.children.append((tuple(values), sub))
        return sub

    def _check_value(self, v: Value) -> None:
        if self.kind == "CATEGORICAL":
            if v not in self.values:
                raise ValueError(f"{self.name}: {v!r} is not one of {list(self.values)}")
        elif self.kind == "DISCRETE":
            if not any(float(v) == float(x) for x in self.values):
                raise ValueError(f"{self.name}: {v!r} is not one of {list(self.values)}")
        elif self.kind == "INTEGER":
            assert self.low is not None and self.high is not None
            if not isinstance(v, int) or isinstance(v, bool) or not self.low <= v <= self.high:
                raise ValueError(f"{self.name}: {v!r} is not an integer in [{self.low:g}, {self.high:g}]")

    def to_vertex(self) -> Dict[str, Any]:
        """This parameter as a Vertex ``ParameterSpec``."""
        spec: Dict[str, Any] = {"parameterId": self.name}
        if self.kind == "DOUBLE":
            spec["doubleValueSpec"] = {"minValue": self.low, "maxValue": self.high}
            if self.default is not None:
                spec["doubleValueSpec"]["defaultValue"] = self.default
        elif self.kind == "INTEGER":
            assert self.low is not None and self.high is not None
            spec["integerValueSpec"] = {"minValue": str(int(self.low)), "maxValue": str(int(self.high))}
            if self.default is not None:
                spec["integerValueSpec"]["defaultValue"] = str(self.default)
        elif self.kind == "DISCRETE":
            spec["discreteValueSpec"] = {"values": list(self.values)}
            if self.default is not None:
                spec["discreteValueSpec"]["defaultValue"] = self.default
        else:
            spec["categoricalValueSpec"] = {"values": list(self.values)}
            if self.default is not None:
                spec["categoricalValueSpec"]["defaultValue"] = self.default
        if self.scale is not None:
            spec["scaleType"] = self.scale
        conditionals = []
        for values, sub in self.children:
            for child in sub.parameters:
                cond: Dict[str, Any]
                if self.kind == "CATEGORICAL":
                    cond = {"parentCategoricalValues": {"values": list(values)}}
                elif self.kind == "INTEGER":
                    cond = {"parentIntValues": {"values": [str(v) for v in values]}}
                else:
                    cond = {"parentDiscreteValues": {"values": list(values)}}
                conditionals.append({**cond, "parameterSpec": child.to_vertex()})
        if conditionals:
            spec["conditionalParameterSpecs"] = conditionals
        return spec


class SearchSpace:
    """Parameters at one level: the study's roots, or the children under a parent's values."""

    def __init__(self, _root: Optional["SearchSpace"] = None) -> None:
        self.parameters: List[Parameter] = []
        self._root = _root if _root is not None else self

    # -- building ---------------------------------------------------------------------------

    def float(
        self, name: str, low: builtins.float, high: builtins.float, *, log: bool = False, scale: Optional[str] = None, default: Optional[builtins.float] = None
    ) -> Parameter:
        """A real number in ``[low, high]``; ``log=True`` searches it on a log scale (Vertex's
        ``UNIT_LOG_SCALE``; ``scale=`` takes any Vertex scale type by name)."""
        if not (math.isfinite(low) and math.isfinite(high)) or low >= high:
            raise ValueError(f"{name}: need finite low < high, got [{low}, {high}]")
        if log and low <= 0:
            raise ValueError(f"{name}: a log scale needs low > 0, got {low}")
        return self._add(Parameter(name, "DOUBLE", float(low), float(high), scale=_scale(log, scale), default=default))

    def integer(
        self, name: str, low: int, high: int, *, log: bool = False, scale: Optional[str] = None, default: Optional[int] = None
    ) -> Parameter:
        """An integer in ``[low, high]`` (both included)."""
        if isinstance(low, bool) or isinstance(high, bool) or int(low) != low or int(high) != high or low > high:
            raise ValueError(f"{name}: need integers low <= high, got [{low}, {high}]")
        if log and low <= 0:
            raise ValueError(f"{name}: a log scale needs low > 0, got {low}")
        return self._add(Parameter(name, "INTEGER", int(low), int(high), scale=_scale(log, scale), default=default))

    def discrete(self, name: str, values: Sequence[builtins.float], *, log: bool = False, default: Optional[builtins.float] = None) -> Parameter:
        """One of the given numbers (ordered: the model knows 0.1 is nearer 0.2 than 0.9)."""
        if not values:
            raise ValueError(f"{name}: give at least one value")
        return self._add(Parameter(name, "DISCRETE", values=tuple(sorted(values)), scale=_scale(log, None), default=default))

    def categorical(self, name: str, values: Sequence[str], *, default: Optional[str] = None) -> Parameter:
        """One of the given strings (unordered)."""
        if not values or not all(isinstance(v, str) for v in values):
            raise ValueError(f"{name}: give at least one value, each a string")
        return self._add(Parameter(name, "CATEGORICAL", values=tuple(values), default=default))

    def _add(self, p: Parameter) -> Parameter:
        if p.name in self._root.names():
            raise ValueError(f"parameter {p.name!r} is already in the search space (names are unique across the tree)")
        p._root = self._root
        self.parameters.append(p)
        return p

    # -- reading ----------------------------------------------------------------------------

    def walk(self) -> Iterator[Parameter]:
        """Every parameter of the tree, parents before their children."""
        for p in self.parameters:
            yield p
            for _, sub in p.children:
                yield from sub.walk()

    def names(self) -> List[str]:
        return [p.name for p in self.walk()]

    def __getitem__(self, name: str) -> Parameter:
        for p in self.walk():
            if p.name == name:
                return p
        raise KeyError(name)

    def active(self, parameters: Dict[str, Value]) -> List[str]:
        """The parameters active under ``parameters``' values, in tree order."""
        out: List[str] = []

        def visit(space: SearchSpace) -> None:
            for p in space.parameters:
                out.append(p.name)
                value = parameters.get(p.name)
                for values, sub in p.children:
                    if value is not None and any(_same(value, v) for v in values):
                        visit(sub)

        visit(self)
        return out

    def to_vertex(self) -> List[Dict[str, Any]]:
        """``studySpec.parameters``."""
        return [p.to_vertex() for p in self.parameters]

    @classmethod
    def from_vertex(cls, specs: Sequence[Dict[str, Any]]) -> "SearchSpace":
        """Reads ``studySpec.parameters`` (as the server returns them)."""
        space = cls()
        for spec in specs:
            _read(space, spec)
        return space


def _same(a: Value, b: Value) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return float(a) == float(b)


def _scale(log: bool, scale: Optional[str]) -> Optional[str]:
    if log and scale not in (None, "UNIT_LOG_SCALE"):
        raise ValueError(f"log=True and scale={scale!r} disagree")
    return "UNIT_LOG_SCALE" if log else scale


def _read(space: SearchSpace, spec: Dict[str, Any]) -> None:
    name = spec["parameterId"]
    scale = spec.get("scaleType")
    if scale in (None, "", "SCALE_TYPE_UNSPECIFIED", "UNIT_LINEAR_SCALE"):
        scale = None
    p: Parameter
    if "doubleValueSpec" in spec:
        d = spec["doubleValueSpec"]
        p = space._add(Parameter(name, "DOUBLE", float(d.get("minValue", 0.0)), float(d.get("maxValue", 0.0)), scale=scale, default=d.get("defaultValue")))
    elif "integerValueSpec" in spec:
        d = spec["integerValueSpec"]
        default = d.get("defaultValue")
        p = space._add(
            Parameter(name, "INTEGER", int(d.get("minValue", 0)), int(d.get("maxValue", 0)), scale=scale, default=None if default is None else int(default))
        )
    elif "discreteValueSpec" in spec:
        d = spec["discreteValueSpec"]
        p = space._add(Parameter(name, "DISCRETE", values=tuple(d.get("values", [])), scale=scale, default=d.get("defaultValue")))
    elif "categoricalValueSpec" in spec:
        d = spec["categoricalValueSpec"]
        p = space._add(Parameter(name, "CATEGORICAL", values=tuple(d.get("values", [])), default=d.get("defaultValue")))
    else:
        raise ValueError(f"parameter {name!r} has none of the value specs bo knows: {sorted(spec)}")
    for cond in spec.get("conditionalParameterSpecs", []):
        values: Tuple[Value, ...]
        if "parentCategoricalValues" in cond:
            values = tuple(cond["parentCategoricalValues"]["values"])
        elif "parentIntValues" in cond:
            values = tuple(int(v) for v in cond["parentIntValues"]["values"])
        else:
            values = tuple(cond["parentDiscreteValues"]["values"])
        group = next((sub for vs, sub in p.children if vs == values), None)
        if group is None:
            group = SearchSpace(_root=space._root)
            p.children.append((values, group))
        _read(group, cond["parameterSpec"])
