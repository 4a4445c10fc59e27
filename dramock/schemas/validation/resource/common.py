"""List and map validation as upstream's resource validation walks them (validateSlice, validateSet,
validateMap), and the feature-gate lookup every DRA check uses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.validation.field import Cause, duplicate, index, too_many


def validate_slice(items: list, max_size: int, validate_item: Callable[[Any, str], list[Cause]],
                   path: str) -> list[Cause]:
    if 0 <= max_size < len(items):
        return [too_many(path, len(items), max_size)]  # short-circuits, as a DOS protection
    errs: list[Cause] = []
    for i, item in enumerate(items):
        errs.extend(validate_item(item, index(path, i)))
    return errs


def validate_set(items: list, max_size: int, validate_item: Callable[[Any, str], list[Cause]],
                 item_key: Callable[[Any], Any], path: str,
                 render_key: Callable[[str, Any], Cause] | None = None) -> list[Cause]:
    if 0 <= max_size < len(items):
        return [too_many(path, len(items), max_size)]
    errs: list[Cause] = []
    for i, item in enumerate(items):
        errs.extend(validate_item(item, index(path, i)))
    seen: set = set()
    for i, item in enumerate(items):
        k = item_key(item)
        if k in seen:
            errs.append(render_key(index(path, i), k) if render_key else duplicate(index(path, i), k))
        else:
            seen.add(k)
    return errs


def _truncate(s: str, max_len: int) -> str:
    max_len = max(max_len, 16)
    if len(s) <= max_len:
        return s
    remaining = max_len - 3
    return s[:(remaining + 1) // 2] + "..." + s[len(s) - remaining // 2:]


def validate_map(m: dict, max_size: int, truncate_key_len: int, validate_key: Callable[[str, str], list[Cause]],
                 validate_item: Callable[[Any, str], list[Cause]], path: str) -> list[Cause]:
    if 0 <= max_size < len(m):
        return [too_many(path, len(m), max_size)]
    errs: list[Cause] = []
    short = max(truncate_key_len, 16)  # keys no longer than this are not truncated
    for k, item in m.items():
        errs.extend(validate_key(k, path))  # key errors are reported on the map itself
        errs.extend(validate_item(item, f"{path}[{k if len(k) <= short else _truncate(k, truncate_key_len)}]"))
    return errs


def _gate(gates: FeatureGates | None, name: str) -> bool:
    return (gates or FeatureGates()).enabled(name)
