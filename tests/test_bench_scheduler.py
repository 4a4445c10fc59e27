"""bench/scheduler.py runs each upstream workload end to end at its smallest size and prints its JSON line.

Real processes (the bench starts an API server, controller-manager and scheduler of its own); sizes are upstream's
`fast` variants with shortened steady-state windows. Figures are printed, never asserted on: a run passes when it
exits 0, names its workload and parameters, and every measured pod was bound (steady states: some were).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench", "scheduler.py")
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


def test_default_run_recycles_when_pods_exceed_devices() -> None:
    """The default run (no --workload) with more pods than devices: bound pods make room, all are scheduled."""
    rows = bench("--nodes", "2", "--devices", "2", "--pods", "6", "--steady-seconds", "0")
    [row] = rows
    assert row["params"] == {"nodes": 2, "devices": 2, "pods": 6}
    check_figures(row)
    assert row["bound"] == row["of"] == 6
