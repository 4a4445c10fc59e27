"""Runtime CEL values, shared by the evaluator and the libraries: the uint, type and optional value types,
the runtime shape of a device (DeviceEnv and its per-domain maps), the CEL type names of Python values,
and CEL equality."""

from __future__ import annotations

from typing import Any

from dramock.cel.semver import Semver
from dramock.schemas.quantity import Quantity


class UInt(int):
    """A CEL `uint` value (Python int subclass, so arithmetic must re-wrap)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


class CelType:
    """A CEL type value (`type(x)`, `int`, `list`...)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __eq__(self, other: object) -> bool:
        return type(other) is CelType and other.name == self.name

    def __hash__(self) -> int:
        return hash(("type", self.name))

    def __repr__(self) -> str:
        return self.name


class CelOptional:
    """A CEL `optional_type` value."""

    __slots__ = ("present", "value")

    def __init__(self, present: bool, value: Any = None):
        self.present = present
        self.value = value

    def __eq__(self, other: object) -> bool:
        if type(other) is not CelOptional:
            return False
        if not self.present or not other.present:
            return self.present == other.present
        return cel_equals(self.value, other.value)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"optional.of({self.value!r})" if self.present else "optional.none()"


OPTIONAL_NONE = CelOptional(False)


class DomainMap(dict):
    """device.attributes / device.capacity: looking up an unknown domain yields an empty map (upstream),
    while `in`, size and iteration only see the real domains."""

    __slots__ = ()

    def __missing__(self, key: Any) -> dict:
        if type(key) is str:
            return _EMPTY_MAP
        raise KeyError(key)


_EMPTY_MAP: dict = {}  # shared, never mutated


class DeviceEnv(dict):
    """The evaluation input for one device: {"driver", "attributes", "capacity", "allowMultipleAllocations"}
    with attributes/capacity grouped by domain (see device_env)."""

    __slots__ = ()


_TNAMES: dict[type, str] = {
    bool: "bool", int: "int", UInt: "uint", float: "double", str: "string", bytes: "bytes",
    type(None): "null_type", list: "list", dict: "map", DomainMap: "map", DeviceEnv: "kubernetes.DRADevice",
    Quantity: "kubernetes.Quantity", Semver: "kubernetes.Semver", CelType: "type", CelOptional: "optional_type"}
GO_TYPE_NAMES: dict[type, str] = {
    bool: "types.Bool", int: "types.Int", UInt: "types.Uint", float: "types.Double", str: "types.String",
    bytes: "types.Bytes", type(None): "types.Null", Quantity: "cel.Quantity", Semver: "cel.Semver",
    CelType: "types.Type", CelOptional: "*types.Optional"}
NUMERIC_TYPES = frozenset({int, UInt, float})
ORDERED_TYPES = frozenset({int, UInt, float, str, bytes, bool})


def type_name(v: Any) -> str:
    return _TNAMES.get(type(v)) or ("map" if isinstance(v, dict) else type(v).__name__)


def cel_equals(a: Any, b: Any) -> bool:
    """CEL runtime equality (heterogeneous: numbers compare by value, other mixed types are unequal)."""
    ta = type(a)
    tb = type(b)
    if ta is tb:
        if ta is list:
            return len(a) == len(b) and all(cel_equals(x, y) for x, y in zip(a, b, strict=True))
        if ta is dict or ta is DomainMap:
            return _map_eq(a, b)
        return a == b
    if ta in NUMERIC_TYPES and tb in NUMERIC_TYPES:
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return _map_eq(a, b)
    return False


def _map_eq(a: dict, b: dict) -> bool:
    if len(a) != len(b):
        return False
    for k, v in a.items():
        if not dict.__contains__(b, k) or not cel_equals(v, dict.__getitem__(b, k)):
            return False
    return True
