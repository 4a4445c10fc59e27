"""The allocator's state for one allocation: its input, the allocated state, and the search's tentative
state. Each concept of the search (pools, matching, capacity, counters, ...) is a class on top of this one."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dramock.scheduler.allocator.allocated import allocated_devices
from dramock.scheduler.allocator.constraints import _Constraint
from dramock.scheduler.allocator.model import Amount, _Dev, _Pool, _Req, _View
from dramock.scheduler.types import AllocationInput, Obj


class _State:
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
        self.pool_version, self.versions_of = held.pool_version, held.versions_of
        # Search state.
        self.allocating: dict[tuple, set[int]] = {}
        self.allocating_any: dict[tuple, int] = {}  # device -> number of tentative results (counters)
        self.allocating_capacity: dict[tuple, dict[tuple, Fraction]] = {}
        self.available: dict[int, dict[str, dict[str, Amount]]] = {}  # id(pool) -> counters left
        self.consumed: dict[int, dict[str, dict[str, Amount]]] = {}  # id(pool) -> tentatively used
        self.compat_state: dict[tuple, Any] = {}  # (pool id, counter set) -> intersection state
        self.compat_baseline: dict[int, dict[str, Any]] = {}
        self.dead: dict[int, bool] = {}  # id(pool) -> no device of it can be taken (counters.pool_dead)
        self.pools: list[_Pool] = []
        self.view = _View([], [])  # the pools (gather_pools) and what the search derives from them alone
        self._all_by_pool: dict[tuple, list[Obj]] | None = None
        self.claims = inp.claims
        self.requests: list[list[list[_Req]]] = []  # claim -> request -> alternatives
        self.selected: list[list[int]] = []
        self.constraints: list[list[_Constraint]] = []
        self.results: list[list[tuple[_Req, _Dev, str | None, dict | None]]] = []
