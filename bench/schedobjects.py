"""What bench/scheduler.py's workloads are made of: upstream scheduler_perf's DRA objects (nodes, slices, the
DeviceClass, claims, claim templates, pods; test/integration/scheduler_perf/dra/templates), HTTP helpers, and
the watches that time each pod's steps."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable

import aiohttp

DRIVER = "test-driver.cdi.k8s.io"
CLASS = "test-class"
TEMPLATE = "test-claim-template"
RESOURCE = "/apis/resource.k8s.io/v1"
DRA_LABEL = "node-with-dra"


# ---------------------------------------------------------------- objects (scheduler_perf's templates)

def node(name: str, dra: bool = True) -> dict:
    labels = {"kubernetes.io/hostname": name}
    if dra:
        labels[DRA_LABEL] = "true"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                       "allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "kubelet is posting ready status"}],
                       "phase": "Running"}}


def resource_slice(node_name: str, devices: int) -> dict:
    """createResourceDriver's slice: one pool per node, maxClaimsPerNode devices."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-{DRIVER}"},
            "spec": {"driver": DRIVER, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"device-{i}", "attributes": {
                         "driverVersion": {"version": "1.0.0"}, "index": {"int": i}}} for i in range(devices)]}}


DRA_NODES = {"nodeSelectorTerms": [{"matchExpressions": [
    {"key": DRA_LABEL, "operator": "In", "values": ["true"]}]}]}

# (name, preallocate, counters capacity, counters consumed) of the partitionable pools' devices
PARTITIONS = [("device-2-counters-1", True, "2", ("counter1", "counter2")),
               ("device-2-counters-2", False, "2", ("counter3", "counter4")),
               ("device-1-counter-1", False, "1", ("counter1",)),
               ("device-1-counter-2", False, "1", ("counter2",)),
               ("device-1-counter-3", False, "1", ("counter3",)),
               ("device-1-counter-4", False, "1", ("counter4",))]


def partitionable_slices(i: int) -> list[dict]:
    """Pool resourceslice-<i>: a slice with the counter set (four counters of 1) and a slice with six devices
    consuming them (two take two counters, four take one), both for every node labelled node-with-dra."""
    def spec(**kw) -> dict:
        return {"driver": DRIVER, "nodeSelector": DRA_NODES,
                "pool": {"name": f"resourceslice-{i}", "generation": 1, "resourceSliceCount": 2}, **kw}
    counters = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": f"resourceslice-countersets-{i}"},
                "spec": spec(sharedCounters=[{"name": "counter-set", "counters": {
                    f"counter{k}": {"value": "1"} for k in range(1, 5)}}])}
    devices = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
               "metadata": {"name": f"resourceslice-devices-{i}"},
               "spec": spec(devices=[{
                   "name": name,
                   "attributes": {"preallocate": {"bool": pre}, "dra.example.com/slice": {"int": i}},
                   "capacity": {"counters": {"value": cap}},
                   "consumesCounters": [{"counterSet": "counter-set",
                                         "counters": {c: {"value": "1"} for c in used}}]}
                   for name, pre, cap, used in PARTITIONS])}
    return [counters, devices]


DEVICE_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def claim_template(two_devices: bool = False) -> dict:
    req: dict = {"deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 2 if two_devices else 1}
    devices: dict = {"requests": [{"name": "req-0", "exactly": req}]}
    if two_devices:  # resourceclaimtemplate-for-two-devices.yaml: both from one pool
        devices["constraints"] = [{"requests": ["req-0"], "matchAttribute": "dra.example.com/slice"}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": TEMPLATE},
            "spec": {"spec": {"devices": devices}}}


SELECTOR = ("device.capacity['test-driver.cdi.k8s.io'].counters.compareTo(quantity('2')) >= 0 &&\n"
            "device.attributes['test-driver.cdi.k8s.io'].preallocate")


def claim(name: str, selector: bool = False) -> dict:
    req: dict = {"deviceClassName": CLASS}
    if selector:  # resourceclaim-with-selector.yaml
        req["selectors"] = [{"cel": {"expression": SELECTOR}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "req-0", "exactly": req}]}}}


def pod(name: str, claim_name: str = "") -> dict:
    """pod-with-claim-template.yaml, or pod-with-claim-ref.yaml when claim_name is given."""
    ref = {"resourceClaimName": claim_name} if claim_name else {"resourceClaimTemplateName": TEMPLATE}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"claims": [{"name": "resource"}]}}],
                     "resourceClaims": [{"name": "resource", **ref}]}}


# ---------------------------------------------------------------- HTTP helpers

async def call(s: aiohttp.ClientSession, method: str, url: str, obj: dict | None = None,
               ok: tuple[int, ...] = (200, 201, 202)) -> dict:
    data = json.dumps(obj) if obj is not None else None
    async with s.request(method, url, data=data, headers={"Content-Type": "application/json"}) as r:
        body = await r.read()
        if r.status not in ok:
            raise RuntimeError(f"{method} {url}: {r.status} {body[:500]!r}")
        return json.loads(body) if body else {}


async def parallel(n: int, concurrency: int, fn: Callable[[int], Awaitable[None]]) -> None:
    counter = iter(range(n))

    async def worker():
        for i in counter:
            await fn(i)
    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, n)))))


def stats(created: dict[str, float], bound: dict[str, float], start: float) -> dict:
    lat = sorted(bound[n] - created[n] for n in created if n in bound)
    n = len(lat)
    if not n:
        return {"n": 0, "of": len(created), "ops": 0.0, "p50": float("nan"), "p99": float("nan"), "secs": 0.0}
    last = max(bound[n] for n in created if n in bound)
    return {"n": n, "of": len(created), "ops": n / (last - start), "secs": last - start,
            "p50": lat[n // 2] * 1000, "p99": lat[min(n - 1, int(n * 0.99))] * 1000}


# ---------------------------------------------------------------- watches

class PodWatch:
    """Streams a namespace's pods; records when each pod is first seen with spec.nodeName (and calls on_bound)."""

    def __init__(self, session: aiohttp.ClientSession, url: str, ns: str):
        self.session, self.url, self.ns = session, url, ns
        self.path = f"/api/v1/namespaces/{ns}/pods"
        self.bound: dict[str, float] = {}
        self.order: list[str] = []  # self.bound's keys, in the order they were bound
        self.named: dict[str, float] = {}  # pod -> when its status first named its claim (controller's patch)
        self.changed = asyncio.Event()
        self.on_bound: Callable[[str], None] | None = None
        self.task: asyncio.Task | None = None

    async def start(self) -> None:
        async with self.session.get(self.url + self.path) as r:
            body = await r.json()
        for p in body["items"]:
            if p["spec"].get("nodeName"):
                if p["metadata"]["name"] not in self.bound:
                    self.bound[p["metadata"]["name"]] = time.perf_counter()
                    self.order.append(p["metadata"]["name"])
        started = asyncio.Event()
        self.task = asyncio.create_task(self._run(body["metadata"]["resourceVersion"], started))
        await started.wait()

    async def _run(self, rv: str, started: asyncio.Event) -> None:
        params = {"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": "3600"}
        async with self.session.get(self.url + self.path, params=params) as r:
            if r.status != 200:
                raise RuntimeError(f"watch pods: {r.status} {await r.text()}")
            started.set()
            async for line in r.content:
                ev = json.loads(line)
                if ev["type"] == "ERROR":
                    raise RuntimeError(f"watch pods: {ev['object']}")
                if ev["type"] not in ("ADDED", "MODIFIED"):
                    continue
                obj = ev["object"]
                name = obj["metadata"]["name"]
                if name not in self.named and any(s.get("resourceClaimName") for s in
                                                  (obj.get("status") or {}).get("resourceClaimStatuses") or []):
                    self.named[name] = time.perf_counter()
                if obj["spec"].get("nodeName") and name not in self.bound:
                    self.bound[name] = time.perf_counter()
                    self.order.append(name)
                    self.changed.set()
                    if self.on_bound is not None:
                        self.on_bound(name)

    async def wait_bound(self, names, timeout: float) -> bool:
        """True once every name is bound; False on timeout. (Linear in the names and the binds in between, so
        that waiting for 50,000 pods stays cheap.)"""
        waiting = {n for n in names if n not in self.bound}
        seen = len(self.order)
        deadline = time.perf_counter() + timeout
        while True:
            self.check()
            while seen < len(self.order):
                waiting.discard(self.order[seen])
                seen += 1
            if not waiting:
                return True
            left = deadline - time.perf_counter()
            if left <= 0:
                return False
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), min(left, 1.0))
            except asyncio.TimeoutError:
                pass

    def check(self) -> None:
        if self.task is not None and self.task.done():
            self.task.result()
            raise RuntimeError("pod watch ended")

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()


class ClaimWatch:
    """Streams a namespace's ResourceClaims: per owning pod, when its claim was created and first allocated."""

    def __init__(self, session: aiohttp.ClientSession, url: str, ns: str):
        self.session, self.url, self.ns = session, url, ns
        self.created: dict[str, float] = {}
        self.allocated: dict[str, float] = {}
        self.task: asyncio.Task | None = None

    async def start(self) -> None:
        path = self.url + RESOURCE + f"/namespaces/{self.ns}/resourceclaims"
        async with self.session.get(path) as r:
            rv = (await r.json())["metadata"]["resourceVersion"]
        started = asyncio.Event()
        self.task = asyncio.create_task(self._run(path, rv, started))
        await started.wait()

    async def _run(self, path: str, rv: str, started: asyncio.Event) -> None:
        params = {"watch": "1", "resourceVersion": rv, "timeoutSeconds": "3600"}
        async with self.session.get(path, params=params) as r:
            started.set()
            async for line in r.content:
                ev = json.loads(line)
                if ev["type"] not in ("ADDED", "MODIFIED"):
                    continue
                obj = ev["object"]
                owner = next((o["name"] for o in obj["metadata"].get("ownerReferences") or []
                              if o.get("kind") == "Pod"), None)
                if owner is None:
                    continue
                now = time.perf_counter()
                self.created.setdefault(owner, now)
                if (obj.get("status") or {}).get("allocation"):
                    self.allocated.setdefault(owner, now)

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()


def phases(created: dict[str, float], pods: PodWatch, claims: ClaimWatch) -> dict[str, float]:
    """Median milliseconds of each step: pod created -> claim created -> pod status names it -> claim
    allocated -> pod bound (pods that went through every step)."""
    steps = [("claim_created", claims.created), ("status_named", pods.named), ("allocated", claims.allocated),
             ("bound", pods.bound)]
    names = [n for n in created if all(n in d for _, d in steps)]
    out: dict[str, float] = {}
    if not names:
        return out
    prev = {n: created[n] for n in names}
    for step, times in steps:
        d = sorted((times[n] - prev[n]) * 1000 for n in names)
        out[step] = d[len(d) // 2]
        prev = {n: times[n] for n in names}
    return out
