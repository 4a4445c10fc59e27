"""JSON patch (RFC 6902, application/json-patch+json) through the `jsonpatch` library, with the error
codes of k8s.io/apiserver's patch handler (which uses evanphx/json-patch v4)."""

from __future__ import annotations

from typing import Any

import jsonpatch
import jsonpointer

from dramock import fastjson
from dramock.errors import APIError, bad_request
from dramock.jsonvalue import clone, go_type_name

from .common import Obj, _invalid_patch_result, _parse_body, generic_unprocessable

# k8s.io/apiserver handlers/patch.go: maxJSONPatchOperations.
MAX_JSON_PATCH_OPERATIONS = 10000
MAX_JSON_PATCH_COPY_BYTES = 3 * 1024 * 1024  # kube-apiserver's default JSONPatchMaxCopyBytes


def apply_json_patch(obj: Obj, body: list | str | bytes) -> Obj:
    """Apply an RFC 6902 patch. `body` is the decoded patch (or the raw body).

    Upstream: an undecodable patch is 400 BadRequest, more than 10000 operations 413, and any failing
    operation (bad path, failed `test`, unknown op) 422 Invalid with a generic message.
    """
    ops: Any = _parse_body(body) if isinstance(body, (str, bytes, bytearray)) else body
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
        if isinstance(op, dict) and op.get("op") == "copy" and op.get("from") and op.get("path"):
            copied += _copy(doc, op, MAX_JSON_PATCH_COPY_BYTES - copied)
        else:
            doc = _apply_one_op(doc, op)
    if not isinstance(doc, dict):
        raise _invalid_patch_result(doc)
    return doc


def _copy(doc: Any, op: dict, allowed_bytes: int) -> int:
    """Apply a copy in place; return the size of the copied value's JSON encoding, which kube-apiserver caps
    across a patch (--json-patch-max-copy-bytes: self-copies double a value). The value is copied through its
    encoding: what counts its bytes also copies it, many times faster than jsonpatch's deepcopy (a patch of
    self-copies held the event loop ~100 ms)."""
    try:
        value = jsonpointer.resolve_pointer(doc, op["from"])
        encoded = fastjson.dumpb(value)
        if len(encoded) > allowed_bytes:
            raise generic_unprocessable()
        parent, key = jsonpointer.JsonPointer(op["path"]).to_last(doc)
        if isinstance(parent, dict):
            parent[key] = fastjson.loads(encoded)
        elif isinstance(parent, list) and key == "-":
            parent.append(fastjson.loads(encoded))
        elif isinstance(parent, list) and isinstance(key, int) and 0 <= key <= len(parent):
            parent.insert(key, fastjson.loads(encoded))
        else:
            raise generic_unprocessable()
    except (jsonpointer.JsonPointerException, KeyError, IndexError, TypeError, ValueError, AttributeError):
        raise generic_unprocessable() from None  # every failure to apply is the same 422 upstream
    return len(encoded)


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
