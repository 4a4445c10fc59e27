"""The structured-parameters device allocator (KEP-4381 and its extensions), as a pure function.

`allocate(AllocationInput) -> AllocationOutcome` follows upstream
k8s.io/dynamic-resource-allocation/structured (the "experimental" allocator that Kubernetes 1.37 uses
when any beta/alpha DRA feature is on): an exhaustive first-fit search with backtracking over the
claims of one pod, their requests (or the subrequests of a `firstAvailable` list) and the candidate
devices of the pools visible from the node, in a deterministic order (pools by driver/pool name, slices
by name, devices in slice order).

Per feature (1.37 gates in dramock.schemas.featuregates):
  * pools: only the newest generation counts; a pool whose `resourceSliceCount` slices are not all
    present is incomplete and offers no device (and makes allocationMode All fail); duplicate device
    names or dangling counter references make a pool invalid: skipped, and reported only when the claims
    cannot be satisfied from the other pools (allocationMode All fails at once on it);
    slices are node-local (`nodeName`), `nodeSelector`, `allNodes` or `perDeviceNodeSelection`.
  * selectors: class selectors AND request selectors, CEL through dramock.cel, memoized per
    (expression, device key); a CEL compile/runtime error fails the allocation with upstream's message.
  * ExactCount / All (All: every matching device of the visible pools, none may be in use unless
    adminAccess), constraints matchAttribute / distinctAttribute, adminAccess, firstAvailable.
  * DRAPartitionableDevices: shared counters (counter sets from any slice of the pool) consumed by
    allocated, in-flight and tentatively chosen devices.
  * DRAConsumableCapacity: allowMultipleAllocations, capacity requests and requestPolicy, consumed
    capacity + a fresh shareID (a UUID, as upstream's uuid.NewUUID()).
  * DRADeviceCompatibilityGroups (KEP-5963): rolling intersection of compatibilityGroups per counter
    set; groups of already-allocated devices are read from the slices (as upstream). Gate off: devices
    declaring groups are skipped.
  * DRADeviceTaints / DRADeviceTaintRules: NoSchedule/NoExecute taints must be tolerated.
  * DRADeviceBindingConditions: bindingConditions copied into results, pools with binding conditions
    last, `bindsToNode` pins the node, `allocationTimestamp` set when any result has binding conditions.
  * DRAOptionalNodeOperations (KEP-5945): the slice's `skipNodeOperations` copied into each result.
  * DRAListTypeAttributes: constraints compare attribute values as sets (scalars as one-element sets).
  * DRADerivedAttributes: a request's `derivedAttributes` (CEL per candidate device) stand in for the device's
    attribute of that name in the claim's matchAttribute / distinctAttribute constraints.

Explanation mode: with `AllocationInput.tracer` (dramock.scheduler.explain.Tracer) the allocator tells it why
each device was passed over, in words with the values involved (the `why_*` methods). The calls sit only on
the paths that reject a device, behind one `is not None` test, so the scheduler's path does no extra work.
"""

from __future__ import annotations

import datetime
import re
import time
import uuid
from fractions import Fraction
from typing import Any

from dramock import cel
from dramock.scheduler.types import AllocatedDevices, AllocationInput, AllocationOutcome, Obj
from dramock.schemas.quantity import Quantity

__all__ = ["ALLOCATION_RESULTS_MAX_SIZE", "allocate", "allocated_devices", "clear_caches", "holding"]

ALLOCATION_RESULTS_MAX_SIZE = 32  # resourceapi.AllocationResultsMaxSize
_BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
_DEADLINE_CHECK_EVERY = 64

# device key -> DeviceEnv (or the CELRuntimeError raised while building it); bounded.
_ENVS: dict[tuple, Any] = {}
_ENVS_MAX = 1 << 17


def clear_caches() -> None:
    """Drop the device-environment cache (the CEL module has its own: cel.clear_caches())."""
    _ENVS.clear()


class _Error(Exception):
    """Allocation cannot proceed (upstream returns an error from Allocate)."""


class _Timeout(Exception):
    pass


class _MaxSize(Exception):
    """errAllocationResultMaxSizeExceeded."""


# ============================================================================ helpers


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
        return Quantity.parse(str(v)).to_fraction()
    except ValueError as e:
        raise _Error(f"invalid quantity {v!r}: {e}") from None


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


def _label_match(req: Obj, labels: dict) -> bool:
    key, op, values = req.get("key", ""), req.get("operator", ""), req.get("values") or []
    present = key in labels
    val = labels.get(key)
    if op == "In":
        return present and val in values
    if op == "NotIn":
        return not present or val not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        try:
            a, b = int(labels[key]), int(values[0])
        except (TypeError, ValueError):
            return False
        return a > b if op == "Gt" else a < b
    return False


def node_selector_matches(selector: Obj | None, node: Obj | None) -> bool:
    """v1 NodeSelector: terms are ORed, requirements inside a term ANDed; an empty term matches nothing."""
    if node is None or selector is None:
        return False
    md = node.get("metadata") or {}
    labels = md.get("labels") or {}
    fields = {"metadata.name": md.get("name", "")}
    for term in selector.get("nodeSelectorTerms") or []:
        exprs, flds = term.get("matchExpressions") or [], term.get("matchFields") or []
        if not exprs and not flds:
            continue
        if all(_label_match(r, labels) for r in exprs) and all(_label_match(r, fields) for r in flds):
            return True
    return False


def _node_matches(node: Obj | None, node_name: str | None, all_nodes: bool | None, selector: Obj | None) -> bool:
    if node_name:
        return node is not None and (node.get("metadata") or {}).get("name") == node_name
    if all_nodes:
        return True
    if selector is not None:
        return node_selector_matches(selector, node)
    return False


def _tolerates(tol: Obj, taint: Obj) -> bool:
    """resourceclaim.ToleratesTaint."""
    effect = tol.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = tol.get("key") or ""
    if key and key != taint.get("key"):
        return False
    op = tol.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return (tol.get("value") or "") == (taint.get("value") or "")
    return False


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


# ============================================================================ model


class _Dev:
    __slots__ = ("allow_multi", "attrs", "binding", "caps", "compat", "consumes", "device", "driver", "id",
                 "key", "name", "pool", "pool_obj", "slice", "taints")

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
        self.counter_sets: dict[str, dict[str, Fraction]] = {}
        self.has_binding = False

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"


# ============================================================================ requests


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


class _Constraint:
    def __init__(self, requests: list[str], attribute: str, distinct: bool, sets: bool = False):
        self.requests = set(requests)
        self.attribute = attribute
        self.distinct = distinct
        # DRAListTypeAttributes: values compare as sets (a scalar is a one-element set): matching values must
        # share an element, distinct ones share none.
        self.sets = sets
        self.values: list[tuple] = []

    def applies(self, req: _Req) -> bool:
        if not self.requests:
            return True
        return req.base in self.requests or (req.sub is not None and req.name in self.requests)

    def add(self, req: _Req, dev: _Dev) -> bool:
        if not self.applies(req):
            return True
        expr = req.derived.get(self.attribute)
        v = dev.attribute(self.attribute) if expr is None else _derived_value(req, self.attribute, expr, dev)
        if v is None:
            return False
        if self.sets:
            if not self._set_fits(v):
                return False
        elif self.distinct:
            if v in self.values:
                return False
        elif self.values and self.values[0] != v:
            return False
        self.values.append(v)
        return True

    def _set_fits(self, v: tuple) -> bool:
        new = _as_set(v)
        if self.distinct:
            return all(not (new & _as_set(old)) for old in self.values)
        common = new
        for old in self.values:
            common = common & _as_set(old)
        return bool(common)

    def remove(self, req: _Req, dev: _Dev) -> None:
        if self.applies(req):
            self.values.pop()


def _as_set(v: tuple) -> frozenset:
    """An attribute value (_attr_value's shape) as a set of typed elements: "ints" (1, 2) -> {("int", 1), ...}."""
    kind, value = v
    if kind.endswith("s") and isinstance(value, tuple):
        return frozenset((kind[:-1], x) for x in value)
    return frozenset({(kind, value)})


def _derived_value(req: _Req, name: str, expression: str, dev: _Dev) -> tuple | None:
    """A derived attribute's value for `dev`, shaped as _attr_value shapes a device attribute. A CEL error
    aborts the allocation (upstream: silent topology mismatches are worse than a failed pod)."""
    where = f"request {req.name}: derived attribute {name}"
    try:
        value = cel.compile(expression, cost_limit=None, derived_attribute=True).evaluate_value(dev.env())
    except cel.CELCompileError as e:
        raise _Error(f"{where}: CEL compile error: {e.message}") from None
    except cel.CELRuntimeError as e:
        raise _Error(f"{where}: CEL runtime error: {e.message}") from None

    def scalar(v: Any) -> tuple[str, Any] | None:
        if isinstance(v, bool):
            return ("bool", v)
        if isinstance(v, int):
            return ("int", v)
        if isinstance(v, str):
            return ("string", v)
        if isinstance(v, cel.Semver):
            return ("version", str(v))
        return None

    if isinstance(value, list):
        items = [scalar(v) for v in value]
        scalars = [i for i in items if i is not None]
        if len(scalars) != len(items) or len({i[0] for i in scalars}) > 1:
            raise _Error(f"{where}: CEL runtime error: must evaluate to a list of one scalar type")
        kind = scalars[0][0] if scalars else "string"
        return (kind + "s", tuple(i[1] for i in scalars))
    out = scalar(value)
    if out is None:
        raise _Error(f"{where}: CEL runtime error: must evaluate to a primitive scalar, not {type(value).__name__}")
    return out


# ============================================================================ the allocator


def holding(result: Obj) -> tuple[tuple, bool | None, tuple]:
    """What one allocation result holds: (device id, exclusive? (None for adminAccess: nothing), consumed
    capacity items ((driver, name), amount) of a consumable share)."""
    did = (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
    if result.get("adminAccess"):
        return did, None, ()
    if not result.get("shareID"):
        return did, True, ()
    return did, False, tuple((_fq(k, did[0]), _qty(v)) for k, v in (result.get("consumedCapacity") or {}).items())


def allocated_devices(allocated: list[Obj], in_flight: list[Obj]) -> AllocatedDevices:
    """What the claims' allocation results hold (adminAccess results hold nothing)."""
    held = AllocatedDevices()
    for claims in (allocated, in_flight):
        for claim in claims:
            status = claim.get("status")
            alloc = status.get("allocation") if status else None
            devices = alloc.get("devices") if alloc else None
            for r in (devices.get("results") or ()) if devices else ():
                did, exclusive, caps = holding(r)
                if exclusive is None:
                    continue
                held.consuming.add(did)
                if exclusive:
                    held.exclusive.add(did)
                if caps:
                    agg = held.capacity.setdefault(did, {})
                    for k, v in caps:
                        agg[k] = agg.get(k, Fraction(0)) + v
    return held


class _Allocator:
    def __init__(self, inp: AllocationInput):
        self.inp = inp
        g = inp.gates
        self.partitionable = g.enabled("DRAPartitionableDevices")
        self.consumable = g.enabled("DRAConsumableCapacity")
        self.taints_on = g.enabled("DRADeviceTaints")
        self.taint_rules_on = self.taints_on and g.enabled("DRADeviceTaintRules")
        self.binding_on = g.enabled("DRADeviceBindingConditions")
        self.compat_on = g.enabled("DRADeviceCompatibilityGroups")
        self.skip_ops_on = g.enabled("DRAOptionalNodeOperations")
        self.fractional = g.enabled("DRAFractionalCapacityRange")
        self.node = inp.node
        self.node_name = ((inp.node or {}).get("metadata") or {}).get("name", "")
        self.deadline = inp.deadline
        self.steps = 0
        # Explanation mode: told why each device was passed over (only on the paths that reject one).
        self.trace = inp.tracer
        # Allocated state (written + in-flight), read-only here.
        held = inp.allocated_devices if inp.allocated_devices is not None else allocated_devices(
            inp.allocated, inp.in_flight)
        self.allocated: set[tuple] = held.exclusive
        self.allocated_any: set[tuple] = held.consuming  # exclusive or shared: consumes its counters
        self.allocated_capacity: dict[tuple, dict[tuple, Fraction]] = held.capacity
        # Search state.
        self.allocating: dict[tuple, set[int]] = {}
        self.allocating_any: dict[tuple, int] = {}  # device -> number of tentative results (counters)
        self.allocating_capacity: dict[tuple, dict[tuple, Fraction]] = {}
        self.available: dict[int, dict[str, dict[str, Fraction]]] = {}  # id(pool) -> counters left
        self.consumed: dict[int, dict[str, dict[str, Fraction]]] = {}  # id(pool) -> tentatively used
        self.compat_state: dict[tuple, Any] = {}  # (pool id, counter set) -> intersection state
        self.compat_baseline: dict[int, dict[str, Any]] = {}
        self.pools: list[_Pool] = []
        self._all_by_pool: dict[tuple, list[Obj]] | None = None
        self.claims = inp.claims
        self.requests: list[list[list[_Req]]] = []  # claim -> request -> alternatives
        self.selected: list[list[int]] = []
        self.constraints: list[list[_Constraint]] = []
        self.results: list[list[tuple[_Req, _Dev, str | None, dict | None]]] = []

    # ------------------------------------------------------------------ input

    def slices_of_pool(self, pid: tuple) -> list[Obj]:
        """All slices of a pool, any node and generation (index built on first use)."""
        if self._all_by_pool is None:
            index: dict[tuple, list[Obj]] = {}
            for s in self.inp.slices:
                spec = s.get("spec") or {}
                index.setdefault((spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")), []).append(s)
            self._all_by_pool = index
        return self._all_by_pool.get(pid, [])

    def gather_pools(self) -> None:
        by_pool: dict[tuple, list[Obj]] = {}  # node-relevant slices, newest generation
        node, node_name, partitionable = self.node, self.node_name, self.partitionable
        for s in self.inp.node_slices if self.inp.node_slices is not None else self.inp.slices:
            spec = s.get("spec") or {}
            slice_node = spec.get("nodeName")
            if slice_node:
                if slice_node != node_name or node is None:
                    continue  # the common case: another node's slice
            elif not partitionable and (spec.get("perDeviceNodeSelection") or spec.get("sharedCounters")):
                continue
            elif spec.get("sharedCounters"):
                pass  # always relevant: needed to use the pool
            elif spec.get("allNodes") or spec.get("nodeSelector") is not None:
                if not _node_matches(node, None, spec.get("allNodes"), spec.get("nodeSelector")):
                    continue
            elif spec.get("perDeviceNodeSelection"):
                if not any(_node_matches(node, d.get("nodeName"), d.get("allNodes"), d.get("nodeSelector"))
                           for d in spec.get("devices") or []):
                    continue
            else:
                continue  # some unknown future node selection
            pool_ref = spec.get("pool") or {}
            pid = (spec.get("driver", ""), pool_ref.get("name", ""))
            cur = by_pool.get(pid)
            gen = pool_ref.get("generation", 0)
            if cur is None or gen > cur[0]["spec"]["pool"].get("generation", 0):
                by_pool[pid] = [s]
            elif gen == cur[0]["spec"]["pool"].get("generation", 0):
                cur.append(s)
        rules = self.inp.taint_rules if self.taint_rules_on else []
        pools: list[_Pool] = []
        bound: list[_Pool] = []
        for pid, slices in by_pool.items():
            spec0 = slices[0]["spec"]
            gen = spec0["pool"].get("generation", 0)
            count = spec0["pool"].get("resourceSliceCount", 1)
            pool = _Pool(*pid)
            if len(slices) == count:
                all_gen = slices
            else:
                all_gen = []
                obsolete = False
                for s in self.slices_of_pool(pid):
                    g = (s["spec"].get("pool") or {}).get("generation", 0)
                    if g == gen:
                        all_gen.append(s)
                    elif g > gen:
                        obsolete = True
                if obsolete:
                    continue  # the driver is replacing this generation
                if len(all_gen) != count:
                    pool.incomplete = True
                    pools.append(pool)
                    continue
            pool.all_slices = all_gen
            self.build_pool(pool, sorted(slices, key=lambda s: (s.get("metadata") or {}).get("name", "")), rules)
            (bound if pool.has_binding else pools).append(pool)
        pools.sort(key=lambda p: (p.driver, p.name))
        bound.sort(key=lambda p: (p.driver, p.name))
        self.pools = pools + bound

    def build_pool(self, pool: _Pool, slices: list[Obj], rules: list[Obj]) -> None:
        names: set[str] = set()
        for s in (pool.all_slices if self.partitionable else []):
            for cs in s["spec"].get("sharedCounters") or []:
                if cs.get("name") in pool.counter_sets:
                    pool.invalid = f"duplicate counter set name {cs.get('name')}"
                    return
                pool.counter_sets[cs.get("name")] = {n: _qty(c) for n, c in (cs.get("counters") or {}).items()}
        for s in slices:
            spec = s["spec"]
            if self.partitionable and spec.get("sharedCounters"):
                continue
            per_device = bool(spec.get("perDeviceNodeSelection"))
            for d in spec.get("devices") or []:
                name = d.get("name", "")
                if name in names:
                    pool.invalid = f"duplicate device name {name}"
                    return
                names.add(name)
                if self.partitionable:
                    for cc in d.get("consumesCounters") or []:
                        cs = pool.counter_sets.get(cc.get("counterSet"))
                        if cs is None:
                            pool.invalid = f"counter set {cc.get('counterSet')} not found"
                            return
                        for cn in cc.get("counters") or {}:
                            if cn not in cs:
                                pool.invalid = f"counter {cn} not found in counter set {cc.get('counterSet')}"
                                return
                if per_device and not _node_matches(self.node, d.get("nodeName"), d.get("allNodes"),
                                                    d.get("nodeSelector")):
                    continue
                rule_taints = [r["spec"]["taint"] for r in rules if self._rule_selects(r, pool, name)]
                dev = _Dev(pool, s, d, rule_taints)
                if dev.binding:
                    pool.has_binding = True
                pool.devices.append(dev)

    @staticmethod
    def _rule_selects(rule: Obj, pool: _Pool, device: str) -> bool:
        spec = rule.get("spec") or {}
        if not spec.get("taint"):
            return False
        sel = spec.get("deviceSelector") or {}
        return ((not sel.get("driver") or sel["driver"] == pool.driver)
                and (not sel.get("pool") or sel["pool"] == pool.name)
                and (not sel.get("device") or sel["device"] == device))

    # ------------------------------------------------------------------ requests

    def _with_derived(self, req: _Req, spec: Obj) -> _Req:
        if self.inp.gates.enabled("DRADerivedAttributes"):
            req.derived = {d["name"]: d.get("expression", "") for d in spec.get("derivedAttributes") or []
                           if isinstance(d, dict) and d.get("name")}
        return req

    def prepare(self) -> None:
        gates = self.inp.gates
        for ci, claim in enumerate(self.claims):
            devices = (claim.get("spec") or {}).get("devices") or {}
            per_claim: list[list[_Req]] = []
            min_total = 0
            for request in devices.get("requests") or []:
                name = request.get("name", "")
                first = request.get("firstAvailable") or []
                if first:
                    if not gates.enabled("DRAPrioritizedList"):
                        raise _Error(f"claim {_kobj(claim)}, request {name}: has subrequests, but the "
                                     "DRAPrioritizedList feature is disabled")
                    alts = []
                    for sub in first:
                        if not self.consumable and sub.get("capacity"):
                            raise _Error(f"claim {_kobj(claim)}, subrequest {sub.get('name', '')}: has capacity "
                                         "requests, but the DRAConsumableCapacity feature is disabled")
                        alts.append(self.validate(ci, self._with_derived(_Req(name, sub.get("name", ""), sub, False),
                                                                         sub)))
                    min_total += min(r.num for r in alts)
                else:
                    exactly = request.get("exactly") or {}
                    if not self.consumable and exactly.get("capacity"):
                        raise _Error(f"claim {_kobj(claim)}, request {name}: has capacity requests, but the "
                                     "DRAConsumableCapacity feature is disabled")
                    req = self.validate(ci, self._with_derived(
                        _Req(name, None, exactly, bool(exactly.get("adminAccess"))), exactly))
                    alts = [req]
                    min_total += req.num
                per_claim.append(alts)
            if min_total > ALLOCATION_RESULTS_MAX_SIZE:
                raise _Error(f"claim {_kobj(claim)}: number of requested devices {min_total} exceeds the claim "
                             f"limit of {ALLOCATION_RESULTS_MAX_SIZE}")
            self.requests.append(per_claim)
            self.selected.append([0] * len(per_claim))
            constraints = []
            for i, c in enumerate(devices.get("constraints") or []):
                sets = gates.enabled("DRAListTypeAttributes")
                if c.get("matchAttribute"):
                    constraints.append(_Constraint(c.get("requests") or [], c["matchAttribute"], False, sets))
                elif c.get("distinctAttribute"):
                    constraints.append(_Constraint(c.get("requests") or [], c["distinctAttribute"], True, sets))
                else:
                    raise _Error(f"claim {_kobj(claim)}, constraint #{i}: empty constraint (unsupported constraint "
                                 "type?)")
            self.constraints.append(constraints)
            self.results.append([])

    def validate(self, ci: int, req: _Req) -> _Req:
        claim = self.claims[ci]
        for i, sel in enumerate(req.selectors):
            if not (sel.get("cel") or {}).get("expression"):
                raise _Error(f"claim {_kobj(claim)}, request {req.base if req.sub is None else req.sub}, "
                             f"selector #{i}: CEL expression empty (unsupported selector type?)")
        rname = req.base if req.sub is None else req.sub
        if not req.class_name:
            raise _Error(f"claim {_kobj(claim)}, request {rname}: missing device class name (unsupported request "
                         "type?)")
        cls = self.inp.classes.get(req.class_name)
        if cls is None:
            raise _Error(f"claim {_kobj(claim)}, request {rname}: could not retrieve device class "
                         f"{req.class_name}: deviceclass.resource.k8s.io \"{req.class_name}\" not found")
        req.class_obj = cls
        if req.mode == "ExactCount":
            req.num = req.count
        elif req.mode == "All":
            for pool in self.pools:
                if pool.incomplete:
                    raise _Error(f"claim {_kobj(claim)}, request {rname}: asks for all devices, but resource pool "
                                 f"{pool.pool_id} is currently being updated")
                if pool.invalid:
                    raise _Error(f"claim {_kobj(claim)}, request {rname}: asks for all devices, but resource pool "
                                 f"{pool.pool_id} is currently invalid")
            req.all_devs = [d for d in self.candidates(ci, req) if self.capacity_fits(req, d)[0]]
            req.num = len(req.all_devs)
        else:
            raise _Error(f"claim {_kobj(claim)}, request {rname}: unsupported count mode {req.mode}")
        return req

    def candidates(self, ci: int, req: _Req) -> list[_Dev]:
        """Devices matching class + request selectors (static, so computed once per request)."""
        if req.cands is not None:
            return req.cands
        out = []
        for pool in self.pools:
            if pool.invalid:
                continue  # skipped; reported only if nothing else can satisfy the pod (see run)
            for dev in pool.devices:
                if self.selectable(ci, req, dev):
                    out.append(dev)
        req.cands = out
        if self.trace is not None:
            self.trace_unselectable(ci, req)
        return out

    def selectable(self, ci: int, req: _Req, dev: _Dev) -> bool:
        if not self.binding_on and dev.binding:
            return False
        if dev.compat and not self.compat_on:
            return False  # KEP-5963: gate off, devices declaring groups are ignored
        if not self.partitionable and dev.consumes:
            return False
        cls = req.class_obj or {}
        if not self.selectors_match(ci, dev, (cls.get("spec") or {}).get("selectors") or [], cls):
            return False
        if not self.selectors_match(ci, dev, req.selectors, None):
            return False
        if self.taints_on:
            for taint in dev.taints:
                if taint.get("effect") not in _BLOCKING_EFFECTS:
                    continue
                if not any(_tolerates(t, taint) for t in req.tolerations):
                    return False
        return True

    def selectors_match(self, ci: int, dev: _Dev, selectors: list[Obj], cls: Obj | None) -> bool:
        for i, sel in enumerate(selectors):
            expr = (sel.get("cel") or {}).get("expression") or ""
            where = (f"class {(cls.get('metadata') or {}).get('name', '')}" if cls is not None
                     else f"claim {_kobj(self.claims[ci])}")
            try:
                compiled = cel.compile(expr, cost_limit=None)
            except cel.CELCompileError as e:
                raise _Error(f"{where}: selector #{i}: CEL compile error: {e.message}") from None
            try:
                if dev.key is None:
                    if not compiled.evaluate(dev.env()):
                        return False
                elif not cel.evaluate_cached(compiled, dev.key, dev.env()):
                    return False
            except cel.CELRuntimeError as e:
                raise _Error(f"{where}: selector #{i}: CEL runtime error: {e.message}") from None
        return True

    # ------------------------------------------------------------------ capacity

    def resolve_capacity(self, dev: _Dev) -> dict[tuple, tuple[str, Obj]]:
        """fq name -> (the device's spelling, DeviceCapacity); <driver>/x wins over x."""
        out: dict[tuple, tuple[str, Obj]] = {}
        prefix = dev.driver + "/"
        for name, cap in dev.caps.items():
            if name.startswith(prefix):
                out[(dev.driver, name[len(prefix):])] = (name, cap)
        for name, cap in dev.caps.items():
            if name.startswith(prefix):
                continue
            out.setdefault(_fq(name, dev.driver), (name, cap))
        return out

    def resolve_requests(self, req: _Req, dev: _Dev) -> dict[tuple, tuple[Fraction, Any]] | None:
        out: dict[tuple, tuple[Fraction, Any]] = {}
        for rname, rval in req.capacity.items():
            if rname in dev.caps:
                key = _fq(rname, dev.driver)
            else:
                domain, sep, ident = rname.partition("/")
                if sep:
                    if domain != dev.driver or ident not in dev.caps:
                        return None
                    key = (domain, ident)
                elif f"{dev.driver}/{rname}" in dev.caps:
                    key = (dev.driver, rname)
                else:
                    return None
            if key in out:
                raise _Error(f'capacity "{key[1]}" requested twice')
            out[key] = (_qty(rval), rval)
        return out

    def _step_round(self, v: Fraction, lo: Fraction, step: Fraction) -> Fraction:
        if not self.fractional:
            v, lo, step = Fraction(_ceil(v)), Fraction(_ceil(lo)), Fraction(_ceil(step))
        if step <= 0:
            return v
        n = _ceil((v - lo) / step)
        return lo + step * n

    def consumed_value(self, request: tuple[Fraction, Any] | None, cap: Obj) -> tuple[Fraction, Any]:
        """calculateConsumedCapacity -> (value, the quantity whose text or format the result takes)."""
        requested, raw = request if request is not None else (None, None)
        policy = cap.get("requestPolicy")
        total = _qty(cap.get("value"))
        if requested is None:
            if policy and policy.get("default") is not None:
                return _qty(policy["default"]), policy["default"]
            return total, cap.get("value")
        if not policy:
            return requested, raw
        rng = policy.get("validRange")
        if rng and rng.get("min") is not None:
            lo = _qty(rng["min"])
            if requested < lo:
                return lo, rng["min"]
            if rng.get("step") is None:
                return requested, raw
            return self._step_round(requested, lo, _qty(rng["step"])), rng["step"]
        if policy.get("validValues") is not None:
            for vv in policy["validValues"]:
                if requested <= _qty(vv):
                    return _qty(vv), vv
            return requested, raw
        return requested, raw

    def violates(self, value: Fraction, policy: Obj | None) -> bool:
        if not policy:
            return False
        if policy.get("default") is not None and value == _qty(policy["default"]):
            return False
        rng = policy.get("validRange")
        if rng:
            if rng.get("max") is not None and value > _qty(rng["max"]):
                return True
            if rng.get("step") is not None:
                lo, step = _qty(rng.get("min")), _qty(rng["step"])
                if not self.fractional:
                    value, lo, step = Fraction(_ceil(value)), Fraction(_ceil(lo)), Fraction(_ceil(step))
                if step and (value - lo) % step != 0:
                    return True
            return False
        if policy.get("validValues"):
            return all(value != _qty(v) for v in policy["validValues"])
        return False

    def capacity_fits(self, req: _Req, dev: _Dev) -> tuple[bool, dict | None]:
        """cmpRequestOverCapacity -> (fits, {status name: (value, hint)} when the device is shared)."""
        if not self.consumable:
            return True, None
        resolved = self.resolve_requests(req, dev)
        if resolved is None:
            return False, None
        caps = self.resolve_capacity(dev)
        consumed: dict[tuple, tuple[str, Fraction, Any]] = {}
        for key, (spelling, cap) in caps.items():
            value, hint = self.consumed_value(resolved.get(key), cap)
            if value < 0:
                raise _Error(f'capacity "{spelling}": capacity value is negative')
            consumed[key] = (spelling, value, hint)
        current = self.allocated_capacity.get(dev.id, {})
        allocating = self.allocating_capacity.get(dev.id, {})
        for key, (_, value, _) in consumed.items():
            cap = caps[key][1]
            if self.violates(value, cap.get("requestPolicy")):
                return False, None
            total = value + current.get(key, 0) + allocating.get(key, 0)
            if total > _qty(cap.get("value")):
                return False, None
        if not dev.allow_multi:
            return True, None
        return True, {k: v for k, v in consumed.items()}

    # ------------------------------------------------------------------ counters & compatibility groups

    def pool_available(self, pool: _Pool) -> dict[str, dict[str, Fraction]]:
        avail = self.available.get(id(pool))
        if avail is None:
            avail = {cs: dict(counters) for cs, counters in pool.counter_sets.items()}
            for s in pool.all_slices:
                for d in s["spec"].get("devices") or []:
                    if (pool.driver, pool.name, d.get("name", "")) not in self.allocated_any:
                        continue
                    for cc in d.get("consumesCounters") or []:
                        target = avail.get(cc.get("counterSet"))
                        if target is None:
                            continue
                        for n, c in (cc.get("counters") or {}).items():
                            if n in target:
                                target[n] -= _qty(c)
            self.available[id(pool)] = avail
        return avail

    def take_counters(self, dev: _Dev) -> bool:
        pool = dev.pool_obj
        avail = self.pool_available(pool)
        used = self.consumed.setdefault(id(pool), {})
        adds = []
        for cc in dev.consumes:
            cs = cc.get("counterSet")
            for n, c in (cc.get("counters") or {}).items():
                adds.append((cs, n, _qty(c)))
        for cs, n, v in adds:
            u = used.setdefault(cs, {})
            u[n] = u.get(n, Fraction(0)) + v
        for cs, n, _ in adds:
            if used[cs][n] > avail.get(cs, {}).get(n, Fraction(0)):
                self.give_counters(dev)
                return False
        return True

    def give_counters(self, dev: _Dev) -> None:
        used = self.consumed[id(dev.pool_obj)]
        for cc in dev.consumes:
            for n, c in (cc.get("counters") or {}).items():
                used[cc.get("counterSet")][n] -= _qty(c)

    def compat_base(self, pool: _Pool) -> dict[str, Any]:
        base = self.compat_baseline.get(id(pool))
        if base is None:
            base = {}
            for s in pool.all_slices:
                for d in s["spec"].get("devices") or []:
                    if (pool.driver, pool.name, d.get("name", "")) not in self.allocated_any:
                        continue
                    for cc in d.get("consumesCounters") or []:
                        cs = cc.get("counterSet")
                        base[cs] = _compat_add(base.get(cs), frozenset(cc.get("compatibilityGroups") or ()))
            self.compat_baseline[id(pool)] = base
        return base

    def take_compat(self, dev: _Dev) -> list[tuple] | None:
        """Admit the device on each counter set it consumes from; returns the undo list or None."""
        base = self.compat_base(dev.pool_obj)
        undo: list[tuple] = []
        for cc in dev.consumes:
            cs = cc.get("counterSet")
            key = (id(dev.pool_obj), cs)
            state = self.compat_state[key] if key in self.compat_state else base.get(cs)
            groups = frozenset(cc.get("compatibilityGroups") or ())
            if not _compat_admits(state, groups):
                for k, old, had in reversed(undo):
                    self._restore_compat(k, old, had)
                return None
            undo.append((key, self.compat_state.get(key), key in self.compat_state))
            self.compat_state[key] = _compat_add(state, groups)
        return undo

    def _restore_compat(self, key: tuple, old: Any, had: bool) -> None:
        if had:
            self.compat_state[key] = old
        else:
            self.compat_state.pop(key, None)

    # ------------------------------------------------------------------ search

    def tick(self) -> None:
        self.steps += 1
        if self.deadline is not None and self.steps % _DEADLINE_CHECK_EVERY == 1 and time.monotonic() > self.deadline:
            raise _Timeout()

    def in_use(self, did: tuple) -> bool:
        return did in self.allocated or bool(self.allocating.get(did))

    def try_device(self, ci: int, req: _Req, dev: _Dev, must: bool):
        """allocateDevice: returns an undo function, or None when the device cannot be used."""
        multi = self.consumable and dev.allow_multi
        if req.admin:
            if not multi and ci in self.allocating.get(dev.id, ()):
                if self.trace is not None:
                    self.trace.note(ci, req.name, dev.id, *self.why_in_use(ci, req, dev))
                return None
        elif self.in_use(dev.id):
            if self.trace is not None:
                self.trace.note(ci, req.name, dev.id, *self.why_taken(ci, req, dev))
            return None
        took_counters = False
        if dev.consumes:
            if not self.partitionable:
                return None
            first_use = self.allocating_any.get(dev.id, 0) == 0 and dev.id not in self.allocated_any
            if first_use:
                if not self.take_counters(dev):
                    if self.trace is not None:
                        self.trace.note(ci, req.name, dev.id, "CountersExhausted", self.why_counters(dev))
                    return None
                took_counters = True
        compat_undo = None
        if dev.consumes and self.compat_on and self.allocating_any.get(dev.id, 0) == 0 \
                and dev.id not in self.allocated_any:
            compat_undo = self.take_compat(dev)
            if compat_undo is None:
                if took_counters:
                    self.give_counters(dev)
                if self.trace is not None:
                    self.trace.note(ci, req.name, dev.id, "CompatibilityGroupConflict", self.why_compat(dev))
                return None
        constraints = self.constraints[ci]
        for i, c in enumerate(constraints):
            if not c.add(req, dev):
                if self.trace is not None:
                    self.trace.note(ci, req.name, dev.id, "ConstraintNotSatisfied", self.why_constraint(ci, c, dev))
                for j in range(i):
                    constraints[j].remove(req, dev)
                if took_counters:
                    self.give_counters(dev)
                if compat_undo:
                    for k, old, had in reversed(compat_undo):
                        self._restore_compat(k, old, had)
                if must:
                    raise _Error(f"claim {_kobj(self.claims[ci])}, request {req.sub or req.base}: cannot add device "
                                 f"{'/'.join(dev.id)} because a claim constraint would not be satisfied")
                return None
        fits, consumed = self.capacity_fits(req, dev)
        if not fits:
            if self.trace is not None:
                self.trace.note(ci, req.name, dev.id, "CapacityExceeded", self.why_capacity(req, dev))
            for c in constraints:
                c.remove(req, dev)
            if took_counters:
                self.give_counters(dev)
            if compat_undo:
                for k, old, had in reversed(compat_undo):
                    self._restore_compat(k, old, had)
            return None
        if not multi:
            self.allocating.setdefault(dev.id, set()).add(ci)
        self.allocating_any[dev.id] = self.allocating_any.get(dev.id, 0) + 1
        if consumed:
            agg = self.allocating_capacity.setdefault(dev.id, {})
            for k, (_, v, _) in consumed.items():
                agg[k] = agg.get(k, Fraction(0)) + v
        self.results[ci].append((req, dev, str(uuid.uuid1()) if multi else None, consumed))

        def undo() -> None:
            self.results[ci].pop()
            if consumed:
                agg = self.allocating_capacity[dev.id]
                for k, (_, v, _) in consumed.items():
                    agg[k] -= v
            self.allocating_any[dev.id] -= 1
            if not multi:
                self.allocating[dev.id].discard(ci)
            for c in constraints:
                c.remove(req, dev)
            if took_counters:
                self.give_counters(dev)
            if compat_undo:
                for k, old, had in reversed(compat_undo):
                    self._restore_compat(k, old, had)

        return undo

    def claim_step(self, ci: int) -> bool:
        if ci >= len(self.claims):
            return True
        try:
            return self.request_step(ci, 0)
        except _MaxSize:
            return False

    def request_step(self, ci: int, ri: int) -> bool:
        if ri >= len(self.requests[ci]):
            return self.claim_step(ci + 1)
        alts = self.requests[ci][ri]
        if len(alts) == 1 and alts[0].sub is None:
            return self.device_step(ci, ri, alts[0], 0)
        all_exceeded = True
        for si, req in enumerate(alts):
            try:
                ok = self.device_step(ci, ri, req, 0)
            except _MaxSize:
                continue
            all_exceeded = False
            if ok:
                self.selected[ci][ri] = si
                return True
        if all_exceeded:
            raise _MaxSize()
        return False

    def device_step(self, ci: int, ri: int, req: _Req, di: int) -> bool:
        self.tick()
        if req.mode == "All" and not req.all_devs:
            return False
        if di >= req.num:
            return self.request_step(ci, ri + 1)
        if len(self.results[ci]) + req.num - di > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSize()
        if req.mode == "All":
            undo = self.try_device(ci, req, req.all_devs[di], True)
            if undo is None:
                return False
            try:
                if self.device_step(ci, ri, req, di + 1):
                    return True
            except BaseException:
                undo()
                raise
            undo()
            return False
        for dev in self.candidates(ci, req):
            undo = self.try_device(ci, req, dev, False)
            if undo is None:
                continue
            try:
                if self.device_step(ci, ri, req, di + 1):
                    return True
            except BaseException:
                undo()
                raise
            undo()
        return False

    # ------------------------------------------------------------------ explanation (tracer only)
    # Called only when `inp.tracer` is set and a device was just rejected: they say why, in words, with the
    # values involved. The normal path never runs them.

    def trace_unselectable(self, ci: int, req: _Req) -> None:
        for pool in self.pools:
            if pool.incomplete:
                self.trace.note_pool(ci, req.name, pool.pool_id, "PoolIncomplete",
                                     f"pool {pool.pool_id} is incomplete: not all of its "
                                     "resourceSliceCount slices are published (it is being updated)")
            elif pool.invalid:
                self.trace.note_pool(ci, req.name, pool.pool_id, "PoolInvalid",
                                     f"pool {pool.pool_id} is invalid: {pool.invalid}")
            for dev in pool.devices:
                why = self.why_unselectable(ci, req, dev)
                self.trace.note(ci, req.name, dev.id, *(why or ("Usable", "")))

    def why_unselectable(self, ci: int, req: _Req, dev: _Dev) -> tuple[str, str] | None:
        if not self.binding_on and dev.binding:
            return "FeatureDisabled", "the device has bindingConditions and DRADeviceBindingConditions is off"
        if dev.compat and not self.compat_on:
            return "FeatureDisabled", "the device declares compatibilityGroups and DRADeviceCompatibilityGroups is off"
        if not self.partitionable and dev.consumes:
            return "FeatureDisabled", "the device consumes shared counters and DRAPartitionableDevices is off"
        cls = req.class_obj or {}
        cls_name = (cls.get("metadata") or {}).get("name", "")
        for where, selectors in ((f"class {cls_name}", (cls.get("spec") or {}).get("selectors") or []),
                                 (f"request {req.name}", req.selectors)):
            for i, sel in enumerate(selectors):
                expr = (sel.get("cel") or {}).get("expression") or ""
                if self.selectors_match(ci, dev, [sel], cls if where.startswith("class") else None):
                    continue
                seen = _quote_references(expr, dev)
                return "SelectorFalse", (f"{where} selector #{i} `{expr}` is false"
                                         + (f" (it saw {seen})" if seen else ""))
        if self.taints_on:
            for taint in dev.taints:
                if taint.get("effect") in _BLOCKING_EFFECTS and not any(_tolerates(t, taint)
                                                                        for t in req.tolerations):
                    value = f"={taint['value']}" if taint.get("value") else ""
                    return "Tainted", (f"taint {taint.get('key', '')}{value}:{taint.get('effect')} is not "
                                       "tolerated by the request")
        return None

    def why_in_use(self, ci: int, req: _Req, dev: _Dev) -> tuple[str, str]:
        for other, results in enumerate(self.results):
            for r, d, _, _ in results:
                if d is dev:
                    if other == ci and r.name == req.name:
                        return "Usable", ""  # taken by this very request for another of its devices
                    return "ChosenForOtherRequest", (f"already chosen for claim {_kobj(self.claims[other])}, "
                                                     f"request {r.name} of this pod")
        return "ChosenForOtherRequest", "already chosen for another request of this pod"

    def why_taken(self, ci: int, req: _Req, dev: _Dev) -> tuple[str, str]:
        if dev.id in self.allocated:
            holder = self.trace.holder(dev.id)
            return holder if holder else ("Allocated", "allocated to another claim")
        return self.why_in_use(ci, req, dev)

    def why_counters(self, dev: _Dev) -> str:
        avail = self.pool_available(dev.pool_obj)
        used = self.consumed.get(id(dev.pool_obj), {})
        for cc in dev.consumes:
            cs = cc.get("counterSet")
            for n, c in (cc.get("counters") or {}).items():
                need, hint = _qty(c), c.get("value") if isinstance(c, dict) else c
                left = avail.get(cs, {}).get(n, Fraction(0)) - used.get(cs, {}).get(n, Fraction(0))
                if need > left:
                    total = dev.pool_obj.counter_sets.get(cs, {}).get(n, Fraction(0))
                    return (f"counter set {cs}: counter {n} needs {_format(need, hint)}, only "
                            f"{_format(max(left, Fraction(0)), hint)} of {_format(total, hint)} left")
        return "its shared counters are used up"

    def why_compat(self, dev: _Dev) -> str:
        pool = dev.pool_obj
        base = self.compat_base(pool)
        for cc in dev.consumes:
            cs = cc.get("counterSet")
            key = (id(pool), cs)
            state = self.compat_state[key] if key in self.compat_state else base.get(cs)
            groups = frozenset(cc.get("compatibilityGroups") or ())
            if _compat_admits(state, groups):
                continue
            holders = [f"{'/'.join(d.id)} (this pod)" for results in self.results for _, d, _, _ in results
                       if d.pool_obj is pool and any(x.get("counterSet") == cs for x in d.consumes)]
            for s in pool.all_slices:
                for d in s["spec"].get("devices") or []:
                    if (pool.driver, pool.name, d.get("name", "")) in self.allocated_any and any(
                            x.get("counterSet") == cs for x in d.get("consumesCounters") or []):
                        holders.append(f"{pool.driver}/{pool.name}/{d.get('name', '')} (allocated)")
            mine = ", ".join(sorted(groups)) or "none"
            theirs = ", ".join(sorted(state)) if state else "none"
            return (f"counter set {cs}: its compatibility groups [{mine}] conflict with [{theirs}] of "
                    f"{', '.join(holders) or 'the partitions in use'}")
        return "compatibility group conflict"

    def why_constraint(self, ci: int, c: _Constraint, dev: _Dev) -> str:
        kind = "distinctAttribute" if c.distinct else "matchAttribute"
        mine = dev.attribute(c.attribute)
        if mine is None:
            return f"{kind} {c.attribute}: the device has no such attribute"
        for req, other, _, _ in self.results[ci]:
            if not c.applies(req):
                continue
            theirs = other.attribute(c.attribute)
            if c.distinct and theirs == mine:
                return (f"{kind} {c.attribute}: {_show(mine)} is also the value of device {'/'.join(other.id)} "
                        f"(request {req.name})")
            if not c.distinct and theirs != mine:
                return (f"{kind} {c.attribute}: the device has {_show(mine)} but device {'/'.join(other.id)} "
                        f"(request {req.name}) has {_show(theirs)}")
        return f"{kind} {c.attribute}: not satisfied"

    def why_capacity(self, req: _Req, dev: _Dev) -> str:
        resolved = self.resolve_requests(req, dev)
        if resolved is None:
            missing = [n for n in req.capacity if n not in dev.caps and f"{dev.driver}/{n}" not in dev.caps
                       and n.partition("/")[2] not in dev.caps]
            return f"the device has no capacity {', '.join(missing or list(req.capacity))}"
        caps = self.resolve_capacity(dev)
        current = self.allocated_capacity.get(dev.id, {})
        allocating = self.allocating_capacity.get(dev.id, {})
        for key, (spelling, cap) in caps.items():
            request = resolved.get(key)
            value, hint = self.consumed_value(request, cap)
            asked = "" if request is None else _format(request[0], request[1])
            rounded = (f"requests {asked}, rounded to {_format(value, hint)} by the request policy" if request
                       and request[0] != value else f"requests {_format(value, hint)}")
            if self.violates(value, cap.get("requestPolicy")):
                return f"capacity {spelling}: {rounded}, which its requestPolicy does not allow"
            total = _qty(cap.get("value"))
            left = total - current.get(key, 0) - allocating.get(key, 0)
            if value > left:
                return (f"capacity {spelling}: {rounded}, only {_format(max(left, Fraction(0)), cap.get('value'))} "
                        f"of {_format(total, cap.get('value'))} left")
        return "not enough capacity"

    # ------------------------------------------------------------------ output

    def node_selector(self, results: list) -> Obj | None:
        exprs: list[Obj] = []
        fields: list[Obj] = []
        for _, dev, _, _ in results:
            spec = dev.slice["spec"]
            if spec.get("perDeviceNodeSelection"):
                node_name, selector = dev.device.get("nodeName"), dev.device.get("nodeSelector")
            else:
                node_name, selector = spec.get("nodeName"), spec.get("nodeSelector")
            if node_name or (self.binding_on and dev.device.get("bindsToNode")):
                return {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [self.node_name]}]}]}
            if selector:
                terms = selector.get("nodeSelectorTerms") or []
                if len(terms) > 1:
                    raise _Error(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
                if terms:
                    for src, dst in ((terms[0].get("matchFields") or [], fields),
                                     (terms[0].get("matchExpressions") or [], exprs)):
                        for r in src:
                            if not any(_same_requirement(r, x) for x in dst):
                                dst.append(r)
        if not exprs and not fields:
            return None
        term: Obj = {}
        if exprs:
            term["matchExpressions"] = exprs
        if fields:
            term["matchFields"] = fields
        return {"nodeSelectorTerms": [term]}

    def build(self) -> list[Obj]:
        out = []
        for ci, claim in enumerate(self.claims):
            results = []
            any_binding = False
            for req, dev, share_id, consumed in self.results[ci]:
                r: Obj = {"request": req.name, "driver": dev.driver, "pool": dev.pool, "device": dev.name}
                if req.admin:
                    r["adminAccess"] = True
                if req.tolerations:
                    r["tolerations"] = [dict(t) for t in req.tolerations]
                if self.binding_on and dev.device.get("bindingConditions"):
                    any_binding = True
                    r["bindingConditions"] = list(dev.device["bindingConditions"])
                    r["bindingFailureConditions"] = list(dev.device.get("bindingFailureConditions") or [])
                if self.skip_ops_on and dev.slice["spec"].get("skipNodeOperations"):
                    r["skipNodeOperations"] = list(dev.slice["spec"]["skipNodeOperations"])
                if share_id:
                    r["shareID"] = share_id
                if consumed:
                    r["consumedCapacity"] = {spelling: _format(v, hint) for spelling, v, hint in consumed.values()}
                results.append(r)
            config: list[Obj] = []
            spec_devices = (claim.get("spec") or {}).get("devices") or {}
            chosen_names: set[str] = set()
            for ri, alts in enumerate(self.requests[ci]):
                req = alts[self.selected[ci][ri]]
                chosen_names.add(req.base)
                if req.sub is not None:
                    chosen_names.add(req.name)
                for c in ((req.class_obj or {}).get("spec") or {}).get("config") or []:
                    config.append({"source": "FromClass", **{k: v for k, v in c.items() if k != "requests"}})
            for c in spec_devices.get("config") or []:
                names = c.get("requests") or []
                if names and not any(n in chosen_names for n in names):
                    continue
                entry: Obj = {"source": "FromClaim"}
                if names:
                    entry["requests"] = list(names)
                entry.update({k: v for k, v in c.items() if k != "requests"})
                config.append(entry)
            devices: Obj = {"results": results}
            if config:
                devices["config"] = config
            allocation: Obj = {"devices": devices}
            ns = self.node_selector(self.results[ci])
            if ns is not None:
                allocation["nodeSelector"] = ns
            if any_binding:
                allocation["allocationTimestamp"] = datetime.datetime.now(datetime.timezone.utc).strftime(
                    "%Y-%m-%dT%H:%M:%SZ")
            out.append(allocation)
        return out

    def run(self) -> AllocationOutcome:
        self.gather_pools()
        self.prepare()
        if not self.claim_step(0):
            if any(pool.invalid for pool in self.pools):
                # Upstream: a node-local failure that names no pool, and only when the search found nothing.
                return AllocationOutcome(reason="invalid resource pools were encountered")
            return AllocationOutcome(reason="cannot allocate all claims")
        return AllocationOutcome(allocations=self.build())


_REFERENCE = re.compile(r'device\.(attributes|capacity)\[\s*"([^"]+)"\s*\]\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)'
                        r'|device\.(attributes|capacity)\[\s*"([^"]+)"\s*\]\s*\[\s*"([^"]+)"\s*\]|device\.driver')


def _quote_references(expr: str, dev: _Dev) -> str:
    """The device values an expression reads (device.driver, device.attributes["d"].x, device.capacity[...]),
    as `ref = value` pairs, so that an explanation shows what a false selector saw."""
    seen: list[str] = []
    for m in _REFERENCE.finditer(expr):
        field, domain, ident = (m.group(1), m.group(2), m.group(3)) if m.group(1) else (m.group(4), m.group(5),
                                                                                          m.group(6))
        if field is None:
            text = f'device.driver = "{dev.driver}"'
        else:
            key = ident if domain == dev.driver else f"{domain}/{ident}"
            if field == "attributes":
                value = dev.attribute(f"{domain}/{ident}")
                shown = _show(value) if value is not None else "(not set)"
            else:
                cap = dev.caps.get(key) or dev.caps.get(f"{domain}/{ident}")
                shown = str(cap.get("value")) if cap else "(not set)"
            text = f"{m.group(0)} = {shown}"
        if text not in seen:
            seen.append(text)
    return ", ".join(seen)


def _show(value: tuple | None) -> str:
    if value is None:
        return "(not set)"
    kind, v = value
    if kind in ("string", "version"):
        return f'"{v}"'
    if kind == "bool":
        return "true" if v else "false"
    return str(list(v)) if isinstance(v, tuple) else str(v)


def _ceil(v: Fraction) -> int:
    return -((-v.numerator) // v.denominator)


def _compat_admits(state: Any, groups: frozenset) -> bool:
    """state None: no member yet; frozenset(): all members declared no groups; else the intersection."""
    if state is None:
        return True
    if not groups:
        return not state
    if not state:
        return False
    return bool(state & groups)


def _compat_add(state: Any, groups: frozenset) -> Any:
    if state is None:
        return groups
    if not state or not groups:
        return state
    return state & groups


def _same_requirement(a: Obj, b: Obj) -> bool:
    return (a.get("key") == b.get("key") and a.get("operator") == b.get("operator")
            and set(a.get("values") or []) == set(b.get("values") or []))


def _format(v: Fraction, hint: Any) -> str:
    """The consumed quantity as upstream serializes it: the request / policy value as written when the value
    is that one, else in the format of the quantity it derives from (resource.NewQuantity(v, format))."""
    fmt = None
    if hint is not None:
        try:
            q = hint if isinstance(hint, Quantity) else Quantity.parse(str(hint))
            if q.to_fraction() == v:
                return str(q)
            fmt = q.format
        except ValueError:
            pass
    if v.denominator == 1:
        return str(Quantity.from_int(int(v), fmt) if fmt else Quantity.from_int(int(v)))
    milli = v * 1000
    if milli.denominator == 1:
        return f"{int(milli)}m"
    return str(float(v))


def allocate(inp: AllocationInput) -> AllocationOutcome:
    """Allocate devices for all of `inp.claims` together on `inp.node` (see the module docstring)."""
    try:
        return _Allocator(inp).run()
    except _Timeout:
        return AllocationOutcome(reason="timed out trying to allocate devices", timed_out=True)
    except _Error as e:
        return AllocationOutcome(reason=str(e))
