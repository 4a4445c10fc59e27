"""The workloads of bench/scheduler.py, shaped as upstream's scheduler_perf DRA workloads
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
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import aiohttp
from schedobjects import (  # bench/schedobjects.py (this script's directory)
    DEVICE_CLASS,
    DRA_NODES,
    DRIVER,
    PARTITIONS,
    RESOURCE,
    ClaimWatch,
    PodWatch,
    call,
    claim,
    claim_template,
    node,
    parallel,
    partitionable_slices,
    phases,
    pod,
    resource_slice,
    stats,
)

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
            "nodeSelector": DRA_NODES}


async def check_allocations(ctx: Ctx, preallocated: int = 0) -> dict:
    """After a workload: no device (and, in partitionable pools, no counter) is held by two allocated claims,
    and the claims the bench allocated in namespace init are still allocated. RuntimeError otherwise."""
    items = (await call(ctx.s, "GET", ctx.res("resourceclaims")))["items"]
    devices: dict[tuple, str] = {}
    counters: dict[tuple, str] = {}
    consumes = {name: used for name, _, _, used in PARTITIONS}
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


async def scheduling_with_claim_template(ctx: Ctx, p: dict) -> Result:
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


def _fits(claims: int, p: dict) -> str:
    if claims > p["nodesWithDRA"] * p["maxClaimsPerNode"]:
        return f"{claims} claims do not fit on {p['nodesWithDRA']} nodes x {p['maxClaimsPerNode']} devices"
    return ""


def _check_shared(p: dict) -> str:
    for pods, claims in ((p["initPods"], p["initClaims"]), (p["measurePods"], p["measureClaims"])):
        if claims * 5 < pods:
            return f"{pods} pods need {-(-pods // 5)} claims (five pods per claim), not {claims}"
    return _fits(p["initClaims"] + p["measureClaims"], p)


def _check_steady(p: dict) -> str:
    return _fits(p["initClaims"] + 1, p)


def _check_partitionable(p: dict) -> str:
    if p["initClaims"] > p["resourceSlices"]:
        return f"{p['initClaims']} claims with a selector do not fit in {p['resourceSlices']} partitionable pools"
    return ""


@dataclass
class Workload:
    run: Callable[[Ctx, dict], Awaitable[Result]]
    variants: dict[str, dict]
    default: str
    # which upstream parameter --nodes / --devices / --pods set
    flags: dict[str, str] = field(default_factory=dict)
    check: Callable[[dict], str] = lambda p: ""  # why the parameters cannot work, or ""


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
    }, "5000pods_500nodes", {"nodes": "nodesWithDRA", "devices": "maxClaimsPerNode", "pods": "measurePods"},
        lambda p: _fits(p["initPods"] + p["measurePods"], p)),
    "SteadyStateClusterResourceClaimTemplate": Workload(steady_state_claim_template, {
        "fast": _v(nodesWithDRA=1, nodesWithoutDRA=1, initClaims=0, maxClaimsPerNode=10, duration=2, count=10),
        **{f"{fill}_{n}nodes": _v(nodesWithDRA=n, nodesWithoutDRA=0, initClaims=claims, maxClaimsPerNode=10,
                                  duration=10, count=10)
           for n in (100, 200, 500)
           for fill, claims in (("empty", 0), ("half", n * 5), ("full", n * 10 - 10))},
    }, "empty_500nodes", {"nodes": "nodesWithDRA", "devices": "maxClaimsPerNode"}, _check_steady),
    "SchedulingWithResourceClaim": Workload(scheduling_with_claim, {
        "fast": _v(nodesWithDRA=1, nodesWithoutDRA=1, initPods=0, initClaims=0, measurePods=10, measureClaims=2,
                   maxClaimsPerNode=2),
        "2000pods_100nodes": _v(nodesWithDRA=100, nodesWithoutDRA=0, initPods=1000, initClaims=200,
                                measurePods=1000, measureClaims=200, maxClaimsPerNode=4),
        "2000pods_200nodes": _v(nodesWithDRA=200, nodesWithoutDRA=0, initPods=1000, initClaims=200,
                                measurePods=1000, measureClaims=200, maxClaimsPerNode=2),
        "5000pods_500nodes": _v(nodesWithDRA=500, nodesWithoutDRA=0, initPods=2500, initClaims=500,
                                measurePods=2500, measureClaims=500, maxClaimsPerNode=2),
    }, "5000pods_500nodes", {"nodes": "nodesWithDRA", "devices": "maxClaimsPerNode", "pods": "measurePods"},
        _check_shared),
    "SteadyStateClusterResourceClaimTemplatePartitionable": Workload(steady_state_partitionable, {
        "fast": _v(nodesWithDRA=1, nodesWithoutDRA=1, resourceSlices=10, initClaims=10, measurePods=10,
                   duration=2),
        "2000pods_100nodes": _v(nodesWithDRA=100, nodesWithoutDRA=0, resourceSlices=2000, initClaims=2000,
                                measurePods=2000, duration=10),
    }, "2000pods_100nodes", {"nodes": "nodesWithDRA", "pods": "measurePods"}, _check_partitionable),
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
        try:
            params[k] = type(params[k])(float(v))
        except ValueError:
            raise ValueError(f"{k}={v}: not a number") from None
    if why := w.check(params):
        raise ValueError(f"{name}/{variant}: {why}")
    return name, variant, params
