"""JSON merge patch (RFC 7386, application/merge-patch+json) with evanphx/json-patch's null pruning."""

from __future__ import annotations

import json
from typing import Any

from dramock.errors import bad_request
from dramock.jsonvalue import clone

from .common import BAD_JSON_PATCH, Obj, _invalid_patch_result


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
