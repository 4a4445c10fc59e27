"""Leader election through a coordination.k8s.io/v1 Lease: one scheduler works, the standby takes over."""

from __future__ import annotations

import argparse
import os
import sys
import time

import pytest

from dramock.client.leaderelection import parse_duration
from tests.helpers import spawn, start_server, stop, stop_process, wait_for

LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler"
# Short timings so the test runs in seconds; the defaults are upstream's 15s / 10s / 2s.
FLAGS = ["--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s",
         "--leader-elect-retry-period", "250ms"]


def test_durations_read_as_go_writes_them():
    assert [parse_duration(t) for t in ("15s", "1m30s", "250ms", "1.5h", "0s")] == [15, 90, 0.25, 5400, 0]
    for bad in ("15", "", "s", "1x"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_duration(bad)


def _pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


@pytest.mark.e2e
def test_killing_the_leading_scheduler_hands_scheduling_to_the_standby(tmp_path):
    s = start_server(str(tmp_path))
    scheds = []
    try:
        code, _, body = s.request("POST", "/api/v1/nodes", {
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}],
                       "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                       "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})
        assert code == 201, body
        logs = [os.path.join(tmp_path, f"scheduler-{i}.log") for i in (0, 1)]
        scheds = [spawn([sys.executable, "-m", "dramock", "scheduler", "--server", s.url, *FLAGS], path)
                  for path in logs]

        def read(i: int) -> str:
            with open(logs[i]) as f:
                return f.read()

        def leader() -> int | None:
            leading = [i for i in (0, 1) if "successfully acquired lease" in read(i)]
            return leading[0] if len(leading) == 1 else None

        first = wait_for(lambda: leader() is not None and leader() + 1, what="one leader") - 1
        standby = 1 - first
        code, _, lease = s.request("GET", LEASE)
        assert code == 200 and lease["spec"]["leaseDurationSeconds"] == 3
        holder = lease["spec"]["holderIdentity"]
        transitions = lease["spec"].get("leaseTransitions", 0)

        def bound(name: str) -> bool:
            return bool(s.request("GET", f"/api/v1/namespaces/default/pods/{name}")[2]["spec"].get("nodeName"))

        assert s.request("POST", "/api/v1/namespaces/default/pods", _pod("before"))[0] == 201
        wait_for(lambda: bound("before"), what="the leader binds a pod")
        assert "successfully acquired lease" not in read(standby)  # the standby only waits

        killed_at = time.monotonic()
        scheds[first].kill()
        stop_process(scheds[first])
        assert s.request("POST", "/api/v1/namespaces/default/pods", _pod("after"))[0] == 201
        wait_for(lambda: "successfully acquired lease" in read(standby), timeout=10, interval=0.05,
                 what="the standby takes over")
        took = time.monotonic() - killed_at
        # Within the lease duration of the last renewal the leader made (at most one retry period before the kill).
        assert took < 3 + 0.25 + 1.0, took
        wait_for(lambda: bound("after"), what="the new leader binds the waiting pod")
        lease = s.request("GET", LEASE)[2]
        assert lease["spec"]["holderIdentity"] != holder
        assert lease["spec"]["leaseTransitions"] == transitions + 1
        assert s.request("POST", "/api/v1/namespaces/default/pods", _pod("later"))[0] == 201
        wait_for(lambda: bound("later"), what="pods keep binding")

        # A clean stop gives the lease up: a new candidate leads at once, without waiting out the duration.
        scheds[standby].terminate()
        stop_process(scheds[standby])
        assert s.request("GET", LEASE)[2]["spec"].get("holderIdentity") in ("", None)
        third = spawn([sys.executable, "-m", "dramock", "scheduler", "--server", s.url, *FLAGS],
                      os.path.join(tmp_path, "scheduler-2.log"))
        scheds.append(third)
        assert s.request("POST", "/api/v1/namespaces/default/pods", _pod("third"))[0] == 201
        wait_for(lambda: bound("third"), timeout=10, what="the third scheduler binds")
    finally:
        for p in scheds:
            stop_process(p)
        stop(s)
