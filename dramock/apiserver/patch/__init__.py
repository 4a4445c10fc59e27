"""PATCH bodies applied the way kube-apiserver applies them, one module per format.

* `json_patch`: JSON patch (RFC 6902, application/json-patch+json).
* `merge_patch`: JSON merge patch (RFC 7386, application/merge-patch+json).
* `strategic`: strategic merge patch (application/strategic-merge-patch+json), with its directives
  (`directives`), list ordering (`strategic_order`) and failures (`strategic_errors`).
* `common`: the answers and body decoding the formats share.

All functions are pure: they return a new object and raise `APIError` for bad input.
"""

from .common import BAD_JSON_PATCH, GENERIC_422_MESSAGE, generic_unprocessable
from .json_patch import MAX_JSON_PATCH_COPY_BYTES, MAX_JSON_PATCH_OPERATIONS, apply_json_patch
from .merge_patch import apply_merge_patch
from .strategic import apply_strategic_merge_patch

__all__ = [
    "BAD_JSON_PATCH",
    "GENERIC_422_MESSAGE",
    "MAX_JSON_PATCH_COPY_BYTES",
    "MAX_JSON_PATCH_OPERATIONS",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_strategic_merge_patch",
    "generic_unprocessable",
]
