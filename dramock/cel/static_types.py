"""The static CEL types the checker works with (bool, int, list(T), map(K, V), optional_type(T), named
object types and type parameters), the type identifiers (`int`, `list`...), and assignability with
type-parameter binding."""

from __future__ import annotations


class StaticType:
    """A static CEL type. kind: bool int uint double string bytes null_type dyn error list map type
    optional_type obj (name) param (name)."""

    __slots__ = ("kind", "name", "params")

    def __init__(self, kind: str, params: tuple = (), name: str = ""):
        self.kind, self.params, self.name = kind, params, name

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, StaticType) and self.kind == other.kind and self.name == other.name
                and self.params == other.params)

    def __hash__(self) -> int:
        return hash((self.kind, self.params, self.name))

    def __str__(self) -> str:
        k = self.kind
        if k == "list":
            return f"list({self.params[0]})"
        if k == "map":
            return f"map({self.params[0]}, {self.params[1]})"
        if k == "type":
            return f"type({self.params[0]})" if self.params else "type"
        if k == "optional_type":
            return f"optional_type({self.params[0]})"
        if k in ("obj", "param"):
            return self.name
        if k == "error":
            return "*error*"
        return k

    __repr__ = __str__


BOOL, INT, UINT, DOUBLE = StaticType("bool"), StaticType("int"), StaticType("uint"), StaticType("double")
STRING, BYTES, NULL = StaticType("string"), StaticType("bytes"), StaticType("null_type")
DYN, ERR = StaticType("dyn"), StaticType("error")
QUANTITY = StaticType("obj", name="kubernetes.Quantity")
SEMVER = StaticType("obj", name="kubernetes.Semver")
PARAM_A, PARAM_B = StaticType("param", name="A"), StaticType("param", name="B")


def list_of(e: StaticType) -> StaticType:
    return StaticType("list", (e,))


def map_of(k: StaticType, v: StaticType) -> StaticType:
    return StaticType("map", (k, v))


def optional_of(e: StaticType) -> StaticType:
    return StaticType("optional_type", (e,))


def type_of(e: StaticType | None = None) -> StaticType:
    return StaticType("type", (e,) if e is not None else ())


TYPE_IDENTIFIERS = {"bool": BOOL, "int": INT, "uint": UINT, "double": DOUBLE, "string": STRING, "bytes": BYTES,
                    "null_type": NULL, "list": list_of(DYN), "map": map_of(DYN, DYN), "type": type_of()}
TYPE_VALUE_NAMES = {"bool": "bool", "int": "int", "uint": "uint", "double": "double", "string": "string",
                    "bytes": "bytes", "null_type": "null_type", "list": "list", "map": "map", "type": "type"}


def is_dyn(t: StaticType) -> bool:
    return t.kind == "dyn" or t.kind == "error"


def assignable(formal: StaticType, actual: StaticType, b: dict) -> bool:
    """Is `actual` assignable to `formal`, binding the type parameters of `formal` in `b`."""
    fk = formal.kind
    if fk == "param":
        cur = b.get(formal.name)
        if cur is None:
            b[formal.name] = actual
            return True
        if assignable(cur, actual, {}):
            return True
        if assignable(actual, cur, {}):
            b[formal.name] = actual
            return True
        return False
    ak = actual.kind
    if fk == "dyn" or fk == "error" or ak == "dyn" or ak == "error":
        if formal.params:
            for p in formal.params:
                assignable(p, DYN, b)
        return True
    if fk != ak:
        return False
    if fk == "obj":
        return formal.name == actual.name
    if fk == "type":  # type values compare whatever type they denote: type(1) == string
        return True
    if len(formal.params) != len(actual.params):
        return len(formal.params) == 0 or len(actual.params) == 0
    return all(assignable(fp, ap, b) for fp, ap in zip(formal.params, actual.params, strict=True))


def substitute(t: StaticType, b: dict) -> StaticType:
    if t.kind == "param":
        return b.get(t.name) or DYN
    if t.params:
        return StaticType(t.kind, tuple(substitute(p, b) for p in t.params), t.name)
    return t
