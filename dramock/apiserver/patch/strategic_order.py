"""Strategic merge patch list order: partitioning a merged list into patch and server-only items,
upstream's element-order normalisation, and the check of a patch list against `$setElementOrder`."""

from __future__ import annotations

from typing import Any

from .directives import DIRECTIVE, SET_ELEMENT_ORDER
from .strategic_errors import _bad_arg_type, _go_eq, _go_fmt, _internal, _no_merge_key


def _find_by_key(items: list, key: str, value: Any) -> int:
    for i, v in enumerate(items):
        if not isinstance(v, dict):
            raise _internal(f"value for key {i} is not a map")
        if key in v and _go_eq(v[key], value):
            return i
    return -1


def _partition_primitives(items: list, by: list) -> tuple[list, list]:
    in_patch = [v for v in items if any(_go_eq(v, b) for b in by)]
    server_only = [v for v in items if not any(_go_eq(v, b) for b in by)]
    return in_patch, server_only


def _partition_maps(items: list, by: list, merge_key: str) -> tuple[list, list]:
    in_patch: list = []
    server_only: list = []
    for v in items:
        if not isinstance(v, dict):
            raise _bad_arg_type("map[string]interface {}", v)
        if merge_key not in v:
            raise _no_merge_key(v, merge_key)
        (in_patch if _find_by_key(by, merge_key, v[merge_key]) >= 0 else server_only).append(v)
    return in_patch, server_only


def _index(items: list, v: Any, merge_key: str, kind: type) -> int:
    """Position of `v` in `items`, by merge key value for maps and by value otherwise."""
    def val(x: Any) -> Any:
        if kind is dict:
            return x.get(merge_key) if isinstance(x, dict) else None
        return x

    target = val(v)
    for i, x in enumerate(items):
        if _go_eq(val(x), target):
            return i
    return -1


def _normalize_slice_order(to_sort: list, order: list, merge_key: str, kind: type) -> list:
    to_delete: list = []
    if kind is dict:
        for lst in (to_sort, order):
            for x in lst:
                if not isinstance(x, dict):
                    raise _bad_arg_type("map[string]interface {}", x)
                if merge_key not in x:
                    raise _no_merge_key(x, merge_key)
        to_delete = [x for x in to_sort if x.get(DIRECTIVE) == "delete"]
        to_sort = [x for x in to_sort if x.get(DIRECTIVE) != "delete"]
    # Stable sort by position in `order`; items missing from it sort first, as upstream's less() does.
    return sorted(to_sort, key=lambda x: _index(order, x, merge_key, kind)) + to_delete


def _normalize_element_order(patch_items: list, server_only: list, patch_order: list, server_order: list,
                             merge_key: str, kind: type) -> list:
    """Patch order wins among patch items, live order among server-only items; then interleave them."""
    patch_items = _normalize_slice_order(patch_items, patch_order, merge_key, kind)
    server_only = _normalize_slice_order(server_only, server_order, merge_key, kind)
    out = []
    i = j = 0
    while i < len(server_only) or j < len(patch_items):
        if i >= len(server_only):
            out.append(patch_items[j])
            j += 1
        elif j >= len(patch_items):
            out.append(server_only[i])
            i += 1
        else:
            li = _index(server_order, server_only[i], merge_key, kind)
            ri = _index(server_order, patch_items[j], merge_key, kind)
            # A server item goes first only when both are live items and it came first there; so
            # items new to the list end up ahead of the remaining live ones, as upstream does.
            if li >= 0 and ri >= 0 and li < ri:
                out.append(server_only[i])
                i += 1
            else:
                out.append(patch_items[j])
                j += 1
    return out


def _merge_key_value_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return _go_eq(left, right)
    for side in (left, right):
        if not isinstance(side, dict):
            raise _bad_arg_type("map[string]interface {}", side)
        if merge_key not in side:
            raise _no_merge_key(side, merge_key)
    return _go_eq(left[merge_key], right[merge_key])


def _validate_patch_with_set_order(patch_list: list, order: list, merge_key: str) -> None:
    """The patch list's items must appear in the `$setElementOrder` list, in the same relative order."""
    if not order or not patch_list:
        return
    items = patch_list
    if merge_key:
        for x in patch_list:
            if not isinstance(x, dict):
                raise _bad_arg_type("map[string]interface {}", x)
        items = [x for x in patch_list if x.get(DIRECTIVE) != "delete"]
    pi = si = 0
    while pi < len(items) and si < len(order):
        if isinstance(items[pi], dict) and DIRECTIVE in items[pi]:
            pi += 1
            continue
        if _merge_key_value_equal(items[pi], order[si], merge_key):
            pi += 1
        si += 1
    if pi < len(items) and si >= len(order):
        raise _internal(f"the order in patch list:\n{_go_fmt(patch_list)}\n doesn't match "
                        f"{SET_ELEMENT_ORDER} list:\n{_go_fmt(order)}")
