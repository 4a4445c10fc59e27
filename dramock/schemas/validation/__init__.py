"""Semantic (post-schema) validation of objects in JSON wire shape, following upstream Kubernetes 1.37.

Each function returns a list of `{"reason", "message", "field"}` causes; an empty list means valid.
"""

from dramock.schemas.validation.pod import (
    validate_pod_resource_claims,
    validate_pod_spec_resource_claims,
    validate_pod_status_resource_claims,
)
from dramock.schemas.validation.resource import (
    validate_device_class,
    validate_device_class_update,
    validate_device_taint_rule,
    validate_device_taint_rule_status_update,
    validate_device_taint_rule_update,
    validate_resource_claim,
    validate_resource_claim_status_update,
    validate_resource_claim_template,
    validate_resource_claim_template_update,
    validate_resource_claim_update,
    validate_resource_pool_status_request,
    validate_resource_pool_status_request_status_update,
    validate_resource_pool_status_request_update,
    validate_resource_slice,
    validate_resource_slice_update,
)

__all__ = [
    "validate_device_class",
    "validate_device_class_update",
    "validate_device_taint_rule",
    "validate_device_taint_rule_status_update",
    "validate_device_taint_rule_update",
    "validate_pod_resource_claims",
    "validate_pod_spec_resource_claims",
    "validate_pod_status_resource_claims",
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
