"""The allocator's model: pools, devices and requests as the search sees them, its errors, quantities and
the bounded cache of CEL device environments."""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any

from dramock import cel
from dramock.scheduler.types import Obj
from dramock.schemas.quantity import Quantity

ALLOCATION_RESULTS_MAX_SIZE = 32  # resourceapi.AllocationResultsMaxSize
_BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
_DEADLINE_CHECK_EVERY = 64

# device key -> DeviceEnv (or the CELRuntimeError raised while building it); bounded.
_ENVS: dict[tuple, Any] = {}
_ENVS_MAX = 1 << 17


# Built pools, by the slice (and DeviceTaintRule) objects they were built from; each entry holds those objects,
# so the ids in its key stay theirs while it lives. Bounded.
BUILT_POOLS: dict[tuple, tuple] = {}
BUILT_POOLS_MAX = 1 << 14

# The sorted-out sets of slices without nodeName (AllocationInput.shared_slices), by the id of that list; each
# entry holds the list (pools.SliceSet.slices). Bounded.
SLICE_SETS: dict[int, Any] = {}
SLICE_SETS_MAX = 8
SHARED_VIEWS_MAX = 256  # gathered views per slice set (one per distinct node signature, slice list, gates)
SIGNATURES_MAX = 1 << 13  # nodes' signatures per slice set (each entry holds its node object)


def clear_caches() -> None:
    """Drop the device-environment, built-pool and shared-view caches (the CEL module has its own:
    cel.clear_caches())."""
    _ENVS.clear()
    BUILT_POOLS.clear()
    SLICE_SETS.clear()


class _Error(Exception):
    """Allocation cannot proceed (upstream returns an error from Allocate)."""


class _Timeout(Exception):
    pass


class _MaxSize(Exception):
    """errAllocationResultMaxSizeExceeded."""


def _qty(v: Any) -> Fraction:
    if v is None:
        return Fraction(0)
    if isinstance(v, Quantity):
        return v.to_fraction()
    if isinstance(v, dict):
        v = v.get("value")
    if isinstance(v, (int, float)):
        return Fraction(v)
    try:
        return _parsed_fraction(str(v))
    except ValueError as e:
        raise _Error(f"invalid quantity {v!r}: {e}") from None


@functools.lru_cache(maxsize=4096)
def _parsed_fraction(text: str) -> Fraction:
    """A quantity string's value. The search takes and gives back counters for every device it tries, so the
    few distinct strings of a cluster are parsed once (a Fraction is immutable, safe to share)."""
    return Quantity.parse(text).to_fraction()


# A counter amount: an int when whole (the common case: int arithmetic is many times faster than Fraction's, and
# the two compare and add exactly), else the Fraction.
Amount = Fraction | int


def _amount(v: Any) -> Amount:
    q = _qty(v)
    return q.numerator if q.denominator == 1 else q


def _qty_or_none(v: Any) -> Quantity | None:
    if v is None:
        return None
    if isinstance(v, Quantity):
        return v
    try:
        return Quantity.parse(str(v))
    except ValueError as e:
        raise _Error(f"invalid quantity {v!r}: {e}") from None


def _kobj(claim: Obj) -> str:
    md = claim.get("metadata") or {}
    ns = md.get("namespace") or ""
    return f"{ns}/{md.get('name', '')}" if ns else str(md.get("name", ""))


def _fq(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def _attr_value(attr: Any) -> tuple | None:
    if not isinstance(attr, dict):
        return None
    for field in ("string", "int", "bool", "version"):
        v = attr.get(field)
        if v is not None:
            return (field, v)
    for field in ("strings", "ints", "bools", "versions"):
        v = attr.get(field)
        if v is not None:
            return (field, tuple(v))
    return None


class _Dev:
    __slots__ = ("allow_multi", "attrs", "binding", "caps", "compat", "consumes", "device", "driver", "id",
                 "key", "name", "pool", "pool_obj", "slice", "taints", "uses")

    def __init__(self, pool_obj: _Pool, slice_obj: Obj, device: Obj, rule_taints: list[Obj]):
        spec = slice_obj["spec"]
        self.pool_obj = pool_obj
        self.driver = spec.get("driver", "")
        self.pool = (spec.get("pool") or {}).get("name", "")
        self.slice = slice_obj
        self.device = device
        self.name = device.get("name", "")
        self.id = (self.driver, self.pool, self.name)
        md = slice_obj.get("metadata") or {}
        # The cache key of CEL results and the evaluation input. A slice without resourceVersion/uid (not
        # read from the API) cannot be told apart from an updated one, so its devices are not cached.
        rv, uid = md.get("resourceVersion"), md.get("uid")
        self.key = ((self.driver, self.pool, md.get("name", ""), uid or "", rv or "",
                     (spec.get("pool") or {}).get("generation", 0), self.name) if rv or uid else None)
        self.allow_multi = bool(device.get("allowMultipleAllocations"))
        self.consumes = device.get("consumesCounters") or []
        self.uses: list[tuple[str, str, Amount]] | None = None  # consumes, parsed (counters.counter_uses)
        self.compat = any(c.get("compatibilityGroups") for c in self.consumes)
        self.taints = list(device.get("taints") or []) + rule_taints
        self.binding = bool(device.get("bindingConditions"))
        self.attrs = device.get("attributes") or {}
        self.caps = device.get("capacity") or {}

    def env(self) -> cel.DeviceEnv:
        if self.key is None:
            return cel.device_env(self.driver, self.device)
        e = _ENVS.get(self.key)
        if e is None:
            try:
                e = cel.device_env(self.driver, self.device)
            except cel.CELRuntimeError as err:
                e = err
            if len(_ENVS) >= _ENVS_MAX:
                _ENVS.clear()
            _ENVS[self.key] = e
        if isinstance(e, cel.CELRuntimeError):
            raise e
        return e

    def attribute(self, fq_name: str) -> tuple | None:
        """lookupAttribute: the fully qualified name, or the identifier when the domain is the driver."""
        if fq_name in self.attrs:
            return _attr_value(self.attrs[fq_name])
        domain, sep, ident = fq_name.partition("/")
        if not sep or domain != self.driver:
            return None
        if ident in self.attrs:
            return _attr_value(self.attrs[ident])
        return None


class _Pool:
    def __init__(self, driver: str, name: str):
        self.driver, self.name = driver, name
        self.incomplete = False
        self.invalid = ""
        self.devices: list[_Dev] = []  # devices visible from the node, in allocation order
        self.all_slices: list[Obj] = []  # current generation, all nodes
        self.counter_sets: dict[str, dict[str, Amount]] = {}
        self.has_binding = False
        # selection key -> this pool's devices a request with that key may use (see candidates)
        self.selections: dict[tuple, list[_Dev]] = {}
        # (device id, counter uses) of every device of all_slices that consumes counters (see pool_available)
        self.consumers: list[tuple[tuple, list[tuple[str, str, Amount]]]] | None = None
        # (gates, which devices are held) -> whether no device can be taken (counters.pool_dead)
        self.dead_memo: dict[tuple, bool] = {}

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"


class _View:
    """The pools one allocation searches, in allocation order, and what the search derives from them alone: per
    selection key the candidate devices, per (candidate list, attribute) those candidates grouped by the
    attribute's value. Built per allocation, or shared by every node that sees the same pools
    (pools.SliceSet)."""

    __slots__ = ("bound", "cands", "groups", "pools", "unbound")

    def __init__(self, unbound: list[_Pool], bound: list[_Pool]):
        self.unbound, self.bound = unbound, bound
        self.pools = unbound + bound
        self.cands: dict[tuple, list[_Dev]] = {}
        # (id of a candidate list, attribute) -> (that list, {value: devices}); the entry holds the list, so the id
        # stays its own while the entry lives
        self.groups: dict[tuple[int, str], tuple[list[_Dev], dict[Any, list[_Dev]]]] = {}


class _Req:
    """A request without subrequests, or one subrequest (requestData upstream)."""

    __slots__ = ("admin", "all_devs", "base", "capacity", "cands", "class_name", "class_obj", "count",
                 "derived", "mode", "num", "selectors", "sub", "tolerations")

    def __init__(self, base: str, sub: str | None, spec: Obj, admin: bool):
        self.base, self.sub = base, sub
        self.class_name = spec.get("deviceClassName") or ""
        self.class_obj: Obj | None = None
        self.mode = spec.get("allocationMode") or "ExactCount"
        count = spec.get("count")
        self.count = int(count if count is not None else 1)
        self.admin = admin
        self.selectors = spec.get("selectors") or []
        self.tolerations = spec.get("tolerations") or []
        self.capacity = (spec.get("capacity") or {}).get("requests") or {}
        # DRADerivedAttributes: attribute name -> CEL expression (set by the allocator when the gate is on).
        self.derived: dict[str, str] = {}
        self.cands: list[_Dev] | None = None
        self.all_devs: list[_Dev] = []
        self.num = 0

    @property
    def name(self) -> str:
        return f"{self.base}/{self.sub}" if self.sub is not None else self.base
