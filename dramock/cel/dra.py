"""The DRA environment of CEL: the `device` variable (its static type and fields), the resource.k8s.io/v1
size limits that bound the cost estimate, the feature options that select the environment (list-type
attributes, consumable capacity, derived attributes), the result type selectors and derived attributes
must have, the DRAListTypeAttributes `includes()` function, and the conversion of a ResourceSlice device
into the evaluation input (DeviceEnv)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dramock.cel.errors import CELCompileError, CELRuntimeError
from dramock.cel.semver import Semver
from dramock.cel.static_types import BOOL, DYN, QUANTITY, SEMVER, STRING, StaticType, map_of
from dramock.cel.values import DeviceEnv, DomainMap, cel_equals
from dramock.schemas.quantity import Quantity

# Size limits (resource.k8s.io/v1) that bound the worst-case cost estimate (and includes()).
DRIVER_NAME_MAX = 63  # DriverNameMaxLength
DOMAIN_MAX = 63  # DeviceMaxDomainLength
ID_MAX = 32  # DeviceMaxIDLength
ATTRIBUTES_PER_DEVICE = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice
ATTRIBUTE_VALUE_MAX = 64  # DeviceAttributeMaxValueLength (and list length bound with list-type attributes)
ATTRIBUTE_VALUES_PER_DEVICE = 48  # ResourceSliceMaxAttributeValuesPerDevice


# The `device` variable: its static type and fields.
DEVICE = StaticType("obj", name="kubernetes.DRADevice")
ATTRIBUTES = map_of(STRING, map_of(STRING, DYN))
CAPACITY = map_of(STRING, map_of(STRING, QUANTITY))
DEVICE_FIELDS = {"driver": STRING, "attributes": ATTRIBUTES, "capacity": CAPACITY,
                 "allowMultipleAllocations": BOOL}


class EnvOptions:
    """The feature options that select the environment (see compile())."""

    __slots__ = ("consumable_capacity", "derived_attribute", "list_type_attributes")

    def __init__(self, list_type_attributes: bool, consumable_capacity: bool, derived_attribute: bool = False):
        self.list_type_attributes = list_type_attributes
        self.consumable_capacity = consumable_capacity
        self.derived_attribute = derived_attribute


def fn_includes(s: list, x: Any, v: Any) -> bool:
    if type(x) is list:
        if len(x) > ATTRIBUTE_VALUES_PER_DEVICE:
            raise CELRuntimeError("'includes' function cannot be applied to lists longer than "
                                  f"{ATTRIBUTE_VALUES_PER_DEVICE} values")
        return any(cel_equals(e, v) for e in x)
    return cel_equals(x, v)


def as_device_env(device: Mapping[str, Any]) -> DeviceEnv:
    attrs = device.get("attributes") or {}
    caps = device.get("capacity") or {}
    return DeviceEnv(
        driver=device.get("driver") or "",
        attributes=attrs if type(attrs) is DomainMap else DomainMap(attrs),
        capacity=caps if type(caps) is DomainMap else DomainMap(caps),
        allowMultipleAllocations=bool(device.get("allowMultipleAllocations") or False),
    )


_DERIVED_SCALARS = frozenset({"bool", "int", "string", "dyn"})


def check_output_type(t: StaticType, opts: EnvOptions) -> None:
    if opts.derived_attribute:
        def scalar(x: StaticType) -> bool:
            return x.kind in _DERIVED_SCALARS or x == SEMVER
        if scalar(t) or (opts.list_type_attributes and t.kind == "list" and scalar(t.params[0])):
            return
        if opts.list_type_attributes:
            raise CELCompileError("must evaluate to a primitive scalar (string, integer, boolean, semver) or a "
                                  f"list of these scalars, not {t}")
        raise CELCompileError(f"must evaluate to a primitive scalar (string, integer, boolean, semver), not {t}")
    if t.kind not in ("bool", "dyn"):
        raise CELCompileError(f"must evaluate to bool or the unknown type, not {t}")


SEMVER_MEMO: dict[str, Semver] = {}
QUANTITY_MEMO: dict[str, Quantity] = {}


def _memo_parse(memo: dict, parse: Callable[[str], Any], text: str) -> Any:
    """Parse through a bounded memo (values repeat across the devices of a cluster; both types are
    immutable)."""
    v = memo.get(text)
    if v is None:
        v = parse(text)
        if len(memo) >= 8192:
            memo.clear()
        memo[text] = v
    return v


def _attribute_value(name: str, attr: Any) -> Any:
    if type(attr) is not dict and not isinstance(attr, Mapping):
        raise CELRuntimeError(f"attribute {name}: unsupported attribute value")
    for field, value in attr.items():
        if value is None:
            continue
        tv = type(value)
        if field == "string" and tv is str:
            return value
        if field == "int" and tv is int:
            return value
        if field == "bool" and tv is bool:
            return value
        if field == "version" and tv is str:
            try:
                return _memo_parse(SEMVER_MEMO, Semver.parse, value)
            except ValueError as e:
                raise CELRuntimeError(f"attribute {name}: parse semantic version: {e}") from None
        if field in ("ints", "bools", "strings") and tv is list:
            return list(value)
        if field == "versions" and tv is list:
            try:
                return [_memo_parse(SEMVER_MEMO, Semver.parse, v) for v in value]
            except (ValueError, TypeError) as e:
                raise CELRuntimeError(f"attribute {name}: parse semantic version: {e}") from None
    raise CELRuntimeError(f"attribute {name}: unsupported attribute value")


def _split_qualified(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def device_env(driver: str, device: Mapping[str, Any]) -> DeviceEnv:
    """Build the evaluation input from a ResourceSlice device in v1 wire shape:
    {"name", "attributes": {"model": {"string": "a100"}, "dra.example.com/v": {"version": "1.2.3"}},
     "capacity": {"memory": {"value": "40Gi"}}, "allowMultipleAllocations": true}.
    Unqualified names live in the driver's domain (device.attributes[device.driver].model). Raises
    CELRuntimeError for an attribute without a supported value or an invalid version/quantity."""
    attrs = DomainMap()
    for name, attr in (device.get("attributes") or {}).items():
        domain, ident = _split_qualified(name, driver)
        inner = attrs.get(domain)
        if inner is None:
            inner = attrs[domain] = {}
        inner[ident] = _attribute_value(name, attr)
    caps = DomainMap()
    for name, cap in (device.get("capacity") or {}).items():
        domain, ident = _split_qualified(name, driver)
        value = cap.get("value") if type(cap) is dict or isinstance(cap, Mapping) else cap
        if type(value) is not Quantity:
            try:
                value = _memo_parse(QUANTITY_MEMO, Quantity.parse, value if type(value) is str else str(value))
            except ValueError as e:
                raise CELRuntimeError(f"capacity {name}: {e}") from None
        inner = caps.get(domain)
        if inner is None:
            inner = caps[domain] = {}
        inner[ident] = value
    return DeviceEnv(driver=driver or "", attributes=attrs, capacity=caps,
                     allowMultipleAllocations=bool(device.get("allowMultipleAllocations") or False))
