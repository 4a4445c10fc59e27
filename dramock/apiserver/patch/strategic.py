"""Strategic merge patch (application/strategic-merge-patch+json) after k8s.io/apimachinery's
strategicpatch package: merge keys and patch strategies come from the 1.37 definitions, maps merge
recursively and lists merge by merge key (or as sets of primitives) or are replaced."""

from __future__ import annotations

from typing import Any

from dramock.errors import APIError, bad_request
from dramock.jsonvalue import clone, go_type_name
from dramock.schemas import defs

from .common import Obj, _parse_body, generic_unprocessable
from .directives import (
    DELETE_FROM_PRIMITIVE_LIST,
    DIRECTIVE,
    SET_ELEMENT_ORDER,
    _apply_retain_keys,
    _clean,
    _extract_key,
    _map_directive,
)
from .strategic_errors import ERR_NO_LIST_OF_LISTS, _bad_arg_type, _go_eq, _go_fmt, _internal, _no_merge_key, _SMPError
from .strategic_order import (
    _find_by_key,
    _normalize_element_order,
    _partition_maps,
    _partition_primitives,
    _validate_patch_with_set_order,
)


def apply_strategic_merge_patch(obj: Obj, patch: Any, definition_name: str) -> Obj:
    """Apply a strategic merge patch to `obj`, an object of the 1.37 definition `definition_name`."""
    if isinstance(patch, (str, bytes, bytearray)):
        patch = _parse_body(patch)
    if patch is None:  # `null` unmarshals into an empty map upstream
        patch = {}
    if not isinstance(patch, dict):
        raise bad_request(f"json: cannot unmarshal {go_type_name(patch)} into Go value of type "
                          "map[string]interface {}")
    schema = defs.definition(definition_name)
    try:
        return _merge_map(clone(obj), clone(patch), schema)
    except _SMPError as e:
        if e.kind == "bad_request":
            raise bad_request(e.message) from None
        if e.kind == "unprocessable":
            raise generic_unprocessable() from None
        # Errors upstream does not translate reach the client as a bare 500 with the error text.
        raise APIError(500, "", e.message) from None


def _prop(schema: defs.Schema, key: str) -> defs.Schema:
    """The (unresolved) schema of `key` in an object or map schema; {} when unknown (JSON-merge rules)."""
    props = schema.get("properties")
    if props is not None and key in props:
        return props[key]
    add = schema.get("additionalProperties")
    return add if isinstance(add, dict) else {}


def _patch_meta(prop: defs.Schema) -> tuple[str, str]:
    """(patch strategy without retainKeys, merge key) the way extractRetainKeysPatchStrategy splits them."""
    strategies = [s for s in (prop.get("x-kubernetes-patch-strategy") or "").split(",") if s]
    if len(strategies) > 2 or (len(strategies) == 2 and "retainKeys" not in strategies):
        raise _internal(f"unexpected patch strategy: [{' '.join(strategies)}]")
    rest = [s for s in strategies if s != "retainKeys"]
    return (rest[0] if rest else ""), (prop.get("x-kubernetes-patch-merge-key") or "")


def _elem_schema(prop: defs.Schema) -> defs.Schema:
    return defs.resolve(prop.get("items") or defs.resolve(prop).get("items"))


def _merge_map(original: dict | None, patch: dict, schema: defs.Schema) -> dict:
    if DIRECTIVE in patch:
        return _map_directive(patch[DIRECTIVE], patch)
    if original is None:
        original = {}
    _apply_retain_keys(original, patch)
    _merge_set_element_order(original, patch, schema)

    for key in list(patch):
        patch_v = patch[key]
        is_delete_list = key.startswith(DELETE_FROM_PRIMITIVE_LIST)
        k = _extract_key(key, DELETE_FROM_PRIMITIVE_LIST) if is_delete_list else key

        if patch_v is None:  # null deletes; an unmatched null is ignored
            original.pop(k, None)
            continue
        if k not in original or type(original[k]) is not type(patch_v):
            # Absent or of another JSON type: the patch value replaces (a deletion list never adds).
            if not is_delete_list:
                v, keep = _clean(patch_v)
                if keep:
                    original[k] = v
                else:
                    original.pop(k, None)
            continue

        prop = _prop(schema, k)
        strategy, merge_key = _patch_meta(prop)
        if isinstance(patch_v, dict):
            if strategy == "replace":
                original[k] = _clean(patch_v)[0]
            else:
                original[k] = _merge_map(original[k], patch_v, defs.resolve(prop))
        elif isinstance(patch_v, list):
            original[k] = _merge_slice_handler(original[k], patch_v, prop, strategy, merge_key,
                                               is_delete_list)
        else:
            original[k] = patch_v
    return original


def _merge_slice_handler(original: list, patch: list, prop: defs.Schema, strategy: str, merge_key: str,
                         is_delete_list: bool) -> list:
    if strategy == "merge" or is_delete_list:
        return _merge_slice(original, patch, _elem_schema(prop), merge_key, is_delete_list)
    return _clean(patch)[0]  # lists without the merge strategy are replaced wholesale


def _slice_elem_type(*lists: list) -> type:
    """sliceElementType: every element of every list must share one type, and not be a list."""
    prev: type | None = None
    for lst in lists:
        for v in lst:
            if prev is None:
                prev = type(v)
                if prev is list:
                    raise _SMPError("unprocessable", ERR_NO_LIST_OF_LISTS)
            elif type(v) is not prev:
                raise _internal("list element types are not identical: "
                                + " ".join(_go_fmt(x) for x in lists))
    if prev is None:
        raise _internal("no elements in any of the given slices")
    return prev


def _merge_slice(original: list, patch: list, elem_schema: defs.Schema, merge_key: str,
                 is_delete_list: bool) -> list:
    if not original and not patch:
        return original
    kind = _slice_elem_type(original, patch)
    if kind is not dict:
        if is_delete_list:
            return [v for v in original if not any(_go_eq(v, d) for d in patch)]
        merged: list = []
        for v in original + patch:  # union without duplicates
            if not any(_go_eq(v, m) for m in merged):
                merged.append(v)
    else:
        if not merge_key:
            raise _internal("cannot merge lists without merge key for map")
        original, patch = _merge_special_elements(original, patch, merge_key)
        merged = _merge_without_special_elements(original, patch, merge_key, elem_schema)

    if merge_key:
        patch_items, server_only = _partition_maps(merged, patch, merge_key)
    else:
        patch_items, server_only = _partition_primitives(merged, patch)
    return _normalize_element_order(patch_items, server_only, patch, original, merge_key, kind)


def _merge_special_elements(original: list, patch: list, merge_key: str) -> tuple[list, list]:
    """`$patch: delete` removes matching entries, `$patch: replace` makes the patch list the result."""
    plain = []
    replace = False
    for v in patch:
        if DIRECTIVE not in v:
            plain.append(v)
            continue
        directive = v[DIRECTIVE]
        if directive == "delete":
            if merge_key not in v:
                raise _no_merge_key(v, merge_key)
            while (i := _find_by_key(original, merge_key, v[merge_key])) >= 0:
                original = original[:i] + original[i + 1:]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise _internal("merging lists cannot yet be specified in the patch")
        else:
            raise _internal(f"unknown patch type: {_go_fmt(directive)} in map: {_go_fmt(v)}")
    if replace:
        return [_clean(v)[0] for v in plain], []
    return original, plain


def _merge_without_special_elements(original: list, patch: list, merge_key: str,
                                    elem_schema: defs.Schema) -> list:
    out = list(original)
    for v in patch:
        if merge_key not in v:
            raise _no_merge_key(v, merge_key)
        i = _find_by_key(out, merge_key, v[merge_key])
        if i >= 0:
            out[i] = _merge_map(out[i], v, elem_schema)
        else:
            out.append(_clean(v)[0])
    return out


def _merge_set_element_order(original: dict, patch: dict, schema: defs.Schema) -> None:
    """mergePatchIntoOriginal: merge each list that has a `$setElementOrder/<field>` and order it."""
    for key in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
        order = patch.pop(key)
        if not isinstance(order, list):
            raise _bad_arg_type("[]interface {}", order)
        field = _extract_key(key, SET_ELEMENT_ORDER)
        found_original, found_patch = field in original, field in patch
        original_list: Any = original.get(field)  # a list when found (checked below)
        patch_list: Any = patch.get(field)
        if found_original and not isinstance(original_list, list):
            raise _bad_arg_type("[]interface {}", original_list)
        if found_patch and not isinstance(patch_list, list):
            raise _bad_arg_type("[]interface {}", patch_list)
        prop = _prop(schema, field)
        strategy, merge_key = _patch_meta(prop)
        _validate_patch_with_set_order(patch_list or [], order, merge_key)

        if found_original and found_patch:
            merged = _merge_slice_handler(original_list, patch_list, prop, strategy, merge_key, False)
        elif found_original:
            merged = original_list
        elif found_patch:
            merged = _clean(patch_list)[0]
        else:
            continue

        if merge_key:
            patch_items, server_only = _partition_maps(merged, order, merge_key)
        else:
            patch_items, server_only = _partition_primitives(merged, order)
        kind = _slice_elem_type(original_list or [], patch_list or [])
        original[field] = _normalize_element_order(patch_items, server_only, order, original_list or [],
                                                   merge_key, kind)
        patch.pop(field, None)
