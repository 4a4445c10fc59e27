"""Two scheduler processes (both `default-scheduler`) racing against one server: one Ready node with ONE device.

* Two pods, each with its own claim for that device: exactly one pod binds, no two claims ever hold the device at
  the same time (every claim change is recorded through a watch and replayed), the other pod stays Pending /
  Unschedulable.
* Two pods sharing one claim: the claim's allocation is written once (never replaced by a different one), both pods
  bind to the node and are reserved on the claim.

Each case runs in a few rounds (fresh server per round) with the pods created before or after both schedulers
start, to give the race several chances.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import pytest

from dramock.client.rest import Client
from dramock.scheduler import scheduler
from tests.helpers import Server, spawn, start_server, stop, stop_process, wait_for
from tests.test_scheduler import SchedulerThread, _allocator

R = "/apis/resource.k8s.io/v1"
NS = "default"
DRIVER = "gpu.example.com"
DEVICE = (DRIVER, "node-1", "gpu-0")


# ---------------------------------------------------------------- processes


def start_scheduler(url: str, log_path: str) -> subprocess.Popen:
    # Two schedulers working at once is the point here: no leader election.
    return spawn([sys.executable, "-m", "dramock.scheduler", "--server", url, "--leader-elect=false"], log_path)


class ClaimWatch:
    """Every ResourceClaim event of the namespace since the race began, in order: a watch from the revision taken
    before the race replays the server's history (nothing is compacted within a test)."""

    def __init__(self, s: Server, rv: str):
        self.server, self.rv = s, rv

    @property
    def events(self) -> list[tuple[str, dict]]:
        out = []
        with urllib.request.urlopen(  # noqa: S310 - local test server
                f"{self.server.url}{R}/namespaces/{NS}/resourceclaims?watch=true&resourceVersion={self.rv}"
                f"&allowWatchBookmarks=false&timeoutSeconds=1", timeout=30) as resp:
            for line in resp:
                if line.strip():
                    ev = json.loads(line)
                    assert ev["type"] in ("ADDED", "MODIFIED", "DELETED"), ev
                    out.append((ev["type"], ev["object"]))
        return out


# ---------------------------------------------------------------- API helpers


def create(s: Server, path: str, obj: dict) -> dict:
    code, _, body = s.request("POST", path, obj)
    assert code == 201, (path, body)
    return body


def get(s: Server, path: str) -> dict:
    code, _, body = s.request("GET", path)
    assert code == 200, (path, body)
    return body


def setup_cluster(s: Server) -> None:
    create(s, "/api/v1/nodes", {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}],
                   "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                   "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})
    create(s, f"{R}/deviceclasses", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                     "metadata": {"name": DRIVER},
                                     "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}})
    create(s, f"{R}/resourceslices", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "node-1-gpu"},
        "spec": {"driver": DRIVER, "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
                 "nodeName": "node-1", "devices": [{"name": "gpu-0"}]}})


def make_claim(s: Server, name: str) -> None:
    create(s, f"{R}/namespaces/{NS}/resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": NS},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}})


def make_pod(s: Server, name: str, claim_name: str) -> None:
    create(s, f"/api/v1/namespaces/{NS}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
                 "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}]}})


def pod(s: Server, name: str) -> dict:
    return get(s, f"/api/v1/namespaces/{NS}/pods/{name}")


def devices_of(claim: dict) -> list[tuple[str, str, str]]:
    alloc = (claim.get("status") or {}).get("allocation") or {}
    return [(r["driver"], r["pool"], r["device"]) for r in (alloc.get("devices") or {}).get("results") or []]


def replay_never_double_allocated(events: list[tuple[str, dict]]) -> None:
    """Replays the claim events: at no point do two claims (or two results) hold the same device."""
    state: dict[str, list[tuple[str, str, str]]] = {}
    for type_, obj in events:
        name = obj["metadata"]["name"]
        if type_ == "DELETED":
            state.pop(name, None)
        else:
            state[name] = devices_of(obj)
        held = [d for devs in state.values() for d in devs]
        assert len(held) == len(set(held)), \
            f"device allocated twice at rv {obj['metadata'].get('resourceVersion')}: " \
            f"{ {n: d for n, d in state.items() if d} }"


def allocation_written_once(events: list[tuple[str, dict]], claim_name: str) -> dict:
    """The claim's allocation, once set, is never replaced by a different one (nor removed). Returns it."""
    first: dict | None = None
    for type_, obj in events:
        if obj["metadata"]["name"] != claim_name:
            continue
        assert type_ != "DELETED", "claim deleted during the race"
        alloc = (obj.get("status") or {}).get("allocation")
        if first is None:
            first = alloc  # stays None until the allocation is first seen
        else:
            assert alloc == first, \
                f"allocation changed at rv {obj['metadata'].get('resourceVersion')}: {first} -> {alloc}"
    assert first is not None, "claim never allocated"
    return first


@pytest.fixture
def server(tmp_path, starts_processes) -> Iterator[Server]:
    s = start_server(str(tmp_path))
    yield s
    stop(s)


def race(s: Server, tmp: str, pods_first: bool, make_objects) -> tuple[list[subprocess.Popen], ClaimWatch]:
    """Both schedulers and the objects, in the chosen order; the claim watch starts before anything races."""
    setup_cluster(s)
    rv = get(s, f"{R}/namespaces/{NS}/resourceclaims")["metadata"]["resourceVersion"]
    watch = ClaimWatch(s, rv)
    scheds: list[subprocess.Popen] = []
    if pods_first:
        make_objects()
    scheds = [start_scheduler(s.url, os.path.join(tmp, f"scheduler-{i}.log")) for i in (1, 2)]
    if not pods_first:
        for i in (1, 2):  # both informers synced before anything exists to race for
            wait_for(lambda i=i: "caches synced" in _log(tmp, i), 30, what=f"scheduler-{i} synced")
        make_objects()
    return scheds, watch


def _log(tmp: str, i: int) -> str:
    with open(os.path.join(tmp, f"scheduler-{i}.log")) as f:
        return f.read()


def logs(tmp: str) -> str:
    return "\n".join(f"--- scheduler-{i}\n{_log(tmp, i)[-3000:]}" for i in (1, 2))


def stays(predicate, seconds: float) -> bool:
    """True when predicate holds at every poll for `seconds`: the window in which a wrong second binding or
    allocation by the other scheduler would show up."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not predicate():
            return False
        time.sleep(0.1)
    return True


# ---------------------------------------------------------------- the races


@pytest.mark.parametrize("pods_first", [True, False], ids=["pods-first", "schedulers-first"])
@pytest.mark.parametrize("round_", range(2))
def test_two_claims_one_device_two_schedulers(server: Server, tmp_path, pods_first: bool, round_: int):
    tmp = str(tmp_path)

    def objects() -> None:
        make_claim(server, "claim-a")
        make_claim(server, "claim-b")
        make_pod(server, "pod-a", "claim-a")
        make_pod(server, "pod-b", "claim-b")

    scheds, watch = race(server, tmp, pods_first, objects)
    try:
        def bound() -> list[str]:
            return [n for n in ("pod-a", "pod-b") if pod(server, n)["spec"].get("nodeName")]

        wait_for(bound, 30, what="a pod bound")

        def loser_unschedulable() -> str | None:
            for n in ("pod-a", "pod-b"):
                conds = {c["type"]: c for c in pod(server, n)["status"].get("conditions") or []}
                c = conds.get("PodScheduled")
                if c and c["status"] == "False" and c["reason"] == "Unschedulable":
                    return n
            return None

        loser = wait_for(loser_unschedulable, 30, what="the other pod Unschedulable")
        assert stays(lambda: len(bound()) == 1, 3), f"bound: {bound()}\n{logs(tmp)}"
        winners = bound()
        assert len(winners) == 1, f"bound: {winners}\n{logs(tmp)}"
        winner = winners[0]
        assert loser != winner
        lp = pod(server, loser)
        assert not lp["spec"].get("nodeName") and lp["status"].get("phase", "Pending") == "Pending"
        evs = [e for e in get(server, f"/api/v1/namespaces/{NS}/events")["items"]
               if e["involvedObject"].get("name") == loser and e["reason"] == "FailedScheduling"]
        assert evs and evs[-1]["type"] == "Warning", evs
        # Read back all claims: the device is allocated exactly once, to the winner's claim, reserved for it.
        claims = {c["metadata"]["name"]: c for c in get(server, f"{R}/namespaces/{NS}/resourceclaims")["items"]}
        held = {n: devices_of(c) for n, c in claims.items() if devices_of(c)}
        wclaim, lclaim = f"claim-{winner[-1]}", f"claim-{loser[-1]}"
        assert held == {wclaim: [DEVICE]}, f"{held}\n{logs(tmp)}"
        assert [r["name"] for r in claims[wclaim]["status"]["reservedFor"]] == [winner]
        assert not (claims[lclaim].get("status") or {}).get("reservedFor")
        replay_never_double_allocated(watch.events)
    finally:
        for p in scheds:
            stop_process(p)


@pytest.mark.parametrize("pods_first", [True, False], ids=["pods-first", "schedulers-first"])
@pytest.mark.parametrize("round_", range(2))
def test_shared_claim_allocated_once_two_schedulers(server: Server, tmp_path, pods_first: bool, round_: int):
    tmp = str(tmp_path)

    def objects() -> None:
        make_claim(server, "shared")
        make_pod(server, "pod-a", "shared")
        make_pod(server, "pod-b", "shared")

    scheds, watch = race(server, tmp, pods_first, objects)
    try:
        for n in ("pod-a", "pod-b"):
            assert wait_for(lambda n=n: pod(server, n)["spec"].get("nodeName"), 30,
                            what=f"{n} bound") == "node-1", logs(tmp)
        assert stays(lambda: len(get(server, f"{R}/namespaces/{NS}/resourceclaims/shared")["status"]
                                 .get("reservedFor") or []) == 2, 2), logs(tmp)
        c = get(server, f"{R}/namespaces/{NS}/resourceclaims/shared")
        assert devices_of(c) == [DEVICE], c["status"]
        uids = {n: pod(server, n)["metadata"]["uid"] for n in ("pod-a", "pod-b")}
        assert sorted((r["name"], r["uid"]) for r in c["status"]["reservedFor"]) == sorted(uids.items())
        assert all(r["resource"] == "pods" for r in c["status"]["reservedFor"])
        events = watch.events
        first = allocation_written_once(events, "shared")
        assert first == c["status"]["allocation"]
        replay_never_double_allocated(events)
    finally:
        for p in scheds:
            stop_process(p)


def test_claim_event_before_the_write_answer_still_retries_waiting_pods(server: Server):
    """Two pods share one claim. While the first pod's allocation is being written, the second is parked ("in
    the process of being allocated"). Here the claim's watch event reaches the scheduler before the answer to its
    own write, and the second pod is parked again after that event. The answer, which ends the in-flight
    allocation, must then retry the parked pod: nothing else changes the claim (no kubelet here), and the
    unschedulable flush is a minute away."""
    made: list[scheduler.Scheduler] = []
    parked_after_event: list[bool] = []

    def make(client: Client) -> scheduler.Scheduler:
        real = client.request

        async def request(method, path, body=None, params=None, content_type="application/json"):
            out = await real(method, path, body, params, content_type)
            if path.endswith("/resourceclaims/shared/status") and not parked_after_event:
                sched, key = made[0], f"{NS}/pod-b"
                seen = None
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:  # hold the answer until both happened
                    c = sched.claims.get(NS, "shared")
                    if seen is None and c is not None and (c.get("status") or {}).get("allocation"):
                        seen = time.monotonic()
                    if seen is not None and sched.unschedulable.get(key, 0.0) > seen and sched._in_cycle is None:
                        parked_after_event.append(True)
                        break
                    await asyncio.sleep(0.02)
            return out

        client.request = request  # type: ignore[method-assign]
        made.append(scheduler.Scheduler(client, allocate=_allocator()))
        return made[0]

    setup_cluster(server)
    sched = SchedulerThread(server.url, make).start()
    try:
        make_claim(server, "shared")
        make_pod(server, "pod-a", "shared")
        make_pod(server, "pod-b", "shared")
        assert wait_for(lambda: pod(server, "pod-a")["spec"].get("nodeName"), 30, what="pod-a bound") == "node-1"
        assert parked_after_event, "pod-b was never parked after the claim's event"
        assert wait_for(lambda: pod(server, "pod-b")["spec"].get("nodeName"), 20, what="pod-b bound") == "node-1"
    finally:
        sched.close()
    assert sched.error is None
