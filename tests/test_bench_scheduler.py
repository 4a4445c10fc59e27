"""bench/scheduler.py runs each upstream workload end to end at its smallest size and prints its JSON line (e2e),
and its workloads carry upstream's parameters (unit).

The e2e tests run the bench as a real process (it starts an API server, controller-manager and scheduler of its
own); sizes are upstream's `fast` variants with shortened steady-state windows. Figures are printed, never
asserted on: a run passes when it exits 0, names its workload and parameters, and every measured pod was bound
(steady states: some were).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench", "scheduler.py")
sys.path.append(os.path.join(ROOT, "bench"))  # after everything else: its names shadow nothing
import schedworkloads  # noqa: E402 - bench/ is not a package; its scripts import each other by name

COMPONENTS = {"apiserver", "controller-manager", "scheduler"}


def bench(*args: str, timeout: float = 60) -> list[dict]:
    """Run the bench (its own process group, so a timeout also ends the components it started); its JSON lines."""
    proc = subprocess.Popen([sys.executable, BENCH, "--json", "--timeout=30", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"bench {args} did not finish in {timeout}s:\n{out[-3000:]}")
    assert proc.returncode == 0, f"bench {args} exited {proc.returncode}:\n{out[-3000:]}"
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert lines, f"no JSON line in:\n{out[-3000:]}"
    return lines


def check_figures(row: dict) -> None:
    assert set(row["cpu_s"]) == COMPONENTS
    assert set(row["peak_rss_mib"]) == COMPONENTS and all(v > 0 for v in row["peak_rss_mib"].values())
    assert row["bound"] > 0 and row["pods_per_s"] > 0 and row["p99_ms"] >= row["p50_ms"] > 0


@pytest.mark.e2e
@pytest.mark.parametrize(("workload", "params", "burst"), [
    ("SchedulingWithResourceClaimTemplate", ["initPods=4", "measurePods=6"], True),
    ("SteadyStateClusterResourceClaimTemplate", ["initClaims=5", "duration=1"], False),
    ("SchedulingWithResourceClaim", ["initPods=5", "initClaims=1", "maxClaimsPerNode=3"], True),
    ("SteadyStateClusterResourceClaimTemplatePartitionable", ["duration=1"], False),
])
def test_workload_fast(workload: str, params: list[str], burst: bool) -> None:
    args = [f"--workload={workload}/fast"] + [f"--param={p}" for p in params]
    [row] = bench(*args)
    assert row["workload"] == f"{workload}/fast"
    for p in params:
        key, value = p.split("=")
        assert row["params"][key] == float(value)
    check_figures(row)
    if burst:  # every measured pod (the test namespace's) was scheduled, and only those were counted
        assert row["bound"] == row["of"] == row["params"]["measurePods"]


@pytest.mark.e2e
def test_default_run_recycles_when_pods_exceed_devices() -> None:
    """The default run (no --workload) with more pods than devices: bound pods make room, all are scheduled."""
    rows = bench("--nodes", "2", "--devices", "2", "--pods", "6", "--steady-seconds", "0")
    [row] = rows
    assert row["params"] == {"nodes": 2, "devices": 2, "pods": 6}
    check_figures(row)
    assert row["bound"] == row["of"] == 6


def test_variants_carry_upstreams_parameters() -> None:
    name, variant, p = schedworkloads.resolve("SteadyStateClusterResourceClaimTemplate/full_500nodes", {})
    assert (p["nodesWithDRA"], p["initClaims"], p["maxClaimsPerNode"], p["duration"], p["count"]) == \
        (500, 4990, 10, 10, 10)
    _, variant, p = schedworkloads.resolve("SchedulingWithResourceClaim", {"initPods": "10", "initClaims": "2"})
    assert variant == "5000pods_500nodes" and (p["initPods"], p["initClaims"], p["measureClaims"]) == (10, 2, 500)
    for spec, overrides, message in [
            ("Nope", {}, "unknown workload"),
            ("SchedulingWithResourceClaim/nope", {}, "no variant"),
            ("SchedulingWithResourceClaim/fast", {"nope": "1"}, "no parameter"),
            ("SchedulingWithResourceClaim/fast", {"measurePods": "x"}, "not a number"),
            ("SchedulingWithResourceClaim/fast", {"measurePods": "11"}, "need 3 claims"),
            ("SchedulingWithResourceClaimTemplate/fast", {"initPods": "1"}, "do not fit"),
            ("SteadyStateClusterResourceClaimTemplatePartitionable/fast", {"initClaims": "11"}, "do not fit")]:
        with pytest.raises(ValueError, match=message):
            schedworkloads.resolve(spec, overrides)


def test_preallocated_claims_leave_one_free_device_on_as_many_nodes() -> None:
    """full_500nodes' shape at 5 nodes x 4 devices: 15 claims spread round-robin leave 5 devices, one per node."""
    used: dict[str, set[str]] = {}
    for i in range(15):
        r = schedworkloads.node_local_allocation(i, 5, 4)["devices"]["results"][0]
        assert r["device"] not in used.setdefault(r["pool"], set())
        used[r["pool"]].add(r["device"])
    assert sorted(len(d) for d in used.values()) == [3] * 5
    with pytest.raises(RuntimeError):
        schedworkloads.node_local_allocation(20, 5, 4)
