"""ResourceClaimTemplate: template metadata and the claim spec it stamps out."""

from __future__ import annotations

from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.validation.field import Cause, Obj, _dict, invalid_value, semantic_equal
from dramock.schemas.validation.meta import validate_template_object_meta
from dramock.schemas.validation.resource.deviceclaim import _validate_device_claim


def validate_resource_claim_template(obj: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    spec = _dict(obj.get("spec"))
    errs = validate_template_object_meta(spec.get("metadata"), "spec.metadata")
    return errs + _validate_device_claim(_dict(spec.get("spec")).get("devices"), "spec.spec.devices", False, gates)


def validate_resource_claim_template_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None
                                            ) -> list[Cause]:
    if not semantic_equal(new.get("spec"), old.get("spec")):
        return [invalid_value("spec", new.get("spec"), "field is immutable")]
    return []
