"""Device capacity: request policies (validValues, validRange) for devices that allow multiple
allocations, and node-allocatable resource mappings."""

from __future__ import annotations

from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.quantity import Quantity, parse_or_none
from dramock.schemas.validation.core import is_node_allocatable_resource_name
from dramock.schemas.validation.field import (
    Cause,
    Obj,
    _dict,
    _list,
    child,
    forbidden,
    index,
    invalid_value,
    key,
    not_found,
    required,
)
from dramock.schemas.validation.resource.common import _gate, validate_set
from dramock.schemas.validation.resource.limits import CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS, MAX_INT64


def _validate_single_allocatable_capacity(capacity: Obj, path: str, gates: FeatureGates | None) -> list[Cause]:
    if capacity.get("requestPolicy") is not None:
        return [forbidden(child(path, "requestPolicy"), "allowMultipleAllocations must be true")]
    return []


def _validate_multi_allocatable_capacity(capacity: Obj, path: str, gates: FeatureGates | None) -> list[Cause]:
    policy = capacity.get("requestPolicy")
    value = parse_or_none(capacity.get("value"))
    if policy is None or value is None:
        return []
    return _validate_request_policy(value, _dict(policy), child(path, "requestPolicy"), gates)


def _validate_request_policy(capacity: Quantity, policy: Obj, path: str, gates: FeatureGates | None) -> list[Cause]:
    valid_values = _list(policy.get("validValues"))
    valid_range = policy.get("validRange")
    if valid_values and valid_range is not None:
        return [forbidden(path, 'exactly one policy can be specified, cannot specify "validValues" and "validRange" '
                          'at the same time')]
    default = parse_or_none(policy.get("default"))
    if valid_values:
        if default is None:
            return [required(child(path, "default"), "required when validValues is defined")]
        return _validate_valid_values(default, capacity, valid_values, child(path, "validValues"), gates)
    if valid_range is not None:
        if default is None:
            return [required(child(path, "default"), "required when validRange is defined")]
        return _validate_valid_range(default, capacity, _dict(valid_range), child(path, "validRange"), gates)
    return []


def _validate_valid_values(default: Quantity, capacity: Quantity, raw_values: list, path: str,
                           gates: FeatureGates | None) -> list[Cause]:
    values = [parse_or_none(v) for v in raw_values]
    errs: list[Cause] = []
    for i in range(len(values) - 1):
        a, b = values[i], values[i + 1]
        if a is not None and b is not None and a > b:
            errs.append(invalid_value(index(path, i + 1), str(b), "values must be sorted in ascending order"))
    found_default = False
    fractional = _gate(gates, "DRAFractionalCapacityRange")

    def one(option: Quantity | None, p: str) -> list[Cause]:
        nonlocal found_default
        if option is None:
            return []
        out: list[Cause] = []
        if option > capacity:
            out.append(invalid_value(p, str(option), f"option is larger than capacity value: {capacity}"))
        if option == default:
            found_default = True
        return out

    def option_key(option: Quantity | None) -> str:
        if option is None:
            return ""
        return str(option) if fractional else str(option.value())

    errs += validate_set(values, CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS, one, option_key, path)
    if not found_default:
        errs.append(invalid_value(path, str(default), "default value is not valid according to the requestPolicy"))
    return errs


def _validate_valid_range(default: Quantity, capacity: Quantity, valid_range: Obj, path: str,
                          gates: FeatureGates | None) -> list[Cause]:
    minimum = parse_or_none(valid_range.get("min"))
    if minimum is None:
        return [required(child(path, "min"), "required when validRange is defined")]
    maximum = parse_or_none(valid_range.get("max"))
    step = parse_or_none(valid_range.get("step"))
    errs: list[Cause] = []
    if minimum > capacity:
        errs.append(invalid_value(child(path, "min"), str(minimum), f"min is larger than capacity value: {capacity}"))
    if default < minimum:
        errs.append(invalid_value(child(path, "default"), str(default), f"default is less than min: {minimum}"))
    if maximum is not None:
        if minimum > maximum:
            errs.append(invalid_value(child(path, "max"), str(minimum), f"min is larger than max: {maximum}"))
        if maximum > capacity:
            errs.append(invalid_value(child(path, "max"), str(maximum),
                                      f"max is larger than capacity value: {capacity}"))
        if default > maximum:
            errs.append(invalid_value(child(path, "default"), str(default), f"default is more than max: {maximum}"))
    named = [(default, "default"), (minimum, "min"), (maximum, "max"), (step, "step")]
    use_milli = False
    if _gate(gates, "DRAFractionalCapacityRange"):
        use_milli = any(q is not None and q.is_fractional() for q in (minimum, maximum, step, default))
        if use_milli:
            unsafe = False
            for q, name in named:
                if q is not None and not q.milli_exact():
                    errs.append(invalid_value(child(path, name), str(q), "value cannot be represented as a milli "
                                              "value"))
                    unsafe = True
            if unsafe:
                return errs
    if step is None:
        return errs
    if step.sign() <= 0:
        errs.append(invalid_value(child(path, "step"), str(step), "must be greater than zero"))
        return errs
    added = minimum.add(step)
    if added > capacity:
        errs.append(invalid_value(child(path, "step"), str(step),
                                  f"one step {added} is larger than capacity value: {capacity}"))
    if not use_milli:
        unsafe = False
        for q, name in named:
            if q is None:
                continue
            if q.sign() < 0:
                errs.append(invalid_value(child(path, name), str(q), "must be greater than or equal to 0"))
                unsafe = True
            elif q.dec > MAX_INT64:
                errs.append(invalid_value(child(path, name), str(q), f"must not be larger than {MAX_INT64}"))
                unsafe = True
        if unsafe:
            return errs
    for value in (default, maximum):
        if value is None:
            continue
        if use_milli:
            v, lo, s = value.milli_value(), minimum.milli_value(), step.milli_value()
        else:
            v, lo, s = value.value(), minimum.value(), step.value()
        if s and (v - lo) % s != 0:
            errs.append(invalid_value(child(path, "step"), str(value),
                                      f"value is not a multiple of a given step ({step}) from ({minimum})"))
    return errs


def _validate_node_allocatable_resources(resources: dict, capacity: dict, path: str) -> list[Cause]:
    errs: list[Cause] = []
    for name, mapping in resources.items():
        kp = key(path, name)
        mapping = _dict(mapping)
        if not is_node_allocatable_resource_name(name):
            errs.append(invalid_value(kp, name, "must be a node allocatable resource name"))
        if mapping.get("mapping") is None and mapping.get("overhead") is None:
            errs.append(required(kp, "at least one of mapping or overhead must be set"))
        if mapping.get("mapping") is not None:
            errs += _validate_node_allocatable_mapping(_dict(mapping.get("mapping")), capacity, child(kp, "mapping"))
        if mapping.get("overhead") is not None:
            errs += _validate_node_allocatable_overhead(_dict(mapping.get("overhead")), child(kp, "overhead"))
    return errs


def _validate_node_allocatable_mapping(mapping: Obj, capacity: dict, path: str) -> list[Cause]:
    errs: list[Cause] = []
    capacity_key = mapping.get("capacityKey")
    multiplier = parse_or_none(mapping.get("capacityMultiplier"))
    if capacity_key is not None:
        if capacity_key == "":
            errs.append(invalid_value(child(path, "capacityKey"), "", "capacityKey must not be an empty string"))
        elif capacity_key not in capacity:
            errs.append(not_found(child(path, "capacityKey"), capacity_key))
        if mapping.get("capacityMultiplier") is None:
            errs.append(required(child(path, "capacityMultiplier"), "capacityMultiplier is required when capacityKey "
                                 "is set"))
        elif multiplier is not None and multiplier.sign() <= 0:
            errs.append(invalid_value(child(path, "capacityMultiplier"), str(multiplier), "must be positive"))
    device_multiplier = parse_or_none(mapping.get("deviceMultiplier"))
    if device_multiplier is not None and device_multiplier.sign() <= 0:
        errs.append(invalid_value(child(path, "deviceMultiplier"), str(device_multiplier), "must be positive"))
    if mapping.get("capacityMultiplier") is not None and capacity_key is None:
        errs.append(required(child(path, "capacityKey"), "capacityKey is required when capacityMultiplier is set"))
    return errs


def _validate_node_allocatable_overhead(overhead: Obj, path: str) -> list[Cause]:
    if overhead.get("perPod") is None and overhead.get("perContainer") is None:
        return [invalid_value(path, "", "at least one of perPod or perContainer must be set")]
    errs: list[Cause] = []
    for name in ("perPod", "perContainer"):
        q = parse_or_none(overhead.get(name))
        if q is not None and q.sign() < 0:
            errs.append(invalid_value(child(path, name), str(q), "must be non-negative"))
    return errs
