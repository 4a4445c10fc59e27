"""Allocator throughput on a 4,000-device cluster: pods allocated one after the other.

    python bench/allocator.py [--nodes 500] [--gpus 8] [--pods 1000]

The cluster: one node-local ResourceSlice per node (8 GPUs each, with attributes and capacity), a
DeviceClass with a CEL selector, and one claim per pod asking for one GPU with a request selector too.
Pod i goes to node i % nodes; each result is fed back as `allocated` for the next pod (as the scheduler
does once the claim status is written), so later pods see fuller nodes.

Passes:
  cold     CEL results and device environments dropped before every allocation (every selector evaluated)
  warm     caches kept (what the scheduler sees after the first cycle over a node)
  uncached slices without resourceVersion/uid: the allocator does not cache (keys cannot be trusted)
Prints pods/s and p50/p99 per allocation for each pass.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dramock import cel  # noqa: E402  (after the sys.path line: runs from a checkout)
from dramock.scheduler import allocator  # noqa: E402
from dramock.scheduler.types import AllocationInput  # noqa: E402

DRIVER = "gpu.example.com"
MODELS = ["a100", "h100"]
CLASS_SELECTOR = (f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].model in ["a100", "h100"] '
                  f'&& device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("16Gi"))')
REQUEST_SELECTOR = f'device.attributes["{DRIVER}"].index < 8'


def cluster(nodes: int, gpus: int, versioned: bool) -> tuple[list[dict], list[dict]]:
    node_objs, slices = [], []
    for n in range(nodes):
        name = f"node-{n:04d}"
        node_objs.append({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}})
        md = {"name": f"{name}-{DRIVER}"}
        if versioned:
            md.update(uid=f"uid-{n}", resourceVersion=str(1000 + n))
        slices.append({"metadata": md, "spec": {
            "driver": DRIVER, "nodeName": name, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{g}",
                         "attributes": {"model": {"string": MODELS[g % 2]}, "index": {"int": g},
                                        "driverVersion": {"version": "1.2.3"}},
                         "capacity": {"memory": {"value": "40Gi"}}} for g in range(gpus)]}})
    return node_objs, slices


def run_pass(nodes: list[dict], slices: list[dict], pods: int, cold: bool, keep_caches: bool = False) -> list[float]:
    classes = {"gpu": {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": CLASS_SELECTOR}}]}}}
    done: list[dict] = []
    times: list[float] = []
    if not keep_caches:
        cel.clear_caches()
        allocator.clear_caches()
    gc.collect()
    for i in range(pods):
        claim = {"metadata": {"name": f"pod-{i}-gpu", "namespace": "bench"}, "spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 1,
                                        "selectors": [{"cel": {"expression": REQUEST_SELECTOR}}]}}]}}}
        inp = AllocationInput(claims=[claim], node=nodes[i % len(nodes)], slices=slices, classes=classes,
                              allocated=done)
        if cold:
            cel.clear_caches()
            allocator.clear_caches()
        t0 = time.perf_counter()
        out = allocator.allocate(inp)
        times.append(time.perf_counter() - t0)
        if not out.fits:
            raise SystemExit(f"pod {i}: {out.reason}")
        claim["status"] = {"allocation": out.allocations[0]}
        done.append(claim)
    return times


def report(label: str, times: list[float]) -> None:
    ts = sorted(times)
    p50 = statistics.median(ts)
    p99 = ts[min(len(ts) - 1, int(len(ts) * 0.99))]
    print(f"{label:<10} {len(ts) / sum(ts):>9.0f} pods/s   p50 {p50 * 1e3:7.3f} ms   p99 {p99 * 1e3:7.3f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--pods", type=int, default=1000)
    args = ap.parse_args()
    nodes, slices = cluster(args.nodes, args.gpus, versioned=True)
    print(f"{args.nodes} nodes x {args.gpus} GPUs = {args.nodes * args.gpus} devices, {args.pods} pods "
          f"(one claim each), sequential; Python {sys.version.split()[0]}")
    run_pass(nodes, slices, min(50, args.pods), cold=False)  # import/compile warm-up
    report("cold", run_pass(nodes, slices, args.pods, cold=True))
    # Warm: a first sweep over every node fills the caches, then the measured run.
    run_pass(nodes, slices, args.pods, cold=False)
    report("warm", run_pass(nodes, slices, args.pods, cold=False, keep_caches=True))
    nodes_u, slices_u = cluster(args.nodes, args.gpus, versioned=False)
    report("uncached", run_pass(nodes_u, slices_u, args.pods, cold=False))


if __name__ == "__main__":
    main()
