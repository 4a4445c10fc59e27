"""Claim constraints: matchAttribute / distinctAttribute (DRAListTypeAttributes: as sets) and the
requests' derived attributes (DRADerivedAttributes)."""

from __future__ import annotations

from typing import Any

from dramock import cel
from dramock.scheduler.allocator.model import _Dev, _Error, _Req


class _Constraint:
    def __init__(self, requests: list[str], attribute: str, distinct: bool, sets: bool = False):
        self.requests = set(requests)
        self.attribute = attribute
        self.distinct = distinct
        # DRAListTypeAttributes: values compare as sets (a scalar is a one-element set): matching values must
        # share an element, distinct ones share none.
        self.sets = sets
        self.values: list[tuple] = []

    def applies(self, req: _Req) -> bool:
        if not self.requests:
            return True
        return req.base in self.requests or (req.sub is not None and req.name in self.requests)

    def add(self, req: _Req, dev: _Dev) -> bool:
        if not self.applies(req):
            return True
        v = self._value(req, dev)
        if not self._admits(v):
            return False
        assert v is not None
        self.values.append(v)
        return True

    def admits(self, req: _Req, dev: _Dev) -> bool:
        """Whether `add` would succeed, changing nothing."""
        return not self.applies(req) or self._admits(self._value(req, dev))

    def _value(self, req: _Req, dev: _Dev) -> tuple | None:
        expr = req.derived.get(self.attribute)
        return dev.attribute(self.attribute) if expr is None else _derived_value(req, self.attribute, expr, dev)

    def _admits(self, v: tuple | None) -> bool:
        if v is None:
            return False
        if self.sets:
            return self._set_fits(v)
        if self.distinct:
            return v not in self.values
        return not self.values or self.values[0] == v

    def _set_fits(self, v: tuple) -> bool:
        new = _as_set(v)
        if self.distinct:
            return all(not (new & _as_set(old)) for old in self.values)
        common = new
        for old in self.values:
            common = common & _as_set(old)
        return bool(common)

    def remove(self, req: _Req, dev: _Dev) -> None:
        if self.applies(req):
            self.values.pop()


def _as_set(v: tuple) -> frozenset:
    """An attribute value (_attr_value's shape) as a set of typed elements: "ints" (1, 2) -> {("int", 1), ...}."""
    kind, value = v
    if kind.endswith("s") and isinstance(value, tuple):
        return frozenset((kind[:-1], x) for x in value)
    return frozenset({(kind, value)})


def _derived_value(req: _Req, name: str, expression: str, dev: _Dev) -> tuple | None:
    """A derived attribute's value for `dev`, shaped as _attr_value shapes a device attribute. A CEL error
    aborts the allocation (upstream: silent topology mismatches are worse than a failed pod)."""
    where = f"request {req.name}: derived attribute {name}"
    try:
        value = cel.compile(expression, cost_limit=None, derived_attribute=True).evaluate_value(dev.env())
    except cel.CELCompileError as e:
        raise _Error(f"{where}: CEL compile error: {e.message}") from None
    except cel.CELRuntimeError as e:
        raise _Error(f"{where}: CEL runtime error: {e.message}") from None

    def scalar(v: Any) -> tuple[str, Any] | None:
        if isinstance(v, bool):
            return ("bool", v)
        if isinstance(v, int):
            return ("int", v)
        if isinstance(v, str):
            return ("string", v)
        if isinstance(v, cel.Semver):
            return ("version", str(v))
        return None

    if isinstance(value, list):
        items = [scalar(v) for v in value]
        scalars = [i for i in items if i is not None]
        if len(scalars) != len(items) or len({i[0] for i in scalars}) > 1:
            raise _Error(f"{where}: CEL runtime error: must evaluate to a list of one scalar type")
        kind = scalars[0][0] if scalars else "string"
        return (kind + "s", tuple(i[1] for i in scalars))
    out = scalar(value)
    if out is None:
        raise _Error(f"{where}: CEL runtime error: must evaluate to a primitive scalar, not {type(value).__name__}")
    return out
