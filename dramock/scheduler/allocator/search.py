"""The search: an exhaustive first-fit search with backtracking over the claims, their requests and the
candidate devices (upstream's allocator), and `allocate`, the allocator's one entry point."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from fractions import Fraction

from dramock.scheduler.allocator.model import (
    _DEADLINE_CHECK_EVERY,
    ALLOCATION_RESULTS_MAX_SIZE,
    _Dev,
    _Error,
    _kobj,
    _MaxSize,
    _Req,
    _Timeout,
)
from dramock.scheduler.allocator.results import _Results
from dramock.scheduler.types import AllocationInput, AllocationOutcome


class _Allocator(_Results):
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
            # Taking counters is the costly step; a device the claim's constraints refuse is refused either way,
            # so check them first (only where the outcome is all that counts: no trace, no `must` error).
            if self.trace is None and not must and \
                    not all(c.admits(req, dev) for c in self.constraints[ci]):
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

        def release(added_constraints: int) -> None:
            """Undo what was taken for this device so far: constraint entries, counters, compatibility."""
            for c in constraints[:added_constraints]:
                c.remove(req, dev)
            if took_counters:
                self.give_counters(dev)
            if compat_undo:
                for k, old, had in reversed(compat_undo):
                    self._restore_compat(k, old, had)

        for i, c in enumerate(constraints):
            if not c.add(req, dev):
                if self.trace is not None:
                    self.trace.note(ci, req.name, dev.id, "ConstraintNotSatisfied", self.why_constraint(ci, c, dev))
                release(i)
                if must:
                    raise _Error(f"claim {_kobj(self.claims[ci])}, request {req.sub or req.base}: cannot add device "
                                 f"{'/'.join(dev.id)} because a claim constraint would not be satisfied")
                return None
        fits, consumed = self.capacity_fits(req, dev)
        if not fits:
            if self.trace is not None:
                self.trace.note(ci, req.name, dev.id, "CapacityExceeded", self.why_capacity(req, dev))
            release(len(constraints))
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
            release(len(constraints))

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
            return undo is not None and self._descend(ci, ri, req, di, undo)
        cands = self.narrowed(ci, req, self.candidates(ci, req))
        if cands is req.cands and self.trace is None and not req.admin:
            # Passing over the pools none of whose devices try_device would take (pool_dead).
            pool, dead = None, False
            for dev in cands:
                if dev.pool_obj is not pool:
                    pool = dev.pool_obj
                    dead = self.pool_dead(pool)
                if dead:
                    continue
                undo = self.try_device(ci, req, dev, False)
                if undo is not None and self._descend(ci, ri, req, di, undo):
                    return True
            return False
        for dev in cands:
            undo = self.try_device(ci, req, dev, False)
            if undo is not None and self._descend(ci, ri, req, di, undo):
                return True
        return False

    def narrowed(self, ci: int, req: _Req, cands: list[_Dev]) -> list[_Dev]:
        """The candidates a matchAttribute constraint whose value is already fixed still admits, in the same
        order: try_device would refuse the others without changing anything, so only runs that trace every
        device's reason try them. The devices are grouped by that attribute once per candidate list (kept with the
        view of the pools, see candidates)."""
        if self.trace is not None:
            return cands
        for c in self.constraints[ci]:
            if c.distinct or c.sets or not c.values or not c.applies(req) or c.attribute in req.derived:
                continue
            gkey = (id(cands), c.attribute)
            hit = self.view.groups.get(gkey)
            if hit is not None and hit[0] is cands:
                groups = hit[1]
            else:
                groups = {}
                try:
                    for dev in cands:
                        v = dev.attribute(c.attribute)
                        if v is not None:
                            groups.setdefault(v, []).append(dev)
                except TypeError:  # a value that cannot be a key: no narrowing by this attribute
                    continue
                if len(self.view.groups) >= 256:
                    self.view.groups.clear()
                self.view.groups[gkey] = (cands, groups)
            try:
                return groups.get(c.values[0], [])
            except TypeError:
                continue
        return cands

    def _descend(self, ci: int, ri: int, req: _Req, di: int, undo: Callable[[], None]) -> bool:
        """Search on with device `di` taken; it is given back unless the search below succeeded."""
        try:
            found = self.device_step(ci, ri, req, di + 1)
        except BaseException:
            undo()
            raise
        if not found:
            undo()
        return found

    def run(self) -> AllocationOutcome:
        self.gather_pools()
        self.prepare()
        if not self.claim_step(0):
            if any(pool.invalid for pool in self.pools):
                # Upstream: a node-local failure that names no pool, and only when the search found nothing.
                return AllocationOutcome(reason="invalid resource pools were encountered")
            return AllocationOutcome(reason="cannot allocate all claims")
        return AllocationOutcome(allocations=self.build())


def allocate(inp: AllocationInput) -> AllocationOutcome:
    """Allocate devices for all of `inp.claims` together on `inp.node` (see the module docstring)."""
    try:
        return _Allocator(inp).run()
    except _Timeout:
        return AllocationOutcome(reason="timed out trying to allocate devices", timed_out=True)
    except _Error as e:
        return AllocationOutcome(reason=str(e))
