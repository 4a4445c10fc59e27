"""Scheduling throughput and latency of DRA pods, in the shape of upstream's scheduler_perf DRA workloads.

    python bench/scheduler.py [--nodes 500] [--devices 10] [--pods 5000] [--concurrency 16]
                              [--steady-seconds 60] [--steady-pods N] [--steady-rate 50] [--profile COMPONENT]
    python bench/scheduler.py --workload NAME[/VARIANT] [--param KEY=VALUE ...] [--repeat N] [--json]

End to end through real processes on loopback: `python -m dramock apiserver` (temporary data dir),
`python -m dramock controller-manager` (generates the pods' ResourceClaims from the template) and
`python -m dramock scheduler`. There are no kubelets: nodes (Ready, allocatable cpu/memory/pods) and one
ResourceSlice per node (driver test-driver.cdi.k8s.io, pool = node, --devices devices) are created over HTTP,
as scheduler_perf does, plus the DeviceClass `test-class` and the ResourceClaimTemplate `test-claim-template`
(one device).

Without --workload (the default run):
  SchedulingWithResourceClaimTemplate: --pods pods, each with a claim from the template, are created as fast as
  possible (--concurrency in flight); a watch on the namespace's pods gives each pod's bind time. Reported:
  pods scheduled per second (first create to last bind) and p50/p99 of creation→binding latency. When --pods
  exceeds nodes × devices (a scale run such as --nodes 5000 --devices 8 --pods 50000), the oldest bound pods
  are deleted once the cluster is full, so that every pod can be scheduled ("recycled" in the output).
  Steady state: the pod count is brought to --steady-pods, then for --steady-seconds one pod is deleted
  (grace 0) and one created --steady-rate times a second. Reported: the same figures for the pods created in
  that window.

With --workload, one of upstream's workloads with one of its parameter sets (see bench/schedworkloads.py;
`--workload list` prints them): SchedulingWithResourceClaimTemplate, SteadyStateClusterResourceClaimTemplate,
SchedulingWithResourceClaim, SteadyStateClusterResourceClaimTemplatePartitionable. --nodes, --devices and
--pods set the variant's nodesWithDRA, maxClaimsPerNode and measurePods; --param sets any parameter.

Every run prints, per workload: pods bound, pods/s, p50/p99 latency, wall time, CPU seconds and peak RSS
(VmHWM) of each component; --json adds one JSON line per workload. --repeat N runs it N times, each with fresh
processes, and prints the median of each figure.

Upstream's CI threshold for SchedulingWithResourceClaimTemplate (500 nodes, 5000 pods) is 120 pods/s.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import aiohttp
from processes import free_port, wait_ready  # bench/processes.py (this script's directory)
from schedobjects import DRIVER, PodWatch, call, claim_template, phases, pod, stats
from schedworkloads import WORKLOADS, Ctx, create_pods, resolve, setup_cluster

NS = "sched-bench"
UPSTREAM_MIN = 120.0
COMPONENTS = ("apiserver", "controller-manager", "scheduler")


# ---------------------------------------------------------------- the default run

async def warm_up(ctx: Ctx, watch: PodWatch) -> float:
    """One pod through the whole path, so the components' informers are synced before measuring."""
    t = time.perf_counter()
    await call(ctx.s, "POST", ctx.pods(NS), pod("warm-up"))
    if not await watch.wait_bound(["warm-up"], 120):
        raise RuntimeError("the warm-up pod was not bound within 120s (see the component logs)")
    await call(ctx.s, "DELETE", ctx.pods(NS) + "/warm-up?gracePeriodSeconds=0")
    return time.perf_counter() - t


async def steady(ctx: Ctx, watch: PodWatch, args: argparse.Namespace, live: collections.deque) -> dict:
    """Bring the pod count to --steady-pods, then delete one and create one --steady-rate times a second."""
    target = args.steady_pods
    sem = asyncio.Semaphore(args.concurrency)
    pods = ctx.pods(NS)

    async def delete(name: str) -> None:
        if name not in watch.bound:  # deleted before it was bound: it has no bind time
            gone.add(name)
        async with sem:
            await call(ctx.s, "DELETE", pods + f"/{name}?gracePeriodSeconds=0", ok=(200, 202, 404))

    async def create(name: str) -> None:
        async with sem:
            created[name] = time.perf_counter()
            await call(ctx.s, "POST", pods, pod(name))

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


async def default_run(ctx: Ctx, args: argparse.Namespace) -> list[tuple[str, dict, dict]]:
    setup_secs = await setup_cluster(ctx, [NS], args.nodes, 0, args.devices)
    await call(ctx.s, "POST", ctx.res("resourceclaimtemplates", NS), claim_template())
    watch = await ctx.pod_watch(NS)
    claims = await ctx.claim_watch(NS)
    warm = await warm_up(ctx, watch)
    print(f"setup: {args.nodes} nodes + slices in {setup_secs:.1f}s; warm-up pod bound in {warm:.1f}s", flush=True)
    params = {"nodes": args.nodes, "devices": args.devices, "pods": args.pods}
    rows = []
    cpu0 = ctx.cpu()
    t0 = time.perf_counter()
    res = await create_pods(ctx, watch, NS, [f"pod-{i}" for i in range(args.pods)], pod,
                            cap=args.nodes * args.devices)
    cpu1 = ctx.cpu()
    t1 = time.perf_counter()
    res["wall"] = t1 - t0
    res["cpu"] = {k: cpu1[k] - cpu0[k] for k in cpu0}
    res["phases"] = phases(res.pop("created"), watch, claims)
    live = collections.deque(res.pop("live"))
    rows.append((f"SchedulingWithResourceClaimTemplate {args.nodes}n/{args.pods}p", res, params))
    recycled = f", {res['recycled']} bound pods deleted to make room" if res["recycled"] else ""
    print(f"  burst: {res['n']}/{res['of']} bound in {res['secs']:.1f}s (creates took "
          f"{res['create_secs']:.1f}s{recycled})", flush=True)
    if args.steady_seconds > 0:
        res = await steady(ctx, watch, args, live)
        cpu2 = ctx.cpu()
        res["wall"] = time.perf_counter() - t1
        res["cpu"] = {k: cpu2[k] - cpu1[k] for k in cpu1}
        res["phases"] = phases(res.pop("created"), watch, claims)
        print(f"  steady: {res['n']}/{res['of']} bound, {res['deleted_unbound']} deleted before binding, "
              f"last bind {res['secs']:.1f}s after start", flush=True)
        rows.append((f"SteadyState {args.steady_pods}p @{args.steady_rate:g}/s x{args.steady_seconds:g}s", res,
                     {**params, "steady_pods": args.steady_pods, "steady_rate": args.steady_rate,
                      "steady_seconds": args.steady_seconds}))
    return rows


# ---------------------------------------------------------------- processes

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


def peak_rss_mib(pid: int) -> float:
    """Peak resident set size of a process so far (VmHWM in /proc/<pid>/status), MiB."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


async def run(args: argparse.Namespace, procs: list, url: str) -> list[tuple[str, dict, dict]]:
    """One run against started components: rows of (workload name, figures, params)."""
    await wait_ready(url)
    connector = aiohttp.TCPConnector(limit=max(args.concurrency, args.setup_concurrency) + 8)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as s:
        ctx = Ctx(s, url, args.concurrency, args.setup_concurrency, args.timeout,
                  lambda: {name: cpu_seconds(p.pid) for name, p in procs})
        try:
            if args.workload:
                t = time.perf_counter()
                res = await WORKLOADS[args.workload].run(ctx, args.params)
                check = res.pop("check", {})
                print(f"  {args.workload}/{args.variant}: {res['n']}/{res['of']} bound, measured "
                      f"{res['wall']:.1f}s of {time.perf_counter() - t:.1f}s; at the end "
                      f"{check.get('allocated_claims')} claims allocated, no device or counter twice", flush=True)
                res.pop("created", None)
                res.pop("live", None)
                rows = [(f"{args.workload}/{args.variant}", res, dict(args.params))]
            else:
                rows = await default_run(ctx, args)
        finally:
            ctx.stop()
        rss = {name: peak_rss_mib(p.pid) for name, p in procs}
        for _, res, _ in rows:
            res["rss"] = rss
        if args.requests:
            await print_requests(s, url)
    return rows


async def print_requests(s: aiohttp.ClientSession, url: str) -> None:
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


def one_run(args: argparse.Namespace) -> tuple[list[tuple[str, dict, dict]], str]:
    """Start fresh components, run, stop them: (rows, temp dir)."""
    tmp = tempfile.mkdtemp(prefix="dramock-sched-bench-")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    procs = start_components(tmp, url, port, args.profile)
    failed = False
    try:
        rows = asyncio.run(run(args, procs, url))
    except BaseException:
        for name, _ in procs:
            with open(os.path.join(tmp, f"{name}.log"), "rb") as f:
                tail = f.read()[-2000:].decode(errors="replace")
            print(f"---- {name} log (tail) ----\n{tail}", file=sys.stderr)
        failed = True
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
        if failed:
            if args.keep_logs:
                print(f"component logs in {tmp}", file=sys.stderr)
            else:
                shutil.rmtree(tmp, ignore_errors=True)
    return rows, tmp


# ---------------------------------------------------------------- output

def median_rows(runs: list[list[tuple[str, dict, dict]]]) -> list[tuple[str, dict, dict]]:
    """Per workload row, the median of each figure over the runs."""
    out = []
    for i, (name, first, params) in enumerate(runs[0]):
        rs = [run[i][1] for run in runs if len(run) > i]

        def med(key: str, rs=rs) -> float:
            return statistics.median(r[key] for r in rs)
        m: dict = {k: med(k) for k in ("n", "of", "ops", "p50", "p99", "wall", "secs")}
        m.update({k: int(m[k]) for k in ("n", "of") if m[k] == int(m[k])})
        m["cpu"] = {k: statistics.median(r["cpu"][k] for r in rs) for k in first["cpu"]}
        m["rss"] = {k: statistics.median(r["rss"][k] for r in rs) for k in first["rss"]}
        m["phases"] = {k: statistics.median(r["phases"][k] for r in rs if k in r.get("phases", {}))
                       for k in first.get("phases") or {}}
        m["runs"] = [round(r["ops"], 2) for r in rs]
        out.append((name, m, params))
    return out


def print_table(rows: list[tuple[str, dict, dict]], title: str) -> None:
    print(title)
    header = (f"{'workload':<58}{'bound':>12}{'pods/s':>9}{'p50 ms':>10}{'p99 ms':>10}{'wall s':>8}"
              f"   cpu s (api/cm/sched)   cpu % of one core   peak RSS MiB (api/cm/sched)")
    print(header)
    print("-" * len(header))
    for name, r, _ in rows:
        cpus = "/".join(f"{r['cpu'][k]:.1f}" for k in COMPONENTS)
        util = "/".join(f"{100 * r['cpu'][k] / r['wall']:.0f}" if r["wall"] else "-" for k in COMPONENTS)
        rss = "/".join(f"{r['rss'][k]:.0f}" for k in COMPONENTS)
        bound = f"{r['n']:g}/{r['of']:g}"
        print(f"{name:<58}{bound:>12}{r['ops']:>9.1f}{r['p50']:>10.0f}{r['p99']:>10.0f}{r['wall']:>8.1f}"
              f"   {cpus:<22} {util:<19} {rss}")
    for name, r, _ in rows:
        if r.get("phases"):
            steps = " -> ".join(f"{k} +{v:.0f}" for k, v in r["phases"].items())
            print(f"  {name}: median ms per step: created -> {steps}")


def json_line(name: str, r: dict, params: dict, repeat: int) -> str:
    out = {"workload": name, "params": params, "bound": r["n"], "of": r["of"], "pods_per_s": round(r["ops"], 2),
           "p50_ms": round(r["p50"], 1), "p99_ms": round(r["p99"], 1),
           "cpu_s": {k: round(v, 2) for k, v in r["cpu"].items()},
           "peak_rss_mib": {k: round(v, 1) for k, v in r["rss"].items()}, "wall_s": round(r["wall"], 2),
           "phases_ms": {k: round(v, 1) for k, v in (r.get("phases") or {}).items()}}
    if repeat > 1:
        out["repeat"] = repeat
        out["pods_per_s_runs"] = r["runs"]
    return json.dumps(out)


def list_workloads() -> None:
    for name, w in WORKLOADS.items():
        print(name)
        for variant, params in w.variants.items():
            mark = " (default)" if variant == w.default else ""
            print(f"  {variant}{mark}: " + ", ".join(f"{k}={v}" for k, v in params.items()))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", default="", metavar="NAME[/VARIANT]",
                   help="run one of upstream's workloads (`list` prints them) instead of the default run")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="set a parameter of the --workload variant (e.g. initPods=100, duration=5)")
    p.add_argument("--repeat", type=int, default=1, help="run N times, fresh processes each, and print medians")
    p.add_argument("--nodes", type=int, default=None, help="nodes with devices (default 500)")
    p.add_argument("--devices", type=int, default=None, help="devices per node (one ResourceSlice per node; "
                   "default 10)")
    p.add_argument("--pods", type=int, default=None, help="pods (default 5000)")
    p.add_argument("--concurrency", type=int, default=16, help="pod creates in flight")
    p.add_argument("--setup-concurrency", type=int, default=64,
                   help="creates in flight while setting up nodes, slices and claims")
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
    if args.workload == "list":
        list_workloads()
        return
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    if args.workload:
        overrides = dict(kv.split("=", 1) for kv in args.param if "=" in kv)
        if len(overrides) != len(args.param):
            p.error("--param takes KEY=VALUE")
        w = WORKLOADS.get(args.workload.partition("/")[0])
        for flag in ("nodes", "devices", "pods"):
            if getattr(args, flag) is not None and w is not None:
                if flag not in w.flags:
                    p.error(f"--{flag} does not apply to {args.workload} (see --workload list; use --param)")
                overrides.setdefault(w.flags[flag], str(getattr(args, flag)))
        try:
            args.workload, args.variant, args.params = resolve(args.workload, overrides)
        except ValueError as e:
            p.error(str(e))
    else:
        if args.param:
            p.error("--param needs --workload")
        args.nodes = 500 if args.nodes is None else args.nodes
        args.devices = 10 if args.devices is None else args.devices
        args.pods = 5000 if args.pods is None else args.pods
        if args.steady_pods < 0:
            args.steady_pods = min(args.pods, args.nodes * args.devices // 2)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the components are stopped too

    runs = []
    for i in range(args.repeat):
        if args.repeat > 1:
            print(f"run {i + 1}/{args.repeat}", flush=True)
        rows, tmp = one_run(args)
        runs.append(rows)
        if args.repeat > 1:
            print_table(rows, f"run {i + 1}:")
        if args.profile and i == args.repeat - 1:
            print_profile(args.profile, tmp)
        if args.keep_logs:
            print(f"component logs in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    rows = median_rows(runs) if args.repeat > 1 else runs[0]

    if args.workload:
        title = f"DRA scheduling, upstream workload {args.workload}/{args.variant}: " + ", ".join(
            f"{k}={v}" for k, v in args.params.items())
    else:
        title = (f"DRA scheduling: {args.nodes} nodes x {args.devices} devices ({DRIVER}), one claim per pod from "
                 f"a ResourceClaimTemplate, concurrency {args.concurrency}")
    if args.repeat > 1:
        title += f" -- median of {args.repeat} runs"
    print_table(rows, title)
    print(f"(pods/s = pods bound / first create to last bind, or / the window in steady state; latency = POST to "
          f"bind seen on a watch; peak RSS = VmHWM; upstream CI minimum for SchedulingWithResourceClaimTemplate: "
          f"{UPSTREAM_MIN:g} pods/s)")
    if args.json:
        for name, r, params in rows:
            print(json_line(name, r, params, args.repeat))


def print_profile(component: str, tmp: str) -> None:
    import pstats

    path = os.path.join(tmp, f"{component}.prof")
    if os.path.exists(path):
        print(f"\n{component} profile (whole run, by cumulative time):")
        pstats.Stats(path).sort_stats("cumulative").print_stats(30)
        print(f"{component} profile (by own time):")
        pstats.Stats(path).sort_stats("tottime").print_stats(25)
    else:
        print(f"(no {component} profile written)")


if __name__ == "__main__":
    main()
