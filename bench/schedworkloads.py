"""The objects, watches and workloads of bench/scheduler.py, shaped as upstream's scheduler_perf DRA workloads
(test/integration/scheduler_perf/dra/performance-config.yaml and its templates/).

Every workload has named parameter sets ("variants") with upstream's names and values; `fast` is upstream's
smallest one (a couple of nodes, ten pods), the one to try a change with. Names differ from upstream's where
they do not matter (nodes are node-<i>, DRA-less nodes nodra-<i>); the shapes do not: the same device counts,
claims, selectors, constraints, counters, namespaces (init, test) and pod counts.

- SchedulingWithResourceClaimTemplate: initPods pods (namespace init) are created and scheduled unmeasured, then
  measurePods pods (namespace test), each with a claim from a one-device template, are created as fast as
  possible. Throughput and latency count the measured pods only.
- SteadyStateClusterResourceClaimTemplate: initClaims one-device ResourceClaims in namespace init are created
  and allocated by the bench itself (status.allocation written directly, choosing free devices, as upstream's
  allocResourceClaims op does), then for `duration` seconds `count` (10) pods are kept in flight: each pod is
  deleted once scheduled and a new one created. Reported: pods scheduled per second in the window and the
  latency of the pods scheduled in it.
- SchedulingWithResourceClaim: like the first, but the pods share claims by name, five pods per claim
  (initClaims / measureClaims created up front).
- SteadyStateClusterResourceClaimTemplatePartitionable: no per-node slices; resourceSlices pools of two
  ResourceSlices each (a counter set, six devices consuming its counters) selected for every DRA node by
  label, initClaims claims with a CEL selector allocated by the bench, then measurePods pods in flight, each
  with a claim for two devices of one pool (matchAttribute), which makes the allocator backtrack once.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

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


_DRA_NODES = {"nodeSelectorTerms": [{"matchExpressions": [
    {"key": DRA_LABEL, "operator": "In", "values": ["true"]}]}]}

# (name, preallocate, counters capacity, counters consumed) of the partitionable pools' devices
_PARTITIONS = [("device-2-counters-1", True, "2", ("counter1", "counter2")),
               ("device-2-counters-2", False, "2", ("counter3", "counter4")),
               ("device-1-counter-1", False, "1", ("counter1",)),
               ("device-1-counter-2", False, "1", ("counter2",)),
               ("device-1-counter-3", False, "1", ("counter3",)),
               ("device-1-counter-4", False, "1", ("counter4",))]


def partitionable_slices(i: int) -> list[dict]:
    """Pool resourceslice-<i>: a slice with the counter set (four counters of 1) and a slice with six devices
    consuming them (two take two counters, four take one), both for every node labelled node-with-dra."""
    def spec(**kw) -> dict:
        return {"driver": DRIVER, "nodeSelector": _DRA_NODES,
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
                   for name, pre, cap, used in _PARTITIONS])}
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


# ---------------------------------------------------------------- the shared steps

@dataclass
class Ctx:
    """What a workload runs with: the session, the server, the knobs, and a CPU-seconds snapshot of the
    components (component -> seconds)."""
    s: aiohttp.ClientSession
    url: str
    concurrency: int
    setup_concurrency: int
    timeout: float
    cpu: Callable[[], dict[str, float]]
    watches: list = field(default_factory=list)

    def pods(self, ns: str) -> str:
        return f"{self.url}/api/v1/namespaces/{ns}/pods"

    def res(self, path: str, ns: str = "") -> str:
        return self.url + RESOURCE + (f"/namespaces/{ns}" if ns else "") + "/" + path

    async def pod_watch(self, ns: str) -> PodWatch:
        w = PodWatch(self.s, self.url, ns)
        await w.start()
        self.watches.append(w)
        return w

    async def claim_watch(self, ns: str) -> ClaimWatch:
        w = ClaimWatch(self.s, self.url, ns)
        await w.start()
        self.watches.append(w)
        return w

    def stop(self) -> None:
        for w in self.watches:
            w.stop()


async def create_node(ctx: Ctx, name: str, dra: bool) -> None:
    created = await call(ctx.s, "POST", ctx.url + "/api/v1/nodes", node(name, dra))
    if not (created.get("status") or {}).get("allocatable"):  # status dropped on create: set it
        created["status"] = node(name, dra)["status"]
        await call(ctx.s, "PUT", ctx.url + f"/api/v1/nodes/{name}/status", created)


async def setup_cluster(ctx: Ctx, namespaces: list[str], nodes: int, nodes_without: int = 0,
                        devices: int = 0) -> float:
    """Namespaces, the DeviceClass, nodes (labelled node-with-dra) with one slice of `devices` devices each
    (none when 0), and DRA-less nodes; nodes and slices created concurrently (--setup-concurrency)."""
    t = time.perf_counter()
    await asyncio.gather(*(call(ctx.s, "POST", ctx.url + "/api/v1/namespaces", {"metadata": {"name": ns}})
                           for ns in namespaces))
    await call(ctx.s, "POST", ctx.res("deviceclasses"), DEVICE_CLASS)

    async def one(i: int) -> None:
        if i >= nodes:
            await create_node(ctx, f"nodra-{i - nodes}", False)
            return
        name = f"node-{i}"
        if devices:
            await asyncio.gather(create_node(ctx, name, True),
                                 call(ctx.s, "POST", ctx.res("resourceslices"), resource_slice(name, devices)))
        else:
            await create_node(ctx, name, True)
    await parallel(nodes + nodes_without, ctx.setup_concurrency, one)
    return time.perf_counter() - t


async def warm_up(ctx: Ctx, ns: str = "warm-up") -> float:
    """One pod with a one-device claim through the whole path (namespace `ns`), deleted again and waited for
    until its claim is gone, so the components are synced and the devices are as before."""
    t = time.perf_counter()
    await call(ctx.s, "POST", ctx.url + "/api/v1/namespaces", {"metadata": {"name": ns}})
    await call(ctx.s, "POST", ctx.res("resourceclaimtemplates", ns), claim_template())
    watch = await ctx.pod_watch(ns)
    await call(ctx.s, "POST", ctx.pods(ns), pod("warm-up"))
    if not await watch.wait_bound(["warm-up"], 120):
        raise RuntimeError("the warm-up pod was not bound within 120s (see the component logs)")
    await call(ctx.s, "DELETE", ctx.pods(ns) + "/warm-up?gracePeriodSeconds=0")
    deadline = time.perf_counter() + 120
    while (await call(ctx.s, "GET", ctx.res("resourceclaims", ns)))["items"]:
        if time.perf_counter() > deadline:
            raise RuntimeError("the warm-up pod's claim was not deleted within 120s")
        await asyncio.sleep(0.05)
    watch.stop()
    return time.perf_counter() - t


async def create_pods(ctx: Ctx, watch: PodWatch, ns: str, names: list[str], make: Callable[[str], dict],
                      cap: int = 0) -> dict:
    """Create the pods as fast as possible (--concurrency in flight) and wait until all are bound. With cap,
    at most cap pods exist at once: beyond it, each create first deletes the oldest bound pod (the cluster
    holds only cap of them). Returns stats plus created times, the pods left, and how many were deleted."""
    created: dict[str, float] = {}
    bound_q: asyncio.Queue[str] = asyncio.Queue()
    deleted: list[str] = []
    if cap and len(names) > cap:
        wanted = set(names)
        for n in watch.bound:
            if n in wanted:
                bound_q.put_nowait(n)
        watch.on_bound = bound_q.put_nowait

    async def one(i: int) -> None:
        if cap and i >= cap:
            while True:
                watch.check()
                try:
                    victim = await asyncio.wait_for(bound_q.get(), 5.0)
                    break
                except asyncio.TimeoutError:
                    continue
            deleted.append(victim)
            await call(ctx.s, "DELETE", ctx.pods(ns) + f"/{victim}?gracePeriodSeconds=0", ok=(200, 202, 404))
        created[names[i]] = time.perf_counter()
        await call(ctx.s, "POST", ctx.pods(ns), make(names[i]))
    start = time.perf_counter()
    try:
        await parallel(len(names), ctx.concurrency, one)
    finally:
        watch.on_bound = None
    create_secs = time.perf_counter() - start
    gone = set(deleted)
    complete = await watch.wait_bound([n for n in names if n not in gone], ctx.timeout)
    res = stats(created, watch.bound, start)
    res.update(create_secs=create_secs, complete=complete, created=created, recycled=len(deleted),
               live=[n for n in names if n not in gone])
    return res


async def keep_in_flight(ctx: Ctx, watch: PodWatch, ns: str, count: int, duration: float,
                         make: Callable[[str], dict], prefix: str = "steady") -> dict:
    """upstream's createPods with steadyState: `count` pods exist; each is deleted as soon as it is scheduled
    and a new one created, for `duration` seconds. Figures: pods scheduled in the window / duration, and the
    creation->binding latency of those pods."""
    created: dict[str, float] = {}
    sem = asyncio.Semaphore(ctx.concurrency)
    bound_q: asyncio.Queue[str] = asyncio.Queue()
    seq = iter(range(1 << 62))
    tasks: set[asyncio.Task] = set()

    async def create() -> None:
        name = f"{prefix}-{next(seq)}"
        async with sem:
            created[name] = time.perf_counter()
            await call(ctx.s, "POST", ctx.pods(ns), make(name))

    async def replace(name: str) -> None:
        async with sem:
            await call(ctx.s, "DELETE", ctx.pods(ns) + f"/{name}?gracePeriodSeconds=0", ok=(200, 202, 404))
        await create()

    def spawn(coro) -> None:
        t = asyncio.create_task(coro)
        tasks.add(t)
        t.add_done_callback(tasks.discard)

    watch.on_bound = bound_q.put_nowait
    start = time.perf_counter()
    end = start + duration
    try:
        for _ in range(count):
            spawn(create())
        while (left := end - time.perf_counter()) > 0:
            watch.check()
            for t in [t for t in tasks if t.done() and t.exception()]:
                t.result()
            try:
                name = await asyncio.wait_for(bound_q.get(), min(left, 1.0))
            except asyncio.TimeoutError:
                continue
            if name in created:
                spawn(replace(name))
    finally:
        watch.on_bound = None
    window = time.perf_counter() - start
    await asyncio.gather(*tasks)
    in_window = {n: t for n, t in watch.bound.items() if n in created and t <= end}
    lat = sorted((in_window[n] - created[n]) for n in in_window)
    n = len(lat)
    res = {"n": n, "of": len(created), "ops": n / window, "secs": window, "create_secs": window,
           "p50": lat[n // 2] * 1000 if n else float("nan"),
           "p99": lat[min(n - 1, int(n * 0.99))] * 1000 if n else float("nan"),
           "complete": n > 0, "created": created}
    return res


async def create_claims(ctx: Ctx, ns: str, names: list[str], selector: bool = False) -> list[dict]:
    out: list[dict] = [{}] * len(names)

    async def one(i: int) -> None:
        out[i] = await call(ctx.s, "POST", ctx.res("resourceclaims", ns), claim(names[i], selector))
    await parallel(len(names), ctx.setup_concurrency, one)
    return out


async def allocate_claims(ctx: Ctx, ns: str, claims: list[dict], choose: Callable[[int], dict]) -> None:
    """upstream's allocResourceClaims: write status.allocation of each claim directly (choose(i) gives the i-th
    claim's allocation), without reserving it for anything."""
    async def one(i: int) -> None:
        obj = claims[i]
        obj["status"] = {"allocation": choose(i)}
        await call(ctx.s, "PUT", ctx.res(f"resourceclaims/{obj['metadata']['name']}/status", ns), obj)
    await parallel(len(claims), ctx.setup_concurrency, one)


def node_local_allocation(i: int, nodes: int, devices: int) -> dict:
    """The i-th pre-allocated claim's device: spread over the nodes (node i mod nodes), first free device."""
    if i >= nodes * devices:
        raise RuntimeError(f"{i + 1} claims do not fit on {nodes} nodes x {devices} devices")
    name = f"node-{i % nodes}"
    return {"devices": {"results": [{"request": "req-0", "driver": DRIVER, "pool": name,
                                     "device": f"device-{i // nodes}"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [name]}]}]}}


def partition_allocation(i: int, pools: int) -> dict:
    """The i-th claim-with-selector: the only device that matches it (preallocate, two counters) in pool i."""
    if i >= pools:
        raise RuntimeError(f"{i + 1} claims with a selector do not fit in {pools} partitionable pools")
    return {"devices": {"results": [{"request": "req-0", "driver": DRIVER, "pool": f"resourceslice-{i}",
                                     "device": "device-2-counters-1"}]},
            "nodeSelector": _DRA_NODES}


async def check_allocations(ctx: Ctx, preallocated: int = 0) -> dict:
    """After a workload: no device (and, in partitionable pools, no counter) is held by two allocated claims,
    and the claims the bench allocated in namespace init are still allocated. RuntimeError otherwise."""
    items = (await call(ctx.s, "GET", ctx.res("resourceclaims")))["items"]
    devices: dict[tuple, str] = {}
    counters: dict[tuple, str] = {}
    consumes = {name: used for name, _, _, used in _PARTITIONS}
    allocated_init = 0
    problems = []
    for c in items:
        alloc = (c.get("status") or {}).get("allocation")
        if not alloc:
            continue
        who = f"{c['metadata']['namespace']}/{c['metadata']['name']}"
        allocated_init += c["metadata"]["namespace"] == "init"
        for r in alloc["devices"]["results"]:
            key = (r["driver"], r["pool"], r["device"])
            if key in devices:
                problems.append(f"{'/'.join(key)} allocated to {devices[key]} and {who}")
            devices[key] = who
            for counter in consumes.get(r["device"], ()) if r["pool"].startswith("resourceslice-") else ():
                ckey = (r["pool"], counter)
                if ckey in counters and counters[ckey] != who:
                    problems.append(f"{r['pool']} {counter} consumed by {counters[ckey]} and {who}")
                counters[ckey] = who
    if allocated_init < preallocated:
        problems.append(f"only {allocated_init} of the {preallocated} pre-allocated claims are still allocated")
    if problems:
        raise RuntimeError("inconsistent allocations: " + "; ".join(problems[:5]))
    return {"allocated_claims": sum(1 for c in items if (c.get("status") or {}).get("allocation")),
            "allocated_devices": len(devices)}


# ---------------------------------------------------------------- the workloads

Result = dict  # stats of the measured pods, plus wall, cpu and phases


async def _measured(ctx: Ctx, body: Awaitable[dict]) -> Result:
    cpu0, t0 = ctx.cpu(), time.perf_counter()
    res = await body
    cpu1 = ctx.cpu()
    res["wall"] = time.perf_counter() - t0
    res["cpu"] = {k: cpu1[k] - cpu0[k] for k in cpu0}
    return res


async def _init_pods(ctx: Ctx, ns: str, count: int, make: Callable[[str], dict]) -> None:
    if count:
        watch = await ctx.pod_watch(ns)
        res = await create_pods(ctx, watch, ns, [f"init-{i}" for i in range(count)], make)
        if not res["complete"]:
            raise RuntimeError(f"only {res['n']} of {count} init pods were scheduled in time")
        watch.stop()


def _fits(pods_or_claims: int, p: dict) -> None:
    devices = p["nodesWithDRA"] * p["maxClaimsPerNode"]
    if pods_or_claims > devices:
        raise RuntimeError(f"{pods_or_claims} claims do not fit on {p['nodesWithDRA']} nodes x "
                           f"{p['maxClaimsPerNode']} devices")


async def scheduling_with_claim_template(ctx: Ctx, p: dict) -> Result:
    _fits(p["initPods"] + p["measurePods"], p)
    await setup_cluster(ctx, ["init", "test"], p["nodesWithDRA"], p["nodesWithoutDRA"], p["maxClaimsPerNode"])
    await call(ctx.s, "POST", ctx.res("resourceclaimtemplates", "init"), claim_template())
    await _init_pods(ctx, "init", p["initPods"], pod)
    await warm_up(ctx)
    await call(ctx.s, "POST", ctx.res("resourceclaimtemplates", "test"), claim_template())
    watch, claims = await ctx.pod_watch("test"), await ctx.claim_watch("test")
    res = await _measured(ctx, create_pods(ctx, watch, "test", [f"pod-{i}" for i in range(p["measurePods"])], pod))
    res["phases"] = phases(res["created"], watch, claims)
    res["check"] = await check_allocations(ctx)
    return res


async def steady_state_claim_template(ctx: Ctx, p: dict) -> Result:
    nodes, devices = p["nodesWithDRA"], p["maxClaimsPerNode"]
    await setup_cluster(ctx, ["init", "test"], nodes, p["nodesWithoutDRA"], devices)
    made = await create_claims(ctx, "init", [f"test-claim-{i}" for i in range(p["initClaims"])])
    await allocate_claims(ctx, "init", made, lambda i: node_local_allocation(i, nodes, devices))
    await warm_up(ctx)
    await call(ctx.s, "POST", ctx.res("resourceclaimtemplates", "test"), claim_template())
    watch, claims = await ctx.pod_watch("test"), await ctx.claim_watch("test")
    res = await _measured(ctx, keep_in_flight(ctx, watch, "test", p["count"], p["duration"], pod))
    res["phases"] = phases(res["created"], watch, claims)
    res["check"] = await check_allocations(ctx, p["initClaims"])
    return res


async def scheduling_with_claim(ctx: Ctx, p: dict) -> Result:
    _fits(p["initClaims"] + p["measureClaims"], p)
    for pods, claims in ((p["initPods"], p["initClaims"]), (p["measurePods"], p["measureClaims"])):
        if claims * 5 < pods:
            raise RuntimeError(f"{pods} pods need {-(-pods // 5)} claims (five pods per claim), not {claims}")
    await setup_cluster(ctx, ["init", "test"], p["nodesWithDRA"], p["nodesWithoutDRA"], p["maxClaimsPerNode"])

    def shared(name: str) -> dict:  # five pods per claim: pod <prefix>-<i> uses test-claim-<i // 5>
        return pod(name, f"test-claim-{int(name.rsplit('-', 1)[1]) // 5}")
    await create_claims(ctx, "init", [f"test-claim-{i}" for i in range(p["initClaims"])])
    await _init_pods(ctx, "init", p["initPods"], shared)
    await warm_up(ctx)
    await create_claims(ctx, "test", [f"test-claim-{i}" for i in range(p["measureClaims"])])
    watch = await ctx.pod_watch("test")
    res = await _measured(ctx, create_pods(ctx, watch, "test", [f"pod-{i}" for i in range(p["measurePods"])],
                                           shared))
    res["phases"] = {}
    res["check"] = await check_allocations(ctx)
    return res


async def steady_state_partitionable(ctx: Ctx, p: dict) -> Result:
    await setup_cluster(ctx, ["init", "test"], p["nodesWithDRA"], p["nodesWithoutDRA"])
    pools = p["resourceSlices"]

    async def slices(i: int) -> None:
        for obj in partitionable_slices(i):
            await call(ctx.s, "POST", ctx.res("resourceslices"), obj)
    await parallel(pools, ctx.setup_concurrency, slices)
    made = await create_claims(ctx, "init", [f"test-claim-with-selector-{i}" for i in range(p["initClaims"])],
                               selector=True)
    await allocate_claims(ctx, "init", made, lambda i: partition_allocation(i, pools))
    await warm_up(ctx)
    await call(ctx.s, "POST", ctx.res("resourceclaimtemplates", "test"), claim_template(two_devices=True))
    watch, claims = await ctx.pod_watch("test"), await ctx.claim_watch("test")
    res = await _measured(ctx, keep_in_flight(ctx, watch, "test", p["measurePods"], p["duration"], pod))
    res["phases"] = phases(res["created"], watch, claims)
    res["check"] = await check_allocations(ctx, p["initClaims"])
    return res


@dataclass
class Workload:
    run: Callable[[Ctx, dict], Awaitable[Result]]
    variants: dict[str, dict]
    default: str
    # which upstream parameter --nodes / --devices / --pods set
    flags: dict[str, str] = field(default_factory=dict)


def _v(**kw) -> dict:
    return kw


WORKLOADS: dict[str, Workload] = {
    "SchedulingWithResourceClaimTemplate": Workload(scheduling_with_claim_template, {
        "fast": _v(nodesWithDRA=1, nodesWithoutDRA=1, initPods=0, measurePods=10, maxClaimsPerNode=10),
        "2000pods_100nodes": _v(nodesWithDRA=100, nodesWithoutDRA=0, initPods=1000, measurePods=1000,
                                maxClaimsPerNode=20),
        "2000pods_200nodes": _v(nodesWithDRA=200, nodesWithoutDRA=0, initPods=1000, measurePods=1000,
                                maxClaimsPerNode=10),
        "5000pods_500nodes": _v(nodesWithDRA=500, nodesWithoutDRA=0, initPods=2500, measurePods=2500,
                                maxClaimsPerNode=10),
    }, "5000pods_500nodes", {"nodes": "nodesWithDRA", "devices": "maxClaimsPerNode", "pods": "measurePods"}),
    "SteadyStateClusterResourceClaimTemplate": Workload(steady_state_claim_template, {
        "fast": _v(nodesWithDRA=1, nodesWithoutDRA=1, initClaims=0, maxClaimsPerNode=10, duration=2, count=10),
        **{f"{fill}_{n}nodes": _v(nodesWithDRA=n, nodesWithoutDRA=0, initClaims=claims, maxClaimsPerNode=10,
                                  duration=10, count=10)
           for n in (100, 200, 500)
           for fill, claims in (("empty", 0), ("half", n * 5), ("full", n * 10 - 10))},
    }, "empty_500nodes", {"nodes": "nodesWithDRA", "devices": "maxClaimsPerNode"}),
    "SchedulingWithResourceClaim": Workload(scheduling_with_claim, {
        "fast": _v(nodesWithDRA=1, nodesWithoutDRA=1, initPods=0, initClaims=0, measurePods=10, measureClaims=2,
                   maxClaimsPerNode=2),
        "2000pods_100nodes": _v(nodesWithDRA=100, nodesWithoutDRA=0, initPods=1000, initClaims=200,
                                measurePods=1000, measureClaims=200, maxClaimsPerNode=4),
        "2000pods_200nodes": _v(nodesWithDRA=200, nodesWithoutDRA=0, initPods=1000, initClaims=200,
                                measurePods=1000, measureClaims=200, maxClaimsPerNode=2),
        "5000pods_500nodes": _v(nodesWithDRA=500, nodesWithoutDRA=0, initPods=2500, initClaims=500,
                                measurePods=2500, measureClaims=500, maxClaimsPerNode=2),
    }, "5000pods_500nodes", {"nodes": "nodesWithDRA", "devices": "maxClaimsPerNode", "pods": "measurePods"}),
    "SteadyStateClusterResourceClaimTemplatePartitionable": Workload(steady_state_partitionable, {
        "fast": _v(nodesWithDRA=1, nodesWithoutDRA=1, resourceSlices=10, initClaims=10, measurePods=10,
                   duration=2),
        "2000pods_100nodes": _v(nodesWithDRA=100, nodesWithoutDRA=0, resourceSlices=2000, initClaims=2000,
                                measurePods=2000, duration=10),
    }, "2000pods_100nodes", {"nodes": "nodesWithDRA", "pods": "measurePods"}),
}


def resolve(spec: str, overrides: dict[str, str]) -> tuple[str, str, dict]:
    """`Workload[/variant]` plus `key=value` overrides -> (workload, variant, params); ValueError if unknown."""
    name, _, variant = spec.partition("/")
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; one of: {', '.join(WORKLOADS)}")
    w = WORKLOADS[name]
    variant = variant or w.default
    if variant not in w.variants:
        raise ValueError(f"{name} has no variant {variant!r}; one of: {', '.join(w.variants)}")
    params = dict(w.variants[variant])
    for k, v in overrides.items():
        if k not in params:
            raise ValueError(f"{name} has no parameter {k!r}; it has: {', '.join(params)}")
        params[k] = type(params[k])(float(v)) if isinstance(params[k], (int, float)) else v
    return name, variant, params
