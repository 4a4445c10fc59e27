"""ResourceClaim: the spec (create, update) and the status (reservedFor, allocation, device status)."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.validation.core import validate_node_selector
from dramock.schemas.validation.field import (
    Cause,
    Obj,
    _dict,
    _list,
    _str,
    cause,
    child,
    forbidden,
    index,
    invalid_raw,
    invalid_value,
    not_supported,
    required,
    semantic_equal,
    too_long,
    too_many,
)
from dramock.schemas.validation.meta import validate_conditions
from dramock.schemas.validation.names import validate_dns1123_label
from dramock.schemas.validation.resource.binding import _validate_binding_parameters, _validate_skip_node_operations
from dramock.schemas.validation.resource.common import validate_set, validate_slice
from dramock.schemas.validation.resource.config import _validate_device_configuration, _validate_raw_extension
from dramock.schemas.validation.resource.deviceclaim import (
    _RequestNames,
    _validate_device_claim,
    _validate_request_name_ref,
)
from dramock.schemas.validation.resource.limits import (
    ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH,
    ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS,
    ALLOCATION_CONFIG_SOURCES,
    ALLOCATION_RESULTS_MAX_SIZE,
    DEVICE_CONFIG_MAX_SIZE,
    DEVICE_REQUESTS_MAX_SIZE,
    NETWORK_DEVICE_DATA_HARDWARE_ADDRESS_MAX_LENGTH,
    NETWORK_DEVICE_DATA_INTERFACE_NAME_MAX_LENGTH,
    NETWORK_DEVICE_DATA_MAX_IPS,
    RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE,
)
from dramock.schemas.validation.resource.names import _validate_uid, validate_driver_name, validate_pool_name
from dramock.schemas.validation.resource.taints import _validate_device_toleration


def validate_resource_claim(obj: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    """ValidateResourceClaim (spec part)."""
    return _validate_device_claim(_dict(obj.get("spec")).get("devices"), "spec.devices", False, gates)


def validate_resource_claim_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    """The spec is immutable; nothing else of the spec is validated again on update."""
    if not semantic_equal(new.get("spec"), old.get("spec")):
        return [invalid_value("spec", new.get("spec"), "field is immutable")]
    return []


def _device_id(d: Obj) -> tuple[str, str, str, str | None]:
    share = d.get("shareID")
    return (_str(d.get("driver")), _str(d.get("pool")), _str(d.get("device")),
            share if isinstance(share, str) else None)


def _device_id_string(device_id: tuple[str, str, str, str | None]) -> str:
    s = "/".join(device_id[:3])
    return f"{s}/{device_id[3]}" if device_id[3] is not None else s


def validate_resource_claim_status_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    """ValidateResourceClaimStatusUpdate (status part; metadata is the strategy's)."""
    spec = _dict(new.get("spec"))
    names = _RequestNames(_dict(spec.get("devices")))
    status, old_status = _dict(new.get("status")), _dict(old.get("status"))
    claim_deleted = bool(_dict(new.get("metadata")).get("deletionTimestamp"))
    path = "status"
    reserved_for = _list(status.get("reservedFor"))
    errs = validate_set(reserved_for, RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE, _validate_consumer_reference,
                        lambda r: _str(_dict(r).get("uid")), child(path, "reservedFor"))

    allocation = status.get("allocation")
    allocated: set = set()
    if allocation is not None:
        for result in _list(_dict(_dict(allocation).get("devices")).get("results")):
            allocated.add(_device_id(_dict(result)))
    errs += validate_set(
        _list(status.get("devices")), -1, lambda d, p: _validate_device_status(_dict(d), p, allocated),
        lambda d: _device_id(_dict(d)), child(path, "devices"),
        render_key=lambda p, k: cause("FieldValueDuplicate", p, f"Duplicate value: {_device_id_string(k)}"))

    if reserved_for:
        if allocation is None:
            errs.append(forbidden(child(path, "reservedFor"), "may not be specified when `allocated` is not set"))
        elif claim_deleted:
            old_uids = {json.dumps(r, sort_keys=True) for r in _list(old_status.get("reservedFor"))}
            if any(json.dumps(r, sort_keys=True) not in old_uids for r in reserved_for):
                errs.append(forbidden(child(path, "reservedFor"), "new entries may not be added while "
                                      "`deallocationRequested` or `deletionTimestamp` are set"))

    old_allocation = old_status.get("allocation")
    if old_allocation is not None and allocation is not None:
        if not semantic_equal(allocation, old_allocation):
            errs.append(invalid_value(child(path, "allocation"), allocation, "field is immutable"))
    elif allocation is not None:
        errs += _validate_allocation_result(_dict(allocation), child(path, "allocation"), names)
    return errs


def _validate_consumer_reference(ref: Any, path: str) -> list[Cause]:
    ref = _dict(ref)
    return [required(child(path, f)) for f in ("resource", "name", "uid") if not _str(ref.get(f))]


def _validate_allocation_result(allocation: Obj, path: str, names: _RequestNames) -> list[Cause]:
    devices = _dict(allocation.get("devices"))
    dpath = child(path, "devices")
    errs = validate_slice(_list(devices.get("results")), ALLOCATION_RESULTS_MAX_SIZE,
                          lambda r, p: _validate_request_allocation_result(_dict(r), p, names),
                          child(dpath, "results"))
    errs += validate_slice(_list(devices.get("config")), 2 * DEVICE_CONFIG_MAX_SIZE,
                           lambda c, p: _validate_allocation_configuration(_dict(c), p, names),
                           child(dpath, "config"))
    if allocation.get("nodeSelector") is not None:
        errs += validate_node_selector(allocation.get("nodeSelector"), child(path, "nodeSelector"))
    return errs


def _validate_request_allocation_result(result: Obj, path: str, names: _RequestNames) -> list[Cause]:
    errs = _validate_request_name_ref(_str(result.get("request")), child(path, "request"), names)
    errs += validate_driver_name(_str(result.get("driver")), child(path, "driver"))
    errs += validate_pool_name(_str(result.get("pool")), child(path, "pool"))
    errs += validate_dns1123_label(_str(result.get("device")), child(path, "device"))
    errs += _validate_binding_parameters(result.get("bindingConditions"), result.get("bindingFailureConditions"),
                                         path)
    for i, toleration in enumerate(_list(result.get("tolerations"))):
        errs += _validate_device_toleration(_dict(toleration), index(child(path, "tolerations"), i))
    if result.get("shareID") is not None:
        errs += _validate_uid(_str(result.get("shareID")), child(path, "shareID"))
    errs += _validate_skip_node_operations(result.get("skipNodeOperations"), child(path, "skipNodeOperations"))
    return errs


def _validate_allocation_configuration(config: Obj, path: str, names: _RequestNames) -> list[Cause]:
    errs: list[Cause] = []
    source = _str(config.get("source"))
    if not source:
        errs.append(required(child(path, "source")))
    elif source not in ALLOCATION_CONFIG_SOURCES:
        errs.append(not_supported(child(path, "source"), source, ALLOCATION_CONFIG_SOURCES))
    errs += validate_set(_list(config.get("requests")), DEVICE_REQUESTS_MAX_SIZE,
                         lambda n, p: _validate_request_name_ref(_str(n), p, names), _str, child(path, "requests"))
    return errs + _validate_device_configuration(config, path, False)


def _validate_device_status(device: Obj, path: str, allocated: set) -> list[Cause]:
    errs = validate_driver_name(_str(device.get("driver")), child(path, "driver"))
    errs += validate_pool_name(_str(device.get("pool")), child(path, "pool"))
    errs += validate_dns1123_label(_str(device.get("device")), child(path, "device"))
    if device.get("shareID") is not None:
        errs += _validate_uid(_str(device.get("shareID")), child(path, "shareID"))
    device_id = _device_id(device)
    if device_id not in allocated:
        errs.append(invalid_raw(path, _device_id_string(device_id), "must be an allocated device in the claim"))
    conditions = _list(device.get("conditions"))
    if len(conditions) > ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS:
        errs.append(too_many(child(path, "conditions"), len(conditions), ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS))
    errs += validate_conditions(conditions, child(path, "conditions"))
    if device.get("data") is not None:
        errs += _validate_raw_extension(device.get("data"), True, child(path, "data"), False,
                                        ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH)
    if device.get("networkData") is not None:
        errs += _validate_network_device_data(_dict(device.get("networkData")), child(path, "networkData"))
    return errs


def _validate_network_device_data(data: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    if len(_str(data.get("interfaceName")).encode()) > NETWORK_DEVICE_DATA_INTERFACE_NAME_MAX_LENGTH:
        errs.append(too_long(child(path, "interfaceName"), NETWORK_DEVICE_DATA_INTERFACE_NAME_MAX_LENGTH))
    if len(_str(data.get("hardwareAddress")).encode()) > NETWORK_DEVICE_DATA_HARDWARE_ADDRESS_MAX_LENGTH:
        errs.append(too_long(child(path, "hardwareAddress"), NETWORK_DEVICE_DATA_HARDWARE_ADDRESS_MAX_LENGTH))
    errs += validate_set(_list(data.get("ips")), NETWORK_DEVICE_DATA_MAX_IPS,
                         lambda a, p: _validate_interface_address(_str(a), p), _str, child(path, "ips"))
    return errs


def _validate_interface_address(address: str, path: str) -> list[Cause]:
    """validation.IsValidInterfaceAddress: an address in CIDR form, canonical."""
    try:
        if "/" not in address:
            raise ValueError
        iface = ipaddress.ip_interface(address)
    except ValueError:
        return [invalid_value(path, address, "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or "
                              "2001:db8::1/64)")]
    canonical = f"{iface.ip}/{iface.network.prefixlen}"
    if address != canonical:
        return [invalid_value(path, address, f'must be in canonical form ("{canonical}")')]
    return []
