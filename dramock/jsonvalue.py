"""Helpers for JSON-shaped values (dicts, lists, scalars): the one deep copy every layer uses."""

from __future__ import annotations

from typing import Any


def clone(value: Any, _dict: type = dict, _list: type = list) -> Any:
    """Deep copy of a JSON value, about twice as fast as copy.deepcopy (no memo, no reducers).

    Stored objects are shared by the cache, lists and watchers, so every writer works on a clone.
    """
    t = type(value)
    if t is _dict:
        return {k: clone(v) for k, v in value.items()}
    if t is _list:
        return [clone(v) for v in value]
    return value


def go_type_name(value: Any) -> str:
    """The name Go's encoding/json gives a JSON value in "cannot unmarshal X into Go value of type Y"."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    return "number"
