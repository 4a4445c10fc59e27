"""Strategic merge patch directives: the `$patch`, `$retainKeys`, `$deleteFromPrimitiveList/<f>` and
`$setElementOrder/<f>` keys, their handling on maps, and their removal from content taken from a patch."""

from __future__ import annotations

from typing import Any

from .strategic_errors import (
    ERR_BAD_FORMAT_PRIMITIVE_LIST,
    ERR_BAD_FORMAT_RETAIN_KEYS,
    ERR_BAD_FORMAT_SET_ELEMENT_ORDER,
    _bad_format,
    _go_fmt,
    _internal,
)

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"
SET_ELEMENT_ORDER = "$setElementOrder"


def _discard_nulls(v: Any) -> None:
    """discardNullValuesFromPatch: a null that matches nothing in the original is dropped, not kept."""
    if isinstance(v, dict):
        for k in [k for k, x in v.items() if x is None]:
            del v[k]
        for x in v.values():
            _discard_nulls(x)
    elif isinstance(v, list):
        for x in v:
            _discard_nulls(x)


def _remove_directives(v: Any) -> tuple[Any, bool]:
    """removeDirectives: a map carrying `$patch` disappears (with its key or list slot), recursively.

    Parallel-list keys are dropped as well: upstream loses them when the result decodes into the kind.
    """
    if isinstance(v, dict):
        if DIRECTIVE in v:
            return None, False
        out = {}
        for k, x in v.items():
            if k == RETAIN_KEYS or k.startswith((SET_ELEMENT_ORDER, DELETE_FROM_PRIMITIVE_LIST)):
                continue
            x, keep = _remove_directives(x)
            if keep:
                out[k] = x
        return out, True
    if isinstance(v, list):
        out_list = []
        for x in v:
            x, keep = _remove_directives(x)
            if keep:
                out_list.append(x)
        return out_list, True
    return v, True


def _clean(v: Any) -> tuple[Any, bool]:
    """New content taken from the patch: unmatched nulls and directives are not stored."""
    _discard_nulls(v)
    return _remove_directives(v)


def _map_directive(directive: Any, patch: dict) -> dict:
    """handleDirectiveInMergeMap: `$patch: replace` keeps only the patch, `$patch: delete` empties."""
    if directive == "replace":
        rest = {k: v for k, v in patch.items() if k != DIRECTIVE}
        return _clean(rest)[0]
    if directive == "delete":
        return {}
    raise _internal(f"unknown patch type: {_go_fmt(directive)} in map: {_go_fmt(patch)}")


def _extract_key(key: str, prefix: str) -> str:
    parts = key.split("/", 1)
    if len(parts) <= 1 or parts[0] != prefix:
        if prefix == DELETE_FROM_PRIMITIVE_LIST:
            raise _bad_format(ERR_BAD_FORMAT_PRIMITIVE_LIST)
        raise _bad_format(ERR_BAD_FORMAT_SET_ELEMENT_ORDER)
    return parts[1]


def _apply_retain_keys(original: dict, patch: dict) -> None:
    """`$retainKeys`: every other key of the original is cleared; the patch may only set listed keys."""
    if RETAIN_KEYS not in patch:
        return
    retain = patch.pop(RETAIN_KEYS)
    if not isinstance(retain, list):
        raise _bad_format(ERR_BAD_FORMAT_RETAIN_KEYS)
    for k, v in patch.items():
        if v is None or k.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER)):
            continue
        if k not in retain:
            raise _bad_format(ERR_BAD_FORMAT_RETAIN_KEYS)
    for k in [k for k in original if k not in retain]:
        del original[k]
