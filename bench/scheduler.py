"""Scheduling throughput and latency of DRA pods, in the shape of upstream's scheduler_perf DRA workloads.

    python bench/scheduler.py [--nodes 500] [--devices 10] [--pods 5000] [--concurrency 16]
                              [--steady-seconds 60] [--steady-pods N] [--steady-rate 50] [--profile COMPONENT]

End to end through real processes on loopback: `python -m dramock apiserver` (temporary data dir),
`python -m dramock controller-manager` (generates the pods' ResourceClaims from the template) and
`python -m dramock scheduler`. There are no kubelets: nodes (Ready, allocatable cpu/memory/pods) and one
ResourceSlice per node (driver test-driver.cdi.k8s.io, pool = node, --devices devices) are created over HTTP,
as scheduler_perf does, plus the DeviceClass `test-class` and the ResourceClaimTemplate `test-claim-template`
(one device).

SchedulingWithResourceClaimTemplate: --pods pods, each with a claim from the template, are created as fast as
possible (--concurrency in flight); a watch on the namespace's pods gives each pod's bind time. Reported:
pods scheduled per second (first create to last bind) and p50/p99 of creation→binding latency.

Steady state: the pod count is brought to --steady-pods, then for --steady-seconds one pod is deleted (grace 0)
and one created --steady-rate times a second. Reported: the same figures for the pods created in that window.

Upstream's CI threshold for SchedulingWithResourceClaimTemplate (500 nodes, 5000 pods) is 120 pods/s.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import aiohttp
from processes import free_port, wait_ready  # bench/processes.py (this script's directory)

DRIVER = "test-driver.cdi.k8s.io"
CLASS = "test-class"
TEMPLATE = "test-claim-template"
NS = "sched-bench"
PODS = f"/api/v1/namespaces/{NS}/pods"
RESOURCE = "/apis/resource.k8s.io/v1"
UPSTREAM_MIN = 120.0


# ---------------------------------------------------------------- objects (scheduler_perf's templates)

def node(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                       "allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "kubelet is posting ready status"}],
                       "phase": "Running"}}


def resource_slice(node_name: str, devices: int) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-{DRIVER}"},
            "spec": {"driver": DRIVER, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"device-{i}", "attributes": {
                         "driverVersion": {"version": "1.0.0"}, "index": {"int": i}}} for i in range(devices)]}}


DEVICE_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}

CLAIM_TEMPLATE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                  "metadata": {"name": TEMPLATE},
                  "spec": {"spec": {"devices": {"requests": [{"name": "req-0", "exactly": {
                      "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 1}}]}}}}


def pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"claims": [{"name": "resource"}]}}],
                     "resourceClaims": [{"name": "resource", "resourceClaimTemplateName": TEMPLATE}]}}


# ---------------------------------------------------------------- the pod watch

class PodWatch:
    """Streams the namespace's pods; records when each pod is first seen with spec.nodeName."""

    def __init__(self, session: aiohttp.ClientSession, url: str):
        self.session, self.url = session, url
        self.bound: dict[str, float] = {}
        self.named: dict[str, float] = {}  # pod -> when its status first named its claim (controller's patch)
        self.changed = asyncio.Event()
        self.task: asyncio.Task | None = None

    async def start(self) -> None:
        async with self.session.get(self.url + PODS) as r:
            body = await r.json()
        for p in body["items"]:
            if p["spec"].get("nodeName"):
                self.bound.setdefault(p["metadata"]["name"], time.perf_counter())
        started = asyncio.Event()
        self.task = asyncio.create_task(self._run(body["metadata"]["resourceVersion"], started))
        await started.wait()

    async def _run(self, rv: str, started: asyncio.Event) -> None:
        params = {"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": "3600"}
        async with self.session.get(self.url + PODS, params=params) as r:
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
                    self.changed.set()

    async def wait_bound(self, names, timeout: float) -> bool:
        """True once every name is bound; False on timeout."""
        names = list(names)
        deadline = time.perf_counter() + timeout
        while True:
            if self.task is not None and self.task.done():
                self.task.result()
                raise RuntimeError("pod watch ended")
            if all(n in self.bound for n in names):
                return True
            left = deadline - time.perf_counter()
            if left <= 0:
                return False
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), min(left, 1.0))
            except asyncio.TimeoutError:
                pass


class ClaimWatch:
    """Streams the namespace's ResourceClaims: per owning pod, when its claim was created and first allocated."""

    def __init__(self, session: aiohttp.ClientSession, url: str):
        self.session, self.url = session, url
        self.created: dict[str, float] = {}
        self.allocated: dict[str, float] = {}
        self.task: asyncio.Task | None = None

    async def start(self) -> None:
        path = self.url + RESOURCE + f"/namespaces/{NS}/resourceclaims"
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


# ---------------------------------------------------------------- HTTP helpers

async def call(s: aiohttp.ClientSession, method: str, url: str, obj: dict | None = None,
               ok: tuple[int, ...] = (200, 201, 202)) -> dict:
    data = json.dumps(obj) if obj is not None else None
    async with s.request(method, url, data=data, headers={"Content-Type": "application/json"}) as r:
        body = await r.read()
        if r.status not in ok:
            raise RuntimeError(f"{method} {url}: {r.status} {body[:500]!r}")
        return json.loads(body) if body else {}


async def parallel(n: int, concurrency: int, fn) -> None:
    counter = iter(range(n))

    async def worker():
        for i in counter:
            await fn(i)
    await asyncio.gather(*(worker() for _ in range(concurrency)))


def stats(created: dict[str, float], bound: dict[str, float], start: float) -> dict:
    lat = sorted(bound[n] - created[n] for n in created if n in bound)
    n = len(lat)
    if not n:
        return {"n": 0, "of": len(created), "ops": 0.0, "p50": float("nan"), "p99": float("nan"), "secs": 0.0}
    last = max(bound[n] for n in created if n in bound)
    return {"n": n, "of": len(created), "ops": n / (last - start), "secs": last - start,
            "p50": lat[n // 2] * 1000, "p99": lat[min(n - 1, int(n * 0.99))] * 1000}


# ---------------------------------------------------------------- workloads

async def setup(s: aiohttp.ClientSession, url: str, args: argparse.Namespace) -> float:
    t = time.perf_counter()
    await call(s, "POST", url + "/api/v1/namespaces", {"metadata": {"name": NS}})
    await call(s, "POST", url + RESOURCE + "/deviceclasses", DEVICE_CLASS)
    await call(s, "POST", url + RESOURCE + f"/namespaces/{NS}/resourceclaimtemplates", CLAIM_TEMPLATE)

    async def one(i: int) -> None:
        name = f"node-{i}"
        created = await call(s, "POST", url + "/api/v1/nodes", node(name))
        if not (created.get("status") or {}).get("allocatable"):  # status dropped on create: set it
            created["status"] = node(name)["status"]
            await call(s, "PUT", url + f"/api/v1/nodes/{name}/status", created)
        await call(s, "POST", url + RESOURCE + "/resourceslices", resource_slice(name, args.devices))
    await parallel(args.nodes, args.concurrency, one)
    return time.perf_counter() - t


async def warm_up(s: aiohttp.ClientSession, url: str, watch: PodWatch) -> float:
    """One pod through the whole path, so the components' informers are synced before measuring."""
    t = time.perf_counter()
    await call(s, "POST", url + PODS, pod("warm-up"))
    if not await watch.wait_bound(["warm-up"], 120):
        raise RuntimeError("the warm-up pod was not bound within 120s (see the component logs)")
    await call(s, "DELETE", url + PODS + "/warm-up?gracePeriodSeconds=0")
    return time.perf_counter() - t


async def burst(s: aiohttp.ClientSession, url: str, watch: PodWatch, args: argparse.Namespace) -> dict:
    created: dict[str, float] = {}
    names = [f"pod-{i}" for i in range(args.pods)]

    async def one(i: int) -> None:
        created[names[i]] = time.perf_counter()
        await call(s, "POST", url + PODS, pod(names[i]))
    start = time.perf_counter()
    await parallel(args.pods, args.concurrency, one)
    create_secs = time.perf_counter() - start
    complete = await watch.wait_bound(names, args.timeout)
    res = stats(created, watch.bound, start)
    res["create_secs"] = create_secs
    res["complete"] = complete
    res["created"] = created
    return res


async def steady(s: aiohttp.ClientSession, url: str, watch: PodWatch, args: argparse.Namespace,
                 live: collections.deque) -> dict:
    """Bring the pod count to --steady-pods, then delete one and create one --steady-rate times a second."""
    target = args.steady_pods
    sem = asyncio.Semaphore(args.concurrency)

    async def delete(name: str) -> None:
        if name not in watch.bound:  # deleted before it was bound: it has no bind time
            gone.add(name)
        async with sem:
            await call(s, "DELETE", url + PODS + f"/{name}?gracePeriodSeconds=0", ok=(200, 202, 404))

    async def create(name: str) -> None:
        async with sem:
            created[name] = time.perf_counter()
            await call(s, "POST", url + PODS, pod(name))

    # Fill or trim to the target (not measured); wait until the fill is bound.
    created: dict[str, float] = {}
    gone: set[str] = set()
    extra = []
    while len(live) > target:
        extra.append(live.popleft())
    fill = [f"steady-fill-{i}" for i in range(max(0, target - len(live)))]
    await asyncio.gather(*(delete(n) for n in extra), *(create(n) for n in fill))
    live.extend(fill)
    if not await watch.wait_bound(fill, args.timeout):
        raise RuntimeError("the steady-state fill was not bound in time")
    await asyncio.sleep(2)  # let the deleted pods' claims be released

    created = {}
    tasks = []
    interval = 1.0 / args.steady_rate
    start = time.perf_counter()
    i = 0
    while True:
        due = start + i * interval
        if due >= start + args.steady_seconds:
            break
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        name = f"steady-{i}"
        if live:
            tasks.append(asyncio.create_task(delete(live.popleft())))
        tasks.append(asyncio.create_task(create(name)))
        live.append(name)
        i += 1
    await asyncio.gather(*tasks)
    window = time.perf_counter() - start
    complete = await watch.wait_bound([n for n in created if n not in gone], args.timeout)
    res = stats(created, watch.bound, start)
    res["created"] = created
    res["deleted_unbound"] = len(gone & set(created))
    res["create_secs"] = window
    res["complete"] = complete
    return res


# ---------------------------------------------------------------- main

def start_components(tmp: str, url: str, port: int, profile: str) -> list[tuple[str, subprocess.Popen]]:
    kubeconfig = os.path.join(tmp, "kubeconfig")
    with open(kubeconfig, "w", encoding="utf-8") as f:
        f.write(subprocess.run([sys.executable, "-m", "dramock", "kubeconfig", "--server", url],
                               check=True, capture_output=True, text=True).stdout)

    def spawn(name: str, argv: list[str]) -> tuple[str, subprocess.Popen]:
        log = open(os.path.join(tmp, f"{name}.log"), "wb")  # noqa: SIM115 - closed with the process
        return name, subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)

    def dramock(name: str, *args: str) -> list[str]:
        if name != profile:
            return [sys.executable, "-m", "dramock", name, *args]
        return [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpuprofile.py"),
                os.path.join(tmp, f"{name}.prof"), "dramock", name, *args]

    procs = [spawn("apiserver", dramock("apiserver", "--port", str(port), "--secure-port", "0",
                                             "--data-dir", os.path.join(tmp, "data")))]
    procs.append(spawn("controller-manager", dramock("controller-manager", "--kubeconfig", kubeconfig)))
    procs.append(spawn("scheduler", dramock("scheduler", "--server", url)))
    return procs


def cpu_seconds(pid: int) -> float:
    """User+system CPU of a process (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return float("nan")


async def run(args: argparse.Namespace, tmp: str, procs: list, url: str) -> list[tuple[str, dict, dict]]:
    await wait_ready(url)
    rows = []
    connector = aiohttp.TCPConnector(limit=args.concurrency + 4)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as s:
        setup_secs = await setup(s, url, args)
        watch = PodWatch(s, url)
        await watch.start()
        claims = ClaimWatch(s, url)
        await claims.start()
        warm = await warm_up(s, url, watch)
        print(f"setup: {args.nodes} nodes + slices in {setup_secs:.1f}s; warm-up pod bound in {warm:.1f}s",
              flush=True)
        cpu0 = {name: cpu_seconds(p.pid) for name, p in procs}
        t0 = time.perf_counter()
        res = await burst(s, url, watch, args)
        cpu1 = {name: cpu_seconds(p.pid) for name, p in procs}
        t1 = time.perf_counter()
        res["wall"] = t1 - t0
        res["phases"] = phases(res.pop("created"), watch, claims)
        rows.append((f"SchedulingWithResourceClaimTemplate {args.nodes}n/{args.pods}p", res,
                     {k: cpu1[k] - cpu0[k] for k in cpu0}))
        print(f"  burst: {res['n']}/{res['of']} bound in {res['secs']:.1f}s (creates took "
              f"{res['create_secs']:.1f}s)", flush=True)
        if args.steady_seconds > 0:
            live = collections.deque(f"pod-{i}" for i in range(args.pods))
            res = await steady(s, url, watch, args, live)
            cpu2 = {name: cpu_seconds(p.pid) for name, p in procs}
            res["wall"] = time.perf_counter() - t1
            res["phases"] = phases(res.pop("created"), watch, claims)
            print(f"  steady: {res['n']}/{res['of']} bound, {res['deleted_unbound']} deleted before binding, "
                  f"last bind {res['secs']:.1f}s after start", flush=True)
            rows.append((f"SteadyState {args.steady_pods}p @{args.steady_rate:g}/s x{args.steady_seconds:g}s",
                         res, {k: cpu2[k] - cpu1[k] for k in cpu1}))
        for w in (watch, claims):
            if w.task is not None:
                w.task.cancel()
        if args.requests:
            async with s.get(url + "/metrics") as r:
                text = await r.text()
            print("API requests over the whole run (apiserver_request_total, by verb/resource/subresource):")
            counts: collections.Counter[str] = collections.Counter()
            for line in text.splitlines():
                if line.startswith("apiserver_request_total{"):
                    labels = dict(kv.split("=", 1) for kv in line[line.index("{") + 1:line.rindex("}")].split(","))
                    key = "/".join(labels.get(k, '""').strip('"') for k in ("verb", "resource", "subresource"))
                    counts[key] += int(float(line.rsplit(" ", 1)[1]))
            for key, n in counts.most_common(20):
                print(f"  {n:>8}  {key}")
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--devices", type=int, default=10, help="devices per node (one ResourceSlice per node)")
    p.add_argument("--pods", type=int, default=5000)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--steady-seconds", type=float, default=60, help="0 skips the steady-state workload")
    p.add_argument("--steady-pods", type=int, default=-1,
                   help="pods kept during steady state (default: half of the devices, at most --pods)")
    p.add_argument("--steady-rate", type=float, default=50, help="pods deleted and created per second")
    p.add_argument("--timeout", type=float, default=900, help="seconds to wait for pods to be bound")
    p.add_argument("--profile", default="", choices=("", "apiserver", "controller-manager", "scheduler"),
                   help="run this component under cProfile (CPU time) and print its top functions")
    p.add_argument("--keep-logs", action="store_true", help="print the temp dir and keep it (component logs)")
    p.add_argument("--json", action="store_true", help="also print one JSON line per workload")
    p.add_argument("--requests", action="store_true", help="print the API server's request counts at the end")
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the components are stopped too
    if args.steady_pods < 0:
        args.steady_pods = min(args.pods, args.nodes * args.devices // 2)
    tmp = tempfile.mkdtemp(prefix="dramock-sched-bench-")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    procs = start_components(tmp, url, port, args.profile)
    try:
        rows = asyncio.run(run(args, tmp, procs, url))
    except BaseException:
        for name, _ in procs:
            with open(os.path.join(tmp, f"{name}.log"), "rb") as f:
                tail = f.read()[-2000:].decode(errors="replace")
            print(f"---- {name} log (tail) ----\n{tail}", file=sys.stderr)
        raise
    finally:
        for _, proc in reversed(procs):
            proc.terminate()
        for _, proc in procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    print(f"DRA scheduling: {args.nodes} nodes x {args.devices} devices ({DRIVER}), one claim per pod from "
          f"a ResourceClaimTemplate, concurrency {args.concurrency}")
    header = (f"{'workload':<48}{'bound':>12}{'pods/s':>9}{'p50 ms':>10}{'p99 ms':>10}{'wall s':>8}"
              f"   cpu s (api/cm/sched)   cpu % of one core (api/cm/sched)")
    print(header)
    print("-" * len(header))
    components = ("apiserver", "controller-manager", "scheduler")
    for name, r, cpu in rows:
        cpus = "/".join(f"{cpu[k]:.1f}" for k in components)
        util = "/".join(f"{100 * cpu[k] / r['wall']:.0f}" for k in components)
        bound = f"{r['n']}/{r['of']}"
        print(f"{name:<48}{bound:>12}{r['ops']:>9.1f}{r['p50']:>10.0f}{r['p99']:>10.0f}{r['wall']:>8.1f}"
              f"   {cpus:<22} {util}")
    for name, r, _ in rows:
        if r.get("phases"):
            steps = " -> ".join(f"{k} +{v:.0f}" for k, v in r["phases"].items())
            print(f"  {name}: median ms per step: created -> {steps}")
    print(f"(pods/s = pods bound / first create to last bind; latency = POST to bind seen on a watch; "
          f"upstream CI minimum for SchedulingWithResourceClaimTemplate: {UPSTREAM_MIN:g} pods/s)")
    if args.json:
        for name, r, cpu in rows:
            print(json.dumps({"workload": name, "bound": r["n"], "of": r["of"], "pods_per_s": round(r["ops"], 2),
                              "p50_ms": round(r["p50"], 1), "p99_ms": round(r["p99"], 1),
                              "cpu_s": {k: round(v, 2) for k, v in cpu.items()}, "wall_s": round(r["wall"], 2),
                              "phases_ms": {k: round(v, 1) for k, v in (r.get("phases") or {}).items()}}))
    if args.profile:
        import pstats

        path = os.path.join(tmp, f"{args.profile}.prof")
        if os.path.exists(path):
            print(f"\n{args.profile} profile (whole run, by cumulative time):")
            pstats.Stats(path).sort_stats("cumulative").print_stats(30)
            print(f"{args.profile} profile (by own time):")
            pstats.Stats(path).sort_stats("tottime").print_stats(25)
        else:
            print(f"(no {args.profile} profile written)")
    if args.keep_logs:
        print(f"component logs in {tmp}")
    else:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
