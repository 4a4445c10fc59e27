"""DeviceClass: selectors, configuration and the extended resource name."""

from __future__ import annotations

from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.validation.core import is_extended_resource_name
from dramock.schemas.validation.field import Cause, Obj, _dict, _list, _str, child, invalid_value
from dramock.schemas.validation.resource.cel import _validate_selector
from dramock.schemas.validation.resource.common import validate_slice
from dramock.schemas.validation.resource.config import _validate_device_configuration
from dramock.schemas.validation.resource.limits import DEVICE_CONFIG_MAX_SIZE, DEVICE_SELECTORS_MAX_SIZE


def validate_device_class(obj: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    return _validate_device_class_spec(_dict(obj.get("spec")), None, "spec", gates)


def validate_device_class_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    return _validate_device_class_spec(_dict(new.get("spec")), _dict(old.get("spec")), "spec", gates)


def _validate_device_class_spec(spec: Obj, old_spec: Obj | None, path: str, gates: FeatureGates | None
                                ) -> list[Cause]:
    # Unchanged selectors (or configs) were valid when stored and are not compiled / limited again.
    stored = old_spec is not None and spec.get("selectors") == old_spec.get("selectors")
    errs = validate_slice(_list(spec.get("selectors")), DEVICE_SELECTORS_MAX_SIZE,
                          lambda s, p: _validate_selector(_dict(s), p, stored, gates), child(path, "selectors"))
    stored = old_spec is not None and spec.get("config") == old_spec.get("config")
    errs += validate_slice(_list(spec.get("config")), DEVICE_CONFIG_MAX_SIZE,
                           lambda c, p: _validate_device_configuration(_dict(c), p, stored), child(path, "config"))
    name = spec.get("extendedResourceName")
    if name is not None and not is_extended_resource_name(_str(name)):
        errs.append(invalid_value(child(path, "extendedResourceName"), _str(name),
                                  "must be a valid extended resource name"))
    return errs
