"""OpenAPI documents served at /openapi/v2 and /openapi/v3, built from the 1.37 definitions.

`schemas.defs` holds the definitions in kubernetes-validate's "local" JSON-schema flavour (nullable
type lists, `#/$defs/` refs, `oneOf` for Quantity/IntOrString, apiVersion/kind enums). This package turns
them back into what a kube-apiserver publishes: Swagger 2.0 with `#/definitions/` refs, and one OpenAPI
3.0 document per group-version with `#/components/schemas/` refs, `allOf` wrappers around refs that carry
siblings, and paths whose operations carry `x-kubernetes-action` / `x-kubernetes-group-version-kind`
(kubectl explain finds a resource's schema through them; kubectl's server-side field validation check
looks for the `fieldValidation` query parameter on the kind's PATCH operation).

Modules: `definitions` (schema conversion), `parameters` (query parameters and media types),
`operations` (a kind's operations as a neutral model), `paths` (that model rendered as v2 or v3),
`documents` (whole documents), `responses` (cached bodies and the HTTP answers) and `v2_protobuf`
(the v2 document as gnostic protobuf).

Documents are large: they are built once per process and cached with their ETag/hash.
"""

from .definitions import closure
from .documents import v2_document, v3_document, v3_path_of, v3_paths
from .parameters import PATCH_CONTENT_TYPES
from .responses import (
    V2_CONTENT_TYPE,
    V3_CONTENT_TYPE,
    v2_bytes,
    v2_protobuf_bytes,
    v2_response,
    v3_bytes,
    v3_index,
    v3_index_bytes,
    v3_response,
)

__all__ = [
    "PATCH_CONTENT_TYPES",
    "V2_CONTENT_TYPE",
    "V3_CONTENT_TYPE",
    "closure",
    "v2_bytes",
    "v2_document",
    "v2_protobuf_bytes",
    "v2_response",
    "v3_bytes",
    "v3_document",
    "v3_index",
    "v3_index_bytes",
    "v3_path_of",
    "v3_paths",
    "v3_response",
]
