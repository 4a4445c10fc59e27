"""PATCH bodies applied the way kube-apiserver applies them.

* JSON patch (RFC 6902, application/json-patch+json) through the `jsonpatch` library, with the error
  codes of k8s.io/apiserver's patch handler (which uses evanphx/json-patch v4).
* JSON merge patch (RFC 7386, application/merge-patch+json) with evanphx/json-patch's null pruning.
* Strategic merge patch (application/strategic-merge-patch+json) after k8s.io/apimachinery's
  strategicpatch package: merge keys and patch strategies come from the 1.37 definitions, the
  `$patch`, `$retainKeys`, `$deleteFromPrimitiveList/<f>` and `$setElementOrder/<f>` directives are
  honoured, and list order follows upstream's normalisation.

All functions are pure: they return a new object and raise `APIError` for bad input.
"""

from __future__ import annotations

import json
from typing import Any

import jsonpatch
import jsonpointer

from dramock.errors import APIError, bad_request, invalid
from dramock.jsonvalue import clone, go_type_name
from dramock.schemas import defs

Obj = dict[str, Any]

# k8s.io/apiserver handlers/patch.go: maxJSONPatchOperations.
MAX_JSON_PATCH_OPERATIONS = 10000
MAX_JSON_PATCH_COPY_BYTES = 3 * 1024 * 1024  # kube-apiserver's default JSONPatchMaxCopyBytes

# The strings upstream answers for patches it cannot apply (errors.NewGenericServerResponse(422, ...)
# keeps only its own generic message) and for unusable merge patches (jsonpatch.ErrBadJSONPatch).
GENERIC_422_MESSAGE = "the server rejected our request due to an error in our request"
BAD_JSON_PATCH = "Invalid JSON Patch"

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"
SET_ELEMENT_ORDER = "$setElementOrder"

# k8s.io/apimachinery/pkg/util/mergepatch error strings.
ERR_BAD_FORMAT_PRIMITIVE_LIST = "invalid patch format of primitive list"
ERR_BAD_FORMAT_RETAIN_KEYS = "invalid patch format of retainKeys"
ERR_BAD_FORMAT_SET_ELEMENT_ORDER = "invalid patch format of setElementOrder list"
ERR_NO_LIST_OF_LISTS = "lists of lists are not supported"


# ---------------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------------


def generic_unprocessable() -> APIError:
    """errors.NewGenericServerResponse(422, "", GroupResource{}, "", msg, 0, false): msg is dropped."""
    return APIError(422, "Invalid", GENERIC_422_MESSAGE, {})


def _invalid_patch_result(result: Any) -> APIError:
    """422 answered when the patched document no longer decodes into an object (e.g. became a list)."""
    text = json.dumps(result, separators=(",", ":"))
    why = (f"couldn't get version/kind; json parse error: json: cannot unmarshal {go_type_name(result)} "
           'into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
           'Kind string "json:\\"kind,omitempty\\"" }')
    return invalid("", "", "", [{"reason": "FieldValueInvalid", "field": "patch",
                                 "message": f"Invalid value: {json.dumps(text)}: {why}"}])


def _parse_body(raw: str | bytes | bytearray) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise bad_request(str(e)) from None


def _go_fmt(v: Any) -> str:
    """fmt's %v rendering of a decoded JSON value (maps print with sorted keys), for error messages."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(int(v)) if v.is_integer() and abs(v) < 1e21 else repr(v)
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{_go_fmt(v[k])}" for k in sorted(v)) + "]"
    if isinstance(v, list):
        return "[" + " ".join(_go_fmt(x) for x in v) + "]"
    return str(v)


def _go_type(v: Any) -> str:
    """reflect.TypeOf(v).String() for a decoded JSON value."""
    if isinstance(v, dict):
        return "map[string]interface {}"
    if isinstance(v, list):
        return "[]interface {}"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int64"
    if isinstance(v, float):
        return "float64"
    if isinstance(v, str):
        return "string"
    return "<nil>"


def _go_eq(a: Any, b: Any) -> bool:
    """Go interface equality: same dynamic type and equal value (so True != 1 and 1 != 1.0)."""
    return type(a) is type(b) and a == b


# ---------------------------------------------------------------------------------------------------
# JSON patch (RFC 6902)
# ---------------------------------------------------------------------------------------------------


def apply_json_patch(obj: Obj, ops: list | str | bytes) -> Obj:
    """Apply an RFC 6902 patch. `ops` is the decoded body (or the raw body).

    Upstream: an undecodable patch is 400 BadRequest, more than 10000 operations 413, and any failing
    operation (bad path, failed `test`, unknown op) 422 Invalid with a generic message.
    """
    if isinstance(ops, (str, bytes, bytearray)):
        ops = _parse_body(ops)
    if ops is None:  # `null` decodes to an empty jsonpatch.Patch upstream
        ops = []
    if not isinstance(ops, list):
        raise bad_request(f"json: cannot unmarshal {go_type_name(ops)} into Go value of type jsonpatch.Patch")
    for op in ops:
        if op is not None and not isinstance(op, dict):
            raise bad_request(
                f"json: cannot unmarshal {go_type_name(op)} into Go value of type jsonpatch.Operation")
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise APIError(413, "RequestEntityTooLarge",
                       "Request entity too large: The allowed maximum operations in a JSON patch is "
                       f"{MAX_JSON_PATCH_OPERATIONS}, got {len(ops)}")
    doc: Any = clone(obj)
    copied = 0
    for op in ops:
        if isinstance(op, dict) and op.get("op") == "copy":
            # kube-apiserver caps what copies may add (--json-patch-max-copy-bytes): self-copies double a value.
            copied += _copy_size(doc, op.get("from"))
            if copied > MAX_JSON_PATCH_COPY_BYTES:
                raise generic_unprocessable()
        doc = _apply_one_op(doc, op)
    if not isinstance(doc, dict):
        raise _invalid_patch_result(doc)
    return doc


def _copy_size(doc: Any, pointer: Any) -> int:
    """Bytes a copy from `pointer` adds (its JSON encoding, as evanphx/json-patch counts); 0 if it cannot
    resolve (the operation then fails on its own)."""
    try:
        value = jsonpointer.resolve_pointer(doc, pointer) if isinstance(pointer, str) else None
    except (jsonpointer.JsonPointerException, KeyError, IndexError, TypeError):
        return 0
    return len(json.dumps(value, separators=(",", ":")).encode())


def _apply_one_op(doc: Any, op: dict | None) -> Any:
    if not isinstance(op, dict):
        raise generic_unprocessable()
    op = dict(op)
    kind = op.get("op")
    # evanphx/json-patch never touches the document root with these operations.
    if kind in ("add", "remove", "replace", "move", "copy") and op.get("path") == "":
        raise generic_unprocessable()
    if kind in ("move", "copy") and op.get("from") == "":
        raise generic_unprocessable()
    # evanphx treats a missing "value" as null instead of rejecting the operation.
    if kind in ("add", "replace", "test") and "value" not in op:
        op["value"] = None
    try:
        return jsonpatch.JsonPatch([op]).apply(doc, in_place=True)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, KeyError, IndexError,
            TypeError, ValueError, AttributeError):
        raise generic_unprocessable() from None  # every failure to apply is the same 422 upstream


# ---------------------------------------------------------------------------------------------------
# JSON merge patch (RFC 7386)
# ---------------------------------------------------------------------------------------------------


def apply_merge_patch(obj: Obj, patch: Any) -> Obj:
    """Apply an RFC 7386 merge patch: objects merge recursively, null deletes, anything else replaces."""
    if isinstance(patch, (str, bytes, bytearray)):
        try:
            patch = json.loads(patch)
        except (ValueError, UnicodeDecodeError):
            raise bad_request(BAD_JSON_PATCH) from None
    if isinstance(patch, list):
        # The merged document is the (pruned) array itself, which then fails to decode into the kind.
        result = [_prune_nulls(clone(x)) if x is not None else None for x in patch]
        raise _invalid_patch_result(result)
    if not isinstance(patch, dict):
        raise bad_request(BAD_JSON_PATCH)
    doc = clone(obj)
    _merge_docs(doc, clone(patch))
    return doc


def _prune_nulls(v: Any) -> Any:
    """evanphx pruneNulls: drop null members of objects, recursively (null array elements stay)."""
    if isinstance(v, dict):
        for k in [k for k, x in v.items() if x is None]:
            del v[k]
        for x in v.values():
            _prune_nulls(x)
    elif isinstance(v, list):
        for x in v:
            if x is not None:
                _prune_nulls(x)
    return v


def _merge_docs(doc: dict, patch: dict) -> None:
    for k, v in patch.items():
        if v is None:
            doc.pop(k, None)
            continue
        cur = doc.get(k)
        if cur is None:
            doc[k] = _prune_nulls(v)
        elif isinstance(cur, dict) and isinstance(v, dict):
            _merge_docs(cur, v)
        elif isinstance(cur, dict):
            doc[k] = v  # a non-object replaces an object as is
        else:
            doc[k] = _prune_nulls(v)


# ---------------------------------------------------------------------------------------------------
# Strategic merge patch
# ---------------------------------------------------------------------------------------------------


class _SMPError(Exception):
    """A strategicpatch failure; `kind` picks the answer upstream's interpretStrategicMergePatchError gives."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind  # "bad_request" | "unprocessable" | "internal"
        self.message = message


def _bad_format(message: str) -> _SMPError:
    return _SMPError("bad_request", message)


def _internal(message: str) -> _SMPError:
    return _SMPError("internal", message)


def _no_merge_key(m: dict, key: str) -> _SMPError:
    return _internal(f"map: {_go_fmt(m)} does not contain declared merge key: {key}")


def _bad_arg_type(expected: str, actual: Any) -> _SMPError:
    return _internal(f"expected a {expected}, but received a {_go_type(actual)}")


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


def _find_by_key(items: list, key: str, value: Any) -> int:
    for i, v in enumerate(items):
        if not isinstance(v, dict):
            raise _internal(f"value for key {i} is not a map")
        if key in v and _go_eq(v[key], value):
            return i
    return -1


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


def _partition_primitives(items: list, by: list) -> tuple[list, list]:
    in_patch = [v for v in items if any(_go_eq(v, b) for b in by)]
    server_only = [v for v in items if not any(_go_eq(v, b) for b in by)]
    return in_patch, server_only


def _partition_maps(items: list, by: list, merge_key: str) -> tuple[list, list]:
    in_patch, server_only = [], []
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


def _merge_set_element_order(original: dict, patch: dict, schema: defs.Schema) -> None:
    """mergePatchIntoOriginal: merge each list that has a `$setElementOrder/<field>` and order it."""
    for key in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
        order = patch.pop(key)
        if not isinstance(order, list):
            raise _bad_arg_type("[]interface {}", order)
        field = _extract_key(key, SET_ELEMENT_ORDER)
        found_original, found_patch = field in original, field in patch
        original_list, patch_list = original.get(field), patch.get(field)
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
