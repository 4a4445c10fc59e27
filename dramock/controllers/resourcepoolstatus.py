"""The ResourcePoolStatusRequest controller (DRAResourcePoolStatus, KEP-5677, kube-controller-manager).

A `resource.k8s.io/v1alpha3` ResourcePoolStatusRequest asks once for the state of a driver's pools (optionally
one pool). The controller answers every request without a status, once, from its informers' view of the
ResourceSlices, ResourceClaims and DeviceTaintRules:

- only the slices of a pool's newest generation count; a pool with fewer of them than `resourceSliceCount` is
  incomplete: the request is retried a few times (the driver may still be publishing), then answered with that
  pool's `validationError` (`PoolIncomplete: ...`) and no device counts;
- `totalDevices` counts the pool's devices, `allocatedDevices` the distinct devices in allocation results
  (adminAccess results do not count), `unavailableDevices` the unallocated ones with a NoSchedule or NoExecute
  taint (of their own, or from a DeviceTaintRule selecting them); `availableDevices` is what remains;
- `nodeName` when every slice of the pool names the same node; pools sorted by driver and pool name, the first
  `spec.limit` reported and `poolCount` counting all of them; a `Complete` condition, reason
  `CalculationComplete`, message `Calculated status for N pools` (`(M incomplete)` appended when some are).

- `shareableSummary` for pools with `allowMultipleAllocations` devices: devices no claim uses (fully available)
  or some use (partially), and per capacity name the pool's total, what results consumed and what remains.

Not computed: the partitionSummary view (it belongs to DRAPartitionableDevicesType, not a 1.37 gate).

The controller runs only when the server serves the kind (`--runtime-config resource.k8s.io/v1alpha3=true` and
the gate), which it learns from discovery, as a controller of an API that is off stays idle.
"""

from __future__ import annotations

import asyncio
import logging
from fractions import Fraction
from typing import Any

from dramock import timefmt
from dramock.client import discovery
from dramock.client.informer import Informer, WorkQueue, run_worker
from dramock.client.rest import Client, resource_path
from dramock.schemas.quantity import format_like, parse_quantity

log = logging.getLogger("dramock.controllers.resourcepoolstatus")
Obj = dict[str, Any]

GROUP, VERSION, PLURAL = "resource.k8s.io", "v1alpha3", "resourcepoolstatusrequests"
LIMIT_DEFAULT = 100
VALIDATION_ERROR_MAX_BYTES = 256
# Incomplete pools: how often a request is tried again before it is answered as it is.
INCOMPLETE_RETRIES = 5
INCOMPLETE_RETRY_DELAY = 0.2  # seconds, doubled each time


def _unavailable(driver: str | None, pool: str, device: Obj, rules: list[Obj]) -> bool:
    if any(t.get("effect") in ("NoSchedule", "NoExecute") for t in device.get("taints") or []):
        return True
    for rule in rules:
        spec = rule.get("spec") or {}
        if (spec.get("taint") or {}).get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        sel = spec.get("deviceSelector")
        if sel is None:
            continue  # a rule without a selector matches nothing
        if all(sel.get(k) is None or sel.get(k) == v for k, v in (("driver", driver), ("pool", pool),
                                                                  ("device", device.get("name")))):
            return True
    return False


def calculate(request: Obj, slices: list[Obj], claims: list[Obj], rules: list[Obj]) -> Obj:
    """The status answering `request` (upstream's calculatePoolStatus without the partition/shareable views)."""
    spec = request.get("spec") or {}
    driver, pool_filter = spec.get("driver"), spec.get("poolName")
    mine = [s for s in slices if (s.get("spec") or {}).get("driver") == driver
            and (not pool_filter or s["spec"]["pool"]["name"] == pool_filter)]
    newest: dict[str, int] = {}
    for s in mine:
        name, gen = s["spec"]["pool"]["name"], int(s["spec"]["pool"].get("generation") or 0)
        newest[name] = max(newest.get(name, gen), gen)
    pools: dict[str, Obj] = {}
    for s in mine:
        p = s["spec"]["pool"]
        if int(p.get("generation") or 0) < newest[p["name"]]:
            continue
        devices = s["spec"].get("devices") or []
        info = pools.setdefault(p["name"], {"node": s["spec"].get("nodeName") or "", "mixed": False, "total": 0,
                                            "unavailable": 0, "slices": 0, "devices": [],
                                            "expected": int(p.get("resourceSliceCount") or 0)})
        if info["slices"] and (s["spec"].get("nodeName") or "") != info["node"]:
            info["mixed"] = True
        info["slices"] += 1
        info["total"] += len(devices)
        info["unavailable"] += sum(1 for d in devices if _unavailable(driver, p["name"], d, rules))
        info["devices"] += devices
    allocated: dict[str, set[str]] = {}
    consumed: dict[str, dict[str, list]] = {}  # pool -> capacity name -> [quantity strings]
    for c in claims:
        for r in ((((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []):
            if r.get("driver") == driver and not r.get("adminAccess"):
                allocated.setdefault(r.get("pool", ""), set()).add(r.get("device", ""))
                for name, q in (r.get("consumedCapacity") or {}).items():
                    consumed.setdefault(r.get("pool", ""), {}).setdefault(name, []).append(q)
    out: list[Obj] = []
    for name, info in pools.items():
        pool: Obj = {"driver": driver, "poolName": name, "generation": newest[name]}
        if info["node"] and not info["mixed"]:
            pool["nodeName"] = info["node"]
        if info["slices"] < info["expected"]:
            pool["validationError"] = (f"PoolIncomplete: pool {driver}/{name} is incomplete: observed "
                                       f"{info['slices']}/{info['expected']} slices at generation "
                                       f"{newest[name]}")[:VALIDATION_ERROR_MAX_BYTES]
        else:
            in_use = len(allocated.get(name, set()))
            pool.update(resourceSliceCount=info["slices"], totalDevices=info["total"], allocatedDevices=in_use,
                        availableDevices=max(0, info["total"] - in_use - info["unavailable"]),
                        unavailableDevices=info["unavailable"])
            shareable = _shareable_summary(info["devices"], allocated.get(name, set()), consumed.get(name, {}))
            if shareable is not None:
                pool["shareableSummary"] = shareable
        out.append(pool)
    out.sort(key=lambda p: (p["driver"], p["poolName"]))
    count = len(out)
    out = out[:int(spec.get("limit") or LIMIT_DEFAULT)]
    incomplete = sum(1 for p in out if "validationError" in p)
    message = f"Calculated status for {len(out)} pools" + (f" ({incomplete} incomplete)" if incomplete else "")
    status: Obj = {"poolCount": count,
                   "conditions": [{"type": "Complete", "status": "True", "reason": "CalculationComplete",
                                   "message": message, "lastTransitionTime": timefmt.now()}]}
    if out:
        status["pools"] = out
    return status


def _sum(quantities: list) -> tuple[Fraction, str]:
    """(exact sum, the first quantity's spelling for the format) of quantity strings."""
    total = sum((parse_quantity(str(q)) for q in quantities), Fraction(0))
    return total, str(quantities[0]) if quantities else "0"


def _shareable_summary(devices: list[Obj], in_use: set[str], consumed: dict[str, list]) -> Obj | None:
    """Upstream's computeShareableSummary: None when no device of the pool allows multiple allocations."""
    shareable = [d for d in devices if d.get("allowMultipleAllocations")]
    if not shareable:
        return None
    totals: dict[str, list] = {}
    for d in shareable:
        for name, cap in (d.get("capacity") or {}).items():
            totals.setdefault(name, []).append(cap.get("value", "0"))
    capacity = []
    for name in sorted(totals):
        total, like = _sum(totals[name])
        used, used_like = _sum(consumed.get(name, []))
        capacity.append({"name": name, "total": format_like(total, like), "consumed": format_like(used, used_like),
                         "available": format_like(max(total - used, Fraction(0)), like)})
    busy = sum(1 for d in shareable if d.get("name") in in_use)
    summary: Obj = {"fullyAvailableDevices": len(shareable) - busy, "partiallyAvailableDevices": busy}
    if capacity:
        summary["capacity"] = capacity
    return summary



class ResourcePoolStatusController:
    def __init__(self, client: Client, incomplete_retries: int = INCOMPLETE_RETRIES):
        self.client = client
        self.incomplete_retries = incomplete_retries
        self.requests = Informer(client, resource_path(GROUP, VERSION, PLURAL))
        self.slices = Informer(client, resource_path(GROUP, "v1", "resourceslices"))
        self.claims = Informer(client, resource_path(GROUP, "v1", "resourceclaims"))
        self.rules = Informer(client, resource_path(GROUP, "v1", "devicetaintrules"))
        self.queue = WorkQueue()
        self._tries: dict[str, int] = {}
        self.requests.add_handler(lambda _t, obj, _old: self._enqueue(obj))

    def _enqueue(self, request: Obj) -> None:
        if request.get("status") is None:
            self.queue.add(request["metadata"]["name"])

    async def run(self, stop: asyncio.Event) -> None:
        if not await discovery.serves(self.client, GROUP, VERSION, PLURAL, stop):
            log.info("ResourcePoolStatusRequests are not served (DRAResourcePoolStatus off or %s/%s not enabled); "
                     "the controller stays idle", GROUP, VERSION)
            return
        informers = (self.requests, self.slices, self.claims, self.rules)
        tasks = [asyncio.create_task(i.run(stop)) for i in informers]
        try:
            await asyncio.gather(*(i.synced.wait() for i in informers))
            tasks.append(asyncio.create_task(run_worker(self.queue, self.sync, stop, "resourcepoolstatus")))
            await stop.wait()
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def sync(self, name: str) -> None:
        request = self.requests.get(None, name)
        if request is None or request.get("status") is not None:
            self._tries.pop(name, None)
            return
        status = calculate(request, self.slices.list(), self.claims.list(), self.rules.list())
        if any("validationError" in p for p in status.get("pools") or []):
            tries = self._tries[name] = self._tries.get(name, 0) + 1
            if tries <= self.incomplete_retries:  # the driver may still be publishing: look again soon
                self.queue.add_after(name, INCOMPLETE_RETRY_DELAY * 2 ** (tries - 1))
                return
        self._tries.pop(name, None)
        body = dict(request)
        body["status"] = status
        await self.client.request("PUT", resource_path(GROUP, VERSION, PLURAL, None, name, "status"), body)
        log.info("answered ResourcePoolStatusRequest %s: %s", name, status["conditions"][0]["message"])
