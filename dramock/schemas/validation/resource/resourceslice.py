"""ResourceSlice: pool, node selection, shared counters and devices."""

from __future__ import annotations

from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.validation.core import validate_node_name, validate_node_selector
from dramock.schemas.validation.field import Cause, Obj, _dict, _list, _str, child, index, invalid_value, key, required
from dramock.schemas.validation.names import validate_dns1123_label
from dramock.schemas.validation.resource.attributes import _validate_device_attribute
from dramock.schemas.validation.resource.binding import _validate_binding_parameters, _validate_skip_node_operations
from dramock.schemas.validation.resource.capacity import (
    _validate_multi_allocatable_capacity,
    _validate_node_allocatable_resources,
    _validate_single_allocatable_capacity,
)
from dramock.schemas.validation.resource.common import validate_map, validate_set, validate_slice
from dramock.schemas.validation.resource.limits import (
    ATTRIBUTE_AND_CAPACITY_MAX_KEY_LENGTH,
    DEVICE_COMPATIBILITY_GROUPS_MAX_SIZE,
    DEVICE_TAINTS_MAX_LENGTH,
    RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE,
    RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE,
    RESOURCE_SLICE_MAX_COUNTER_SETS,
    RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET,
    RESOURCE_SLICE_MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION,
    RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE,
    RESOURCE_SLICE_MAX_DEVICES,
    RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES,
)
from dramock.schemas.validation.resource.names import (
    _dv_fully_qualified_name,
    validate_driver_name,
    validate_pool_name,
    validate_qualified_name,
)
from dramock.schemas.validation.resource.taints import _validate_device_taint


def validate_resource_slice(obj: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    return _validate_resource_slice_spec(_dict(obj.get("spec")), None, "spec", gates)


def validate_resource_slice_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    return _validate_resource_slice_spec(_dict(new.get("spec")), _dict(old.get("spec")), "spec", gates)


def _have_device_taints(devices: list) -> bool:
    for d in devices:
        if isinstance(d, dict) and _list(d.get("taints")):
            return True
    return False


def _have_consumes_counters(devices: list) -> bool:
    for d in devices:
        if isinstance(d, dict) and _list(d.get("consumesCounters")):
            return True
    return False


def _have_list_attributes(devices: list) -> bool:
    for d in devices:
        attributes = d.get("attributes") if isinstance(d, dict) else None
        if not isinstance(attributes, dict):
            continue
        for a in attributes.values():
            if isinstance(a, dict) and (a.get("bools") is not None or a.get("ints") is not None
                                        or a.get("strings") is not None or a.get("versions") is not None):
                return True
    return False


def _validate_resource_slice_spec(spec: Obj, old_spec: Obj | None, path: str,
                                  gates: FeatureGates | None) -> list[Cause]:
    driver = _str(spec.get("driver"))
    pool = _dict(spec.get("pool"))
    errs = validate_driver_name(driver, child(path, "driver"))
    errs += validate_pool_name(_str(pool.get("name")), child(path, "pool", "name"))
    count = pool.get("resourceSliceCount") or 0
    if not isinstance(count, int) or count <= 0:
        errs.append(invalid_value(child(path, "pool", "resourceSliceCount"), count, "must be greater than zero"))
    generation = pool.get("generation") or 0
    if isinstance(generation, int) and generation < 0:
        errs.append(invalid_value(child(path, "pool", "generation"), generation,
                                  "must be greater than or equal to zero"))
    if old_spec is not None:
        old_pool = _dict(old_spec.get("pool"))
        if _str(pool.get("name")) != _str(old_pool.get("name")):
            errs.append(invalid_value(child(path, "pool", "name"), _str(pool.get("name")), "field is immutable"))
        if driver != _str(old_spec.get("driver")):
            errs.append(invalid_value(child(path, "driver"), driver, "field is immutable"))
        if spec.get("nodeName") != old_spec.get("nodeName"):
            errs.append(invalid_value(child(path, "nodeName"), spec.get("nodeName"), "field is immutable"))

    set_fields: list[str] = []
    node_name = spec.get("nodeName")
    if node_name is not None:
        if node_name != "":
            set_fields.append("`nodeName`")
            errs += validate_node_name(_str(node_name), child(path, "nodeName"))
        else:
            errs.append(invalid_value(child(path, "nodeName"), "", "must be either unset or set to a non-empty "
                                      "string"))
    if spec.get("nodeSelector") is not None:
        set_fields.append("`nodeSelector`")
        errs += validate_node_selector(spec.get("nodeSelector"), child(path, "nodeSelector"))
        terms = _dict(spec.get("nodeSelector")).get("nodeSelectorTerms")
        if len(_list(terms)) != 1:
            errs.append(invalid_value(child(path, "nodeSelector", "nodeSelectorTerms"), terms,
                                      "must have exactly one node selector term"))
    for flag in ("allNodes", "perDeviceNodeSelection"):
        if spec.get(flag) is not None:
            if spec.get(flag) is True:
                set_fields.append(f"`{flag}`")
            else:
                errs.append(invalid_value(child(path, flag), spec.get(flag), "must be either unset or set to true"))
    one_of = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
    if not set_fields:
        errs.append(required(path, one_of))
    elif len(set_fields) > 1:
        errs.append(invalid_value(path, "{" + ", ".join(set_fields) + "}", one_of + ", but multiple fields are set"))

    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        errs.append(invalid_value(path, "", "only one of `sharedCounters` or `devices` is allowed"))

    devices = _list(spec.get("devices"))
    max_devices = RESOURCE_SLICE_MAX_DEVICES
    if _have_device_taints(devices) or _have_consumes_counters(devices) or _have_list_attributes(devices):
        max_devices = RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES
    old_devices = {_str(_dict(d).get("name")): _dict(d) for d in _list((old_spec or {}).get("devices"))}
    per_device = spec.get("perDeviceNodeSelection") is True
    errs += validate_set(devices, max_devices,
                         lambda d, p: _validate_device(_dict(d), old_devices.get(_str(_dict(d).get("name"))) if
                                                       old_spec is not None else None, p, per_device, gates),
                         lambda d: _str(_dict(d).get("name")), child(path, "devices"))
    errs += validate_set(_list(spec.get("sharedCounters")), RESOURCE_SLICE_MAX_COUNTER_SETS,
                         lambda c, p: _validate_counter_set(_dict(c), p), lambda c: _str(_dict(c).get("name")),
                         child(path, "sharedCounters"))
    if spec.get("partitionTypeAttribute") is not None:
        errs += _validate_partition_type_attribute(spec, path)
    errs += _validate_skip_node_operations(spec.get("skipNodeOperations"), child(path, "skipNodeOperations"))
    return errs


def _validate_partition_type_attribute(spec: Obj, path: str) -> list[Cause]:
    name = _str(spec.get("partitionTypeAttribute"))
    p = child(path, "partitionTypeAttribute")
    devices = _list(spec.get("devices"))
    format_errs = _dv_fully_qualified_name(name, p)
    if not _have_consumes_counters(devices):
        return format_errs + [invalid_value(p, name, "may only be set on a slice which declares devices that "
                                            "consume counters")]
    if format_errs:
        return format_errs
    driver = _str(spec.get("driver"))
    bare = name[len(driver) + 1:] if name.startswith(driver + "/") else ""
    errs: list[Cause] = []
    for i, device in enumerate(devices):
        device = _dict(device)
        if not _list(device.get("consumesCounters")):
            continue
        attr_path = key(child(index(child(path, "devices"), i), "attributes"), name)
        attributes = _dict(device.get("attributes"))
        attribute = attributes.get(name)
        if attribute is None and bare:
            attribute = attributes.get(bare)
        if attribute is None:
            errs.append(required(attr_path, "device consumes counters and `partitionTypeAttribute` names this "
                                 "attribute, so it must be set"))
        elif _dict(attribute).get("string") is None:
            errs.append(invalid_value(attr_path, attribute, "must be a string value because `partitionTypeAttribute` "
                                      "names this attribute"))
    return errs


def _validate_counter_set(counter_set: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    name = _str(counter_set.get("name"))
    if not name:
        errs.append(required(child(path, "name")))
    else:
        errs += validate_dns1123_label(name, child(path, "name"))
    counters = _dict(counter_set.get("counters"))
    if not counters:
        errs.append(required(child(path, "counters")))
    else:
        errs += validate_map(counters, RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET, 63, validate_dns1123_label,
                             lambda c, p: [], child(path, "counters"))
    return errs


def _num_attribute_values(attributes: dict) -> int:
    n = 0
    for attr in attributes.values():
        values = 0
        if isinstance(attr, dict):
            for k in ("bools", "ints", "strings", "versions"):
                v = attr.get(k)
                if isinstance(v, list):
                    values += len(v)
        n += values or 1  # a scalar attribute (or list ones all empty) counts once
    return n


def _validate_device(device: Obj, old_device: Obj | None, path: str, per_device_node_selection: bool,
                     gates: FeatureGates | None) -> list[Cause]:
    allow_multiple = device.get("allowMultipleAllocations") is True
    errs = validate_dns1123_label(_str(device.get("name")), child(path, "name"))
    attributes, capacity = _dict(device.get("attributes")), _dict(device.get("capacity"))
    total = len(attributes) + len(capacity)
    if total > RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE:
        errs.append(invalid_value(path, total, "the total number of attributes and capacities must not exceed "
                                  f"{RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE}"))
    values = _num_attribute_values(attributes)
    if values > RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE:
        errs.append(invalid_value(path, values, "the total number of attribute values must not exceed "
                                  f"{RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE}"))
    if attributes:
        errs += validate_map(attributes, -1, ATTRIBUTE_AND_CAPACITY_MAX_KEY_LENGTH, validate_qualified_name,
                             lambda a, p: _validate_device_attribute(_dict(a), p), child(path, "attributes"))
    # (Below, checks of absent or empty fields, which find nothing, are skipped.)
    if capacity and (old_device is None or old_device.get("capacity") != device.get("capacity")):
        item = _validate_multi_allocatable_capacity if allow_multiple else _validate_single_allocatable_capacity
        errs += validate_map(capacity, -1, ATTRIBUTE_AND_CAPACITY_MAX_KEY_LENGTH, validate_qualified_name,
                             lambda c, p: item(_dict(c), p, gates), child(path, "capacity"))
    taints = _list(device.get("taints"))
    if taints and (old_device is None or old_device.get("taints") != device.get("taints")):
        errs += validate_slice(taints, DEVICE_TAINTS_MAX_LENGTH,
                               lambda t, p: _validate_device_taint(_dict(t), None, p), child(path, "taints"))
    consumes = _list(device.get("consumesCounters"))
    if consumes:
        errs += validate_set(consumes, RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE,
                             lambda c, p: _validate_device_counter_consumption(_dict(c), p),
                             lambda c: _str(_dict(c).get("counterSet")), child(path, "consumesCounters"))

    if per_device_node_selection:
        set_fields: list[str] = []
        if device.get("nodeName") is not None:
            if _str(device.get("nodeName")):
                set_fields.append("`nodeName`")
                errs += validate_node_name(_str(device.get("nodeName")), child(path, "nodeName"))
            else:
                errs.append(invalid_value(child(path, "nodeName"), "", "must not be empty"))
        if device.get("nodeSelector") is not None:
            set_fields.append("`nodeSelector`")
            errs += validate_node_selector(device.get("nodeSelector"), child(path, "nodeSelector"))
        if device.get("allNodes") is not None:
            if device.get("allNodes") is True:
                set_fields.append("`allNodes`")
            else:
                errs.append(invalid_value(child(path, "allNodes"), device.get("allNodes"),
                                          "must be either unset or set to true"))
        one_of = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
                  "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")
        if not set_fields:
            errs.append(required(path, one_of))
        elif len(set_fields) > 1:
            errs.append(invalid_value(path, "{" + ", ".join(set_fields) + "}", one_of))
    elif device.get("nodeName") is not None or device.get("nodeSelector") is not None or \
            device.get("allNodes") is not None:
        errs.append(invalid_value(path, None, "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                                  "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"))

    conditions, failure_conditions = device.get("bindingConditions"), device.get("bindingFailureConditions")
    if conditions is not None or failure_conditions is not None:
        errs += _validate_binding_parameters(conditions, failure_conditions, path)
    allocatable = _dict(device.get("nodeAllocatableResources"))
    if allocatable:
        errs += _validate_node_allocatable_resources(allocatable, capacity, child(path, "nodeAllocatableResources"))
    return errs


def _validate_device_counter_consumption(consumption: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    counter_set = _str(consumption.get("counterSet"))
    if not counter_set:
        errs.append(required(child(path, "counterSet")))
    else:
        errs += validate_dns1123_label(counter_set, child(path, "counterSet"))
    counters = _dict(consumption.get("counters"))
    if not counters:
        errs.append(required(child(path, "counters")))
    else:
        errs += validate_map(counters, RESOURCE_SLICE_MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION, 63,
                             validate_dns1123_label, lambda c, p: [], child(path, "counters"))
    groups = consumption.get("compatibilityGroups")
    if groups is not None:
        errs += validate_set([_str(g) for g in _list(groups)], DEVICE_COMPATIBILITY_GROUPS_MAX_SIZE,
                             validate_dns1123_label, _str, child(path, "compatibilityGroups"))
    return errs
