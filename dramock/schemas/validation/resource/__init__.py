"""Semantic validation of resource.k8s.io objects, as upstream's pkg/apis/resource/validation does it.

Objects are plain dicts in JSON wire shape (v1). Every public function returns a list of causes
(`{"reason", "message", "field"}`) with upstream's reasons, field paths (`spec.devices.requests[0].
exactly.deviceClassName`) and messages (`Invalid value: "x": ...`, `Too many: 33: must have at most 32
items`, ...).

Scope: the spec / status rules of each kind. The generic ObjectMeta checks (name format, namespace,
labels, annotations, immutable metadata on update) are the strategy's `validate_object_meta` and
`validate_object_meta_update`; every DRA kind uses a DNS-subdomain name, which is its default.

Where upstream has moved a rule to declarative validation only (derived attribute names, compatibility
groups, skipNodeOperations enum), the declarative rule's message is used; elsewhere the handwritten
function's message is used.

One module per kind (deviceclass, resourceclaim, resourceclaimtemplate, resourceslice, devicetaintrule,
resourcepoolstatusrequest), and the pieces they share:

- `limits`: the API's size limits and enumerations;
- `common`: list / map walking (validateSlice, validateSet, validateMap) and feature-gate lookup;
- `names`: driver, pool, UID and attribute / capacity names;
- `cel`: CEL selector length, compilation and cost;
- `deviceclaim`: a claim's device requests, constraints and configuration (claims and templates);
- `attributes`, `capacity`: a ResourceSlice device's attribute values and capacity request policies;
- `taints`, `config`, `binding`: device taints and tolerations, opaque configuration, binding conditions
  and skipNodeOperations.

Generic field errors, names, metadata and core (node selector) checks live beside this package in
`field`, `names`, `meta` and `core`.
"""

from dramock.schemas.validation.resource.deviceclass import validate_device_class, validate_device_class_update
from dramock.schemas.validation.resource.devicetaintrule import (
    validate_device_taint_rule,
    validate_device_taint_rule_status_update,
    validate_device_taint_rule_update,
)
from dramock.schemas.validation.resource.resourceclaim import (
    validate_resource_claim,
    validate_resource_claim_status_update,
    validate_resource_claim_update,
)
from dramock.schemas.validation.resource.resourceclaimtemplate import (
    validate_resource_claim_template,
    validate_resource_claim_template_update,
)
from dramock.schemas.validation.resource.resourcepoolstatusrequest import (
    validate_resource_pool_status_request,
    validate_resource_pool_status_request_status_update,
    validate_resource_pool_status_request_update,
)
from dramock.schemas.validation.resource.resourceslice import validate_resource_slice, validate_resource_slice_update

__all__ = [
    "validate_device_class",
    "validate_device_class_update",
    "validate_device_taint_rule",
    "validate_device_taint_rule_status_update",
    "validate_device_taint_rule_update",
    "validate_resource_claim",
    "validate_resource_claim_status_update",
    "validate_resource_claim_template",
    "validate_resource_claim_template_update",
    "validate_resource_claim_update",
    "validate_resource_pool_status_request",
    "validate_resource_pool_status_request_status_update",
    "validate_resource_pool_status_request_update",
    "validate_resource_slice",
    "validate_resource_slice_update",
]
