"""The allocated state: what the claims' allocation results (written or in flight) hold."""

from __future__ import annotations

from fractions import Fraction

from dramock.scheduler.allocator.model import _fq, _qty
from dramock.scheduler.types import AllocatedDevices, Obj


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
