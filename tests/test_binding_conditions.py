"""DRADeviceBindingConditions (KEP-5007) end to end, and the pieces it is made of.

The end-to-end tests run real processes: `dramock apiserver`, `dramock scheduler --dra-binding-timeout`, a
`dramock kubelet` and the `dramock example-driver` with fabric devices (bindsToNode, bindingConditions
[Attached], bindingFailureConditions [AttachFailed]) whose attach the driver simulates. They follow a pod through
upstream's states: allocated and reserved with an allocationTimestamp but unbound, nominated to the node, a
BindingConditionsPending event; then bound once the driver sets Attached=True; or, on AttachFailed=True or the
timeout, a FailedScheduling event and PodScheduled=False/SchedulerError with upstream's PreBind message, the claim
deallocated by the next attempt's PostFilter and allocated again.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

from dramock.scheduler import bindingconditions as bc
from dramock.scheduler.allocator import allocate
from dramock.scheduler.types import AllocationInput
from dramock.schemas.featuregates import FeatureGates
from tests.helpers import Server, spawn, start_server, stop, stop_process, wait_for

R = "/apis/resource.k8s.io/v1"
DRIVER = "gpu.example.com"
NODE = "node-1"
PREBIND = 'running PreBind plugin "DynamicResources": '


# ---------------------------------------------------------------- units: readiness, timeout, durations


def _claim(results: list[dict], devices: list[dict] | None = None, stamp: str | None = None) -> dict:
    allocation: dict = {"devices": {"results": results}}
    if stamp:
        allocation["allocationTimestamp"] = stamp
    status: dict = {"allocation": allocation}
    if devices is not None:
        status["devices"] = devices
    return {"metadata": {"name": "c"}, "status": status}


RESULT = {"request": "r", "driver": DRIVER, "pool": "p", "device": "fabric-0", "bindingConditions": ["Attached"],
          "bindingFailureConditions": ["AttachFailed"]}


def _status(*conds: tuple[str, str], **extra) -> dict:
    return {"driver": DRIVER, "pool": "p", "device": "fabric-0",
            "conditions": [{"type": t, "status": v, "reason": "R", "message": 'say "hi"'} for t, v in conds], **extra}


def test_ready_only_when_every_binding_condition_is_true():
    assert not bc.claim_ready(_claim([RESULT]))  # no device status yet
    assert not bc.claim_ready(_claim([RESULT], [_status(("Attached", "False"))]))
    assert bc.claim_ready(_claim([RESULT], [_status(("Attached", "True"))]))
    # The entry is matched by driver, pool and device; another device's status does not count.
    other = _status(("Attached", "True"))
    other["device"] = "fabric-1"
    assert not bc.claim_ready(_claim([RESULT], [other]))
    # Results without binding conditions need nothing.
    assert bc.claim_ready(_claim([{"request": "r", "driver": DRIVER, "pool": "p", "device": "gpu-0"}]))
    assert not bc.claim_ready({"metadata": {"name": "c"}, "status": {}})


def test_failure_condition_fails_with_upstreams_message():
    with pytest.raises(bc.BindingFailed) as e:
        bc.claim_ready(_claim([RESULT], [_status(("Attached", "True"), ("AttachFailed", "True"))]))
    assert str(e.value) == 'claim c binding failed: reason=R, message="say \\"hi\\""'
    assert bc.unavailable(_claim([RESULT], [_status(("AttachFailed", "True"))]), 600)
    assert not bc.unavailable(_claim([RESULT], [_status(("AttachFailed", "False"))]), 600)


def test_timeout_counts_from_the_allocation_timestamp():
    now = datetime.now(timezone.utc)
    old = (now - timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert bc.claim_timed_out(_claim([RESULT], stamp=old), 10, now)
    assert not bc.claim_timed_out(_claim([RESULT], stamp=old), 60, now)
    assert not bc.claim_timed_out(_claim([RESULT]), 10, now)  # no timestamp, no timeout
    assert bc.unavailable(_claim([RESULT], stamp=old), 10)
    # Ready claims are never unavailable, however old.
    assert not bc.unavailable(_claim([RESULT], [_status(("Attached", "True"))], stamp=old), 10)


@pytest.mark.parametrize(("text", "seconds"), [("600s", 600), ("10m", 600), ("1m30s", 90), ("1.5h", 5400),
                                                ("2", 2), ("500ms", 0.5)])
def test_go_durations(text, seconds):
    assert bc.parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "10x", "1m 2s"])
def test_bad_durations(text):
    with pytest.raises(ValueError):
        bc.parse_duration(text)


def _fabric_slice(binds_to_node: bool) -> dict:
    device = {"name": "fabric-0", "bindingConditions": ["Attached"], "bindingFailureConditions": ["AttachFailed"]}
    if binds_to_node:
        device["bindsToNode"] = True
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "fabric"},
            "spec": {"driver": DRIVER, "allNodes": True, "pool": {"name": "fabric", "generation": 1,
                                                                  "resourceSliceCount": 1},
                     "devices": [device]}}


@pytest.mark.parametrize("binds_to_node", [True, False])
def test_binds_to_node_pins_the_allocation_to_the_chosen_node(binds_to_node):
    claim = {"metadata": {"name": "c", "namespace": "d", "uid": "u1"},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": DRIVER}}]}}}
    cls = {"metadata": {"name": DRIVER}, "spec": {}}
    node = {"metadata": {"name": "node-2", "labels": {}}}
    out = allocate(AllocationInput(claims=[claim], node=node, slices=[_fabric_slice(binds_to_node)],
                                   classes={DRIVER: cls}, gates=FeatureGates()))
    assert out.fits, out.reason
    allocation = out.allocations[0]
    assert allocation["devices"]["results"][0]["bindingConditions"] == ["Attached"]
    if binds_to_node:
        assert allocation["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["node-2"]}]}]}
    else:
        assert "nodeSelector" not in allocation  # an allNodes pool: usable from anywhere
    # With the gate off, devices with binding conditions are not allocated at all.
    off = allocate(AllocationInput(claims=[claim], node=node, slices=[_fabric_slice(binds_to_node)],
                                   classes={DRIVER: cls},
                                   gates=FeatureGates({"DRADeviceBindingConditions": False})))
    assert not off.fits


# ---------------------------------------------------------------- end to end, real processes


class Cluster:
    def __init__(self, server: Server, tmp: str, procs: list[subprocess.Popen]):
        self.s, self.tmp, self.procs = server, tmp, procs

    def get(self, path: str) -> dict | None:
        code, _, body = self.s.request("GET", path)
        return body if code == 200 else None

    def claim(self, name: str) -> dict:
        c = self.get(f"{R}/namespaces/default/resourceclaims/{name}")
        assert c is not None
        return c

    def pod(self, name: str) -> dict:
        p = self.get(f"/api/v1/namespaces/default/pods/{name}")
        assert p is not None
        return p

    def events(self, pod: str) -> list[dict]:
        items = (self.get("/api/v1/namespaces/default/events") or {}).get("items", [])
        return [e for e in items if e["involvedObject"]["name"] == pod]

    def create(self, claim: str, pod: str, annotations: dict | None = None) -> None:
        code, _, body = self.s.request("POST", f"{R}/namespaces/default/resourceclaims", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": claim, "annotations": annotations or {}},
            "spec": {"devices": {"requests": [{"name": "fabric", "exactly": {
                "deviceClassName": DRIVER,
                "selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].fabric == true'}}]}}]}}})
        assert code == 201, body
        code, _, body = self.s.request("POST", "/api/v1/namespaces/default/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod},
            "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "f"}]}}],
                     "resourceClaims": [{"name": "f", "resourceClaimName": claim}]}})
        assert code == 201, body


@pytest.fixture(scope="module")
def cluster(starts_processes) -> Iterator[Cluster]:
    """apiserver, scheduler (binding timeout 4s), kubelet and example driver (2 fabric devices, attach after
    1.5 s), each its own process."""
    tmp = tempfile.mkdtemp(prefix="dramock-bc-", dir="/tmp")
    s = start_server(tmp)
    procs: list[subprocess.Popen] = []
    try:
        root = f"{tmp}/node-1"
        procs.append(spawn([sys.executable, "-m", "dramock", "scheduler", "--server", s.url,
                            "--dra-binding-timeout", "4s"], f"{tmp}/scheduler.log"))
        procs.append(spawn([sys.executable, "-m", "dramock", "kubelet", "--server", s.url, "--node-name", NODE,
                            "--root-dir", root], f"{tmp}/kubelet.log"))
        procs.append(spawn([sys.executable, "-m", "dramock", "example-driver", "--server", s.url, "--node-name",
                            NODE, "--root-dir", root, "--devices", "0", "--fabric-devices", "2",
                            "--attach-delay", "1.5", "--install-device-class"], f"{tmp}/driver.log"))
        wait_for(lambda: any(d["name"].startswith("fabric-") for sl in s.request("GET", f"{R}/resourceslices")[2]
                             .get("items", []) for d in sl["spec"].get("devices") or []), 30,
                 what="the driver's fabric devices")
        yield Cluster(s, tmp, procs)
    finally:
        for p in procs:
            stop_process(p)
        stop(s)
        shutil.rmtree(tmp, ignore_errors=True)


def _conditions(claim: dict, device: str) -> dict[str, str]:
    for d in claim.get("status", {}).get("devices") or []:
        if d["device"] == device:
            return {c["type"]: c["status"] for c in d.get("conditions") or []}
    return {}


def _scheduled_condition(pod: dict) -> dict:
    return next((c for c in pod.get("status", {}).get("conditions") or [] if c["type"] == "PodScheduled"), {})


@pytest.mark.e2e
def test_pod_waits_for_the_attach_then_binds(cluster):
    c = cluster
    c.create("attach-ok", "pod-ok", {f"{DRIVER}/attach-delay": "3"})
    # Waiting: allocated and reserved with a timestamp, nominated, not bound, the pending event recorded.
    claim = wait_for(lambda: (cl := c.claim("attach-ok")).get("status", {}).get("reservedFor") and cl, 20,
                     what="the claim to be allocated and reserved")
    pod = c.pod("pod-ok")
    allocation = claim["status"]["allocation"]
    result = allocation["devices"]["results"][0]
    assert result["bindingConditions"] == ["Attached"] and result["bindingFailureConditions"] == ["AttachFailed"]
    assert allocation["allocationTimestamp"]
    assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [NODE]
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["pod-ok"]
    assert not pod["spec"].get("nodeName")
    wait_for(lambda: c.pod("pod-ok")["status"].get("nominatedNodeName") == NODE, 10, what="nominatedNodeName")
    pending = wait_for(lambda: [e for e in c.events("pod-ok") if e["reason"] == "BindingConditionsPending"], 10,
                       what="the BindingConditionsPending event")
    assert pending[0]["type"] == "Normal" and pending[0]["action"] == "Scheduling"
    assert pending[0]["message"] == f"waiting for binding conditions for device on node {NODE}"
    assert not c.pod("pod-ok")["spec"].get("nodeName")  # still waiting for the driver
    # The driver attaches; the scheduler binds (and binding ends the nomination).
    wait_for(lambda: c.pod("pod-ok")["spec"].get("nodeName") == NODE, 20, what="the pod to be bound")
    assert "nominatedNodeName" not in c.pod("pod-ok")["status"]
    claim = c.claim("attach-ok")
    assert _conditions(claim, result["device"]).get("Attached") == "True"
    assert claim["status"]["allocation"]["allocationTimestamp"] == allocation["allocationTimestamp"]
    wait_for(lambda: c.pod("pod-ok")["status"].get("phase") == "Running", 30, what="the pod to run")
    # The kubelet's prepare kept the attach condition beside its Ready.
    conds = _conditions(c.claim("attach-ok"), result["device"])
    assert conds.get("Attached") == "True" and conds.get("Ready") == "True"
    assert [e for e in c.events("pod-ok") if e["reason"] == "Scheduled"]
    _delete(c, "pod-ok", "attach-ok")


def _delete(c: Cluster, pod: str, claim: str) -> None:
    c.s.request("DELETE", f"/api/v1/namespaces/default/pods/{pod}", {"gracePeriodSeconds": 0})
    wait_for(lambda: c.get(f"/api/v1/namespaces/default/pods/{pod}") is None, 30, what=f"pod {pod} to go")
    # No controller manager runs here: release the claim as its controller would, then delete it.
    cl = c.claim(claim)
    cl["status"] = {}
    c.s.request("PUT", f"{R}/namespaces/default/resourceclaims/{claim}/status", cl)
    cl = c.claim(claim)
    cl["metadata"]["finalizers"] = []
    c.s.request("PUT", f"{R}/namespaces/default/resourceclaims/{claim}", cl)
    c.s.request("DELETE", f"{R}/namespaces/default/resourceclaims/{claim}")


def _history(c: Cluster, name: str, since: str) -> list[dict]:
    """Every status the claim went through since resourceVersion `since`: a watch replays them from the log."""
    import json
    import urllib.request

    url = (f"{c.s.url}{R}/namespaces/default/resourceclaims?watch=1&timeoutSeconds=1&resourceVersion={since}"
           f"&fieldSelector=metadata.name={name}")
    states: list[dict] = []
    with urllib.request.urlopen(url, timeout=30) as resp:
        for line in resp:
            event = json.loads(line)
            if event["type"] in ("ADDED", "MODIFIED"):
                st = event["object"].get("status") or {}
                if not states or states[-1] != st:
                    states.append(st)
    return states


def _failed_attach(st: dict) -> bool:
    return any(c.get("type") == "AttachFailed" and c.get("status") == "True"
               for d in st.get("devices") or [] for c in d.get("conditions") or [])


@pytest.mark.e2e
def test_failure_condition_releases_the_allocation_and_retries(cluster):
    c = cluster
    rv = c.get(f"{R}/namespaces/default/resourceclaims")["metadata"]["resourceVersion"]
    c.create("attach-fails", "pod-fails", {f"{DRIVER}/attach-failures": "1", f"{DRIVER}/attach-delay": "0.5"})
    wait_for(lambda: c.pod("pod-fails")["spec"].get("nodeName") == NODE, 40,
             what="the pod bound after a failed and a successful attach")
    # The pod reported the PreBind error as upstream does (a Warning FailedScheduling event; its PodScheduled
    # condition said SchedulerError until it was bound), then the next attempt found the claim unavailable.
    failed = [e["message"] for e in c.events("pod-fails") if e["reason"] == "FailedScheduling"]
    assert sorted(failed) == [f'{PREBIND}claim attach-fails binding failed: reason=AttachFailed, message="simulated '
                          f'attach failure 1 of 1 on node {NODE}"',
                          "0/1 nodes are available: 1 resourceclaim not available on the node."][::-1], failed
    # The claim's history: allocated and reserved, the failure reported, unreserved (allocation kept), then
    # deallocated with its device status (PostFilter), allocated anew and attached.
    states = _history(c, "attach-fails", rv)
    i = next(i for i, st in enumerate(states) if _failed_attach(st))
    assert states[i]["reservedFor"] and states[i]["allocation"]["allocationTimestamp"]
    first = states[i]["allocation"]["allocationTimestamp"]
    j = next(j for j in range(i + 1, len(states)) if not states[j].get("reservedFor"))
    assert states[j]["allocation"]["allocationTimestamp"] == first and _failed_attach(states[j])
    k = next(k for k in range(j + 1, len(states)) if not states[k].get("allocation"))
    assert not states[k].get("devices") and not states[k].get("reservedFor")
    final = c.claim("attach-fails")["status"]
    assert final["allocation"]["allocationTimestamp"] >= first and not _failed_attach(final)
    device = final["allocation"]["devices"]["results"][0]["device"]
    assert _conditions({"status": final}, device).get("Attached") == "True"
    assert _scheduled_condition(c.pod("pod-fails")).get("status") != "False"
    _delete(c, "pod-fails", "attach-fails")


@pytest.mark.e2e
def test_timeout_releases_the_allocation_and_retries(cluster):
    c = cluster
    # The attach takes longer than the scheduler's 4 s binding timeout.
    rv = c.get(f"{R}/namespaces/default/resourceclaims")["metadata"]["resourceVersion"]
    c.create("attach-slow", "pod-slow", {f"{DRIVER}/attach-delay": "1h"})
    wait_for(lambda: any(e["reason"] == "FailedScheduling" and e["message"] in (
        f"{PREBIND}claim attach-slow binding timeout", f"{PREBIND}device binding timeout")
        for e in c.events("pod-slow")), 30, what="the binding timeout")
    cond = wait_for(lambda: (x := _scheduled_condition(c.pod("pod-slow"))).get("reason") == "SchedulerError" and x,
                    10, what="PodScheduled=False/SchedulerError")
    assert cond["status"] == "False" and cond["message"].startswith(PREBIND)
    assert not c.pod("pod-slow")["spec"].get("nodeName")
    # The next attempt deallocates it (PostFilter) and allocates it again.
    wait_for(lambda: sum(1 for e in c.events("pod-slow") if e["reason"] == "FailedScheduling" and
                         e["message"] == "0/1 nodes are available: 1 resourceclaim not available on the node."), 20,
             what="the attempt that finds the timed-out claim unavailable")
    states = wait_for(lambda: (h := _history(c, "attach-slow", rv)) and any(not st.get("allocation") for st in h)
                      and h[-1].get("reservedFor") and h, 30, what="a deallocation and a new reservation")
    stamps = [st["allocation"]["allocationTimestamp"] for st in states if st.get("allocation")]
    assert len(set(stamps)) >= 2, stamps
    # Once the driver is quick again the pod binds.
    cl = c.claim("attach-slow")
    cl["metadata"]["annotations"][f"{DRIVER}/attach-delay"] = "0"
    code, _, body = c.s.request("PUT", f"{R}/namespaces/default/resourceclaims/attach-slow", cl)
    assert code == 200, body
    wait_for(lambda: c.pod("pod-slow")["spec"].get("nodeName") == NODE, 40, what="the pod to bind at last")
    _delete(c, "pod-slow", "attach-slow")


@pytest.mark.e2e
@pytest.mark.parametrize("command", [["scheduler", "--server", "http://127.0.0.1:1"], ["serve", "--nodes", "0"]])
def test_binding_timeout_flag_refuses_less_than_a_second(command, tmp_path):
    res = subprocess.run([sys.executable, "-m", "dramock", *command, "--data-dir", str(tmp_path),
                          "--dra-binding-timeout", "500ms"] if command[0] == "serve" else
                         [sys.executable, "-m", "dramock", *command, "--dra-binding-timeout", "500ms"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert 'invalid argument for --dra-binding-timeout: bindingTimeout: Invalid value: "500ms": must be at least 1s' \
        in res.stderr
