"""DRANodeAllocatableResources (KEP-5517): node resources (cpu, memory, hugepages, ...) that DRA devices bring along.

A device may declare `nodeAllocatableResources`: per node resource, a `mapping` (a fixed `deviceMultiplier`, or
`capacityMultiplier` times the consumed `capacityKey` of a shared device) and an `overhead` (`perPod`,
`perContainer`). When such a device is allocated to a pod's claim, the scheduler adds those amounts to what the
pod asks of the node, writes them to `pod.status.nodeAllocatableResourceClaimStatuses` (one entry per claim, with
the containers using it), and counts them against the node for every bound pod from that status. A claim with a
mapped device cannot be shared between pods.

Amounts are summed as upstream's PodRequests does with UseDRANodeAllocatableResourceClaimStatus, simplified:
a claim's mapping and its per-pod overhead count once, its per-container overhead once per listed container.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dramock.schemas.quantity import format_like, parse_quantity

Obj = dict[str, Any]
DeviceIndex = dict[tuple[str, str, str], Obj]

MSG_SHARED = "node allocatable resource claim {name} has a mapped device and cannot be shared across pods"


def device_index(slices: list[Obj]) -> DeviceIndex:
    return {(s["spec"].get("driver", ""), (s["spec"].get("pool") or {}).get("name", ""), d.get("name", "")): d
            for s in slices for d in s["spec"].get("devices") or []}


def _q(v: Any) -> Fraction:
    return parse_quantity(str(v)) if v is not None else Fraction(0)


def _consumed(result: Obj, key: str) -> Any:
    consumed = result.get("consumedCapacity") or {}
    if key in consumed:
        return consumed[key]
    domain, _, ident = key.partition("/")
    return consumed.get(ident) if domain == result.get("driver") else None


def has_mapped_device(allocation: Obj | None, devices: DeviceIndex) -> bool:
    for r in ((allocation or {}).get("devices") or {}).get("results") or []:
        dev = devices.get((r.get("driver", ""), r.get("pool", ""), r.get("device", "")))
        if dev and any(m.get("mapping") for m in (dev.get("nodeAllocatableResources") or {}).values()):
            return True
    return False


def claim_statuses(pod: Obj, claims: list[tuple[str, str, Obj | None]], devices: DeviceIndex) -> list[Obj]:
    """pod.status.nodeAllocatableResourceClaimStatuses for `claims` ((pod claim name, ResourceClaim name,
    allocation)), sorted by claim name; claims without such devices are left out."""
    out = []
    spec = pod.get("spec") or {}
    for pod_claim, claim_name, allocation in claims:
        mapped: dict[str, tuple[Fraction, str]] = {}
        overhead: dict[str, dict[str, tuple[Fraction, str]]] = {}
        for r in ((allocation or {}).get("devices") or {}).get("results") or []:
            dev = devices.get((r.get("driver", ""), r.get("pool", ""), r.get("device", "")))
            for res, spec_ in ((dev or {}).get("nodeAllocatableResources") or {}).items():
                m = spec_.get("mapping") or {}
                if m.get("capacityKey"):
                    used = _consumed(r, m["capacityKey"])
                    if used is not None:
                        amount = _q(used) * (_q(m["capacityMultiplier"]) if m.get("capacityMultiplier") else 1)
                        prev = mapped.get(res, (Fraction(0), str(used)))
                        mapped[res] = (prev[0] + amount, prev[1])
                elif m.get("deviceMultiplier") is not None:
                    prev = mapped.get(res, (Fraction(0), str(m["deviceMultiplier"])))
                    mapped[res] = (prev[0] + _q(m["deviceMultiplier"]), prev[1])
                o = spec_.get("overhead") or {}
                for part in ("perPod", "perContainer"):
                    if o.get(part) is not None:
                        entry = overhead.setdefault(res, {})
                        prev = entry.get(part, (Fraction(0), str(o[part])))
                        entry[part] = (prev[0] + _q(o[part]), prev[1])
        if not mapped and not overhead:
            continue
        containers = [c["name"] for group in ("initContainers", "containers") for c in spec.get(group) or []
                      if any(rc.get("name") == pod_claim for rc in (c.get("resources") or {}).get("claims") or [])]
        out.append({
            "resourceClaimName": claim_name, "containers": containers,
            "mapping": [{"name": n, "quantity": format_like(v, like)}
                        for n, (v, like) in sorted(mapped.items())],
            "overhead": [{"name": n, **{p: format_like(v, like) for p, (v, like) in parts.items()}}
                         for n, parts in sorted(overhead.items())]})
    return sorted(out, key=lambda s: s["resourceClaimName"])


def add_to_requests(total: dict[str, Fraction], statuses: list[Obj] | None) -> dict[str, Fraction]:
    """`total` plus what the claim statuses bring along (a new dict)."""
    out = dict(total)
    for s in statuses or []:
        for m in s.get("mapping") or []:
            out[m["name"]] = out.get(m["name"], Fraction(0)) + _q(m.get("quantity"))
        for o in s.get("overhead") or []:
            extra = _q(o.get("perPod")) + _q(o.get("perContainer")) * len(s.get("containers") or [])
            out[o["name"]] = out.get(o["name"], Fraction(0)) + extra
    return out
