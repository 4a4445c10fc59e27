"""JSON values as structured-merge-diff sees them: frozen (hashable, type-tagged), compared with
value.Equals/value.Compare, and rendered the way encoding/json and value.ToString spell them."""

from __future__ import annotations

import json
from typing import Any

import orjson

Obj = dict[str, Any]


def _freeze(v: Any) -> tuple:
    """A hashable, type-tagged copy of a JSON value (so True, 1 and "1" never collide)."""
    if v is None:
        return ("z",)
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float)):
        return ("n", v)
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, list):
        return ("l", tuple(_freeze(x) for x in v))
    if isinstance(v, dict):
        return ("m", tuple(sorted((k, _freeze(x)) for k, x in v.items())))
    raise TypeError(f"not a JSON value: {v!r}")


def _thaw(f: tuple) -> Any:
    tag = f[0]
    if tag == "z":
        return None
    if tag == "l":
        return [_thaw(x) for x in f[1]]
    if tag == "m":
        return {k: _thaw(x) for k, x in f[1]}
    return f[1]


def _equal(a: Any, b: Any) -> bool:
    """Deep JSON equality where booleans never equal numbers (value.Equals)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _same(a: Any, b: Any) -> bool:
    """_equal(a, b), the usual answers found in C: `==` is looser than _equal (True == 1), never stricter, so
    it rules out a difference; the same JSON text (types and order included) rules out a bool/number pair."""
    if a is b:
        return True
    if type(a) is str:  # the commonest leaf: only another string can equal it
        return type(b) is str and a == b
    if a != b:
        return False
    try:
        if orjson.dumps(a) == orjson.dumps(b):
            return True
    except (TypeError, orjson.JSONEncodeError):
        pass
    return _equal(a, b)  # a different key order, 1 against 1.0, or what orjson does not encode


_VALUE_RANK = {"n": 0, "s": 1, "b": 2, "l": 3, "m": 4, "z": 5}


def _sign(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def _cmp_value(a: tuple, b: tuple) -> int:
    """value.Compare: numbers < strings < booleans < lists < maps < null, then by content."""
    if a[0] != b[0]:
        return _sign(_VALUE_RANK[a[0]], _VALUE_RANK[b[0]])
    if a[0] == "z":
        return 0
    if a[0] in ("l", "m"):
        for x, y in zip(a[1], b[1], strict=False):
            c = _sign(x[0], y[0]) if a[0] == "m" else 0
            c = c or (_cmp_value(x[1], y[1]) if a[0] == "m" else _cmp_value(x, y))
            if c:
                return c
        return _sign(len(a[1]), len(b[1]))
    return _sign(a[1], b[1])


# Recursive helpers are module functions, not closures: a closure that calls itself is a reference cycle, left
# for the cyclic garbage collector on every call (in the API server, most of what its collections found).

def _integral_floats_as_ints(x: Any) -> Any:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e21:
        return int(x)
    if isinstance(x, dict):
        return {k: _integral_floats_as_ints(y) for k, y in x.items()}
    if isinstance(x, list):
        return [_integral_floats_as_ints(y) for y in x]
    return x


def _go_json(v: Any, sort_keys: bool = False) -> str:
    """encoding/json output: compact, HTML-escaped, integral floats without a fraction."""
    s = json.dumps(_integral_floats_as_ints(v), separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                    ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        s = s.replace(ch, esc)
    return s


def _to_string(f: tuple) -> str:
    """value.ToString, used in path strings: strings quoted, lists and maps spelled out."""
    tag = f[0]
    if tag == "z":
        return "null"
    if tag == "s":
        return json.dumps(f[1], ensure_ascii=False)
    if tag == "b":
        return "true" if f[1] else "false"
    if tag == "n":
        v = f[1]
        return repr(int(v)) if isinstance(v, float) and v.is_integer() else repr(v)
    if tag == "l":
        return "[" + ", ".join(_to_string(x) for x in f[1]) + "]"
    return "{" + ", ".join(f"{k}={_to_string(x)}" for k, x in f[1]) + "}"
