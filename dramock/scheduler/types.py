"""The allocator's contract with the scheduling loop (shared by both; no I/O here).

The allocator is a pure function: `allocate(AllocationInput) -> AllocationOutcome`. The loop gathers the
input from its informers (ResourceSlices, DeviceClasses, DeviceTaintRules, allocated claims) and keeps the
in-flight allocations it has reserved in memory but not yet written, so two pods never get one device.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dramock.schemas.featuregates import FeatureGates

Obj = dict[str, Any]


@dataclass
class AllocatedDevices:
    """The devices that allocated and in-flight claims hold, keyed (driver, pool, device): built by
    allocator.allocated_devices(), or kept up to date by the loop (scheduler.state.HeldDevices)."""

    exclusive: set[tuple] = field(default_factory=set)  # taken (not adminAccess, not a consumable share)
    consuming: set[tuple] = field(default_factory=set)  # exclusive or shared: its counters are consumed
    capacity: dict[tuple, dict[tuple, Fraction]] = field(default_factory=dict)  # consumed by shares
    # Kept up to date alongside by the loop: per pool (driver, pool name), a counter bumped whenever what is held
    # there changes, and an object standing for that series of counters (None: no counters; the allocator then
    # looks at the devices themselves to tell whether a pool's holdings changed).
    pool_version: dict[tuple[str, str], int] | None = None
    versions_of: object | None = None


@dataclass
class AllocationInput:
    # The pod's claims that still need an allocation (v1 wire shape), allocated together.
    claims: list[Obj]
    # The candidate node (v1 Node), or None to allocate without a node (e.g. network-attached only).
    node: Obj | None
    slices: list[Obj]
    classes: dict[str, Obj]  # DeviceClass name -> object
    # Claims whose status.allocation is already written: their devices, shares, consumed capacity and
    # counters are in use (adminAccess results do not take devices away from others).
    allocated: list[Obj] = field(default_factory=list)
    # Allocations reserved in memory by the scheduler for other pods, not yet written (same shape as a
    # claim with status.allocation).
    in_flight: list[Obj] = field(default_factory=list)
    taint_rules: list[Obj] = field(default_factory=list)
    gates: FeatureGates = field(default_factory=FeatureGates)
    # time.monotonic() deadline (FilterTimeout); None = no limit.
    deadline: float | None = None
    # Precomputed from `allocated` + `in_flight` (the allocator then reads only this); None: computed here.
    allocated_devices: AllocatedDevices | None = None
    # The slices that can matter on `node`: its node-local ones and every slice without nodeName (only the
    # node-local ones when `shared_slices` is given); None: all of `slices` (which stays the whole list: pool
    # completeness looks at every node's slices).
    node_slices: list[Obj] | None = None
    # The slices without nodeName, when the caller keeps them apart: the node then sees `node_slices` (its
    # node-local ones; None: none) and these. Passing the same list object (and the same `slices`) while the
    # slices do not change lets the allocator share its view of them across nodes and calls.
    shared_slices: list[Obj] | None = None
    # Explanation mode (dramock.scheduler.explain.Tracer): told why each device was passed over; None on the
    # scheduler's path, where the allocator then does no extra work.
    tracer: Any = None


@dataclass
class AllocationOutcome:
    # One status.allocation per input claim, in input order, when everything fits on the node.
    allocations: list[Obj] | None = None
    # Why not, in upstream's words (e.g. "cannot allocate all claims"), when allocations is None.
    reason: str = ""
    # True when the time budget ran out (the node is unschedulable for this pod, as upstream).
    timed_out: bool = False

    @property
    def fits(self) -> bool:
        return self.allocations is not None
