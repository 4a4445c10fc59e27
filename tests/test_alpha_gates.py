"""The alpha DRA features that dramock acts on, each with its gate on, and invisible with its gate off.

DRAOptionalNodeOperations (KEP-5945): a ResourceSlice's `skipNodeOperations` is copied into the allocation
results, and the kubelet skips NodePrepareResources / NodeUnprepareResources for a driver when every device of
that driver in the claim skips it. A driver that needs no node preparation then need not run on the node at all.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator

import pytest

from tests.conftest import Server, start_server, stop, wait_for

R = "/apis/resource.k8s.io/v1"
DRIVER = "cpu.example.com"  # no kubelet plugin of this name runs anywhere


def _serve(gates: str) -> tuple[Server, str]:
    tmp = tempfile.mkdtemp(prefix="dramock-alpha-", dir="/tmp")
    extra = ["--feature-gates", gates] if gates else []
    s = start_server(tmp, "--nodes", "1", *extra, command="serve")
    wait_for(lambda: s.request("GET", "/api/v1/nodes/node-1")[0] == 200, 30, what="node-1")
    return s, tmp


@pytest.fixture(scope="module")
def gate_on() -> Iterator[Server]:
    s, tmp = _serve("DRAOptionalNodeOperations=true")
    yield s
    stop(s)
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def gate_off() -> Iterator[Server]:
    s, tmp = _serve("")
    yield s
    stop(s)
    shutil.rmtree(tmp, ignore_errors=True)


def _setup(s: Server, ns: str, skip: list[str]) -> None:
    """A namespace, a node-local slice of DRIVER with `skip`, its class, one claim and a pod using it."""
    assert s.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
    code, _, body = s.request("POST", f"{R}/resourceslices", {
        "metadata": {"name": f"{ns}-slice"},
        "spec": {"driver": DRIVER, "nodeName": "node-1", "pool": {"name": ns, "generation": 1,
                                                                  "resourceSliceCount": 1},
                 "skipNodeOperations": skip,
                 "devices": [{"name": "cpus-0", "attributes": {"pool": {"string": ns}}}]}})
    assert code == 201, body
    code, _, body = s.request("POST", f"{R}/deviceclasses", {
        "metadata": {"name": f"{ns}.{DRIVER}"},
        "spec": {"selectors": [{"cel": {"expression":
                                        f'device.driver == "{DRIVER}" && '
                                        f'device.attributes["{DRIVER}"].pool == "{ns}"'}}]}})
    assert code == 201, body
    code, _, body = s.request("POST", f"{R}/namespaces/{ns}/resourceclaims", {
        "metadata": {"name": "cpus"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": f"{ns}.{DRIVER}"}}]}}})
    assert code == 201, body
    code, _, body = s.request("POST", f"/api/v1/namespaces/{ns}/pods", {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "cpus"}]}}],
                 "resourceClaims": [{"name": "cpus", "resourceClaimName": "cpus"}]}})
    assert code == 201, body


def _pod(s: Server, ns: str) -> dict:
    return s.request("GET", f"/api/v1/namespaces/{ns}/pods/p")[2]


def _events(s: Server, ns: str, reason: str) -> list[str]:
    items = s.request("GET", f"/api/v1/namespaces/{ns}/events")[2].get("items", [])
    return [e["message"] for e in items if e["reason"] == reason]


def _result(s: Server, ns: str) -> dict:
    c = s.request("GET", f"{R}/namespaces/{ns}/resourceclaims/cpus")[2]
    return c["status"]["allocation"]["devices"]["results"][0]


@pytest.mark.e2e
def test_skipping_every_operation_runs_the_pod_without_the_driver(gate_on):
    s, ns = gate_on, "skip-all"
    _setup(s, ns, ["*"])
    wait_for(lambda: _pod(s, ns)["status"].get("phase") == "Running", 30, what="the pod to run")
    assert _result(s, ns)["skipNodeOperations"] == ["*"]
    assert not _events(s, ns, "FailedPrepareDynamicResources")
    # Unprepare is skipped as well: the pod goes away without the kubelet waiting for the absent driver.
    assert s.request("DELETE", f"/api/v1/namespaces/{ns}/pods/p", {"gracePeriodSeconds": 0})[0] == 200
    wait_for(lambda: s.request("GET", f"/api/v1/namespaces/{ns}/pods/p")[0] == 404, 30, what="the pod to go")


@pytest.mark.e2e
def test_skipping_only_unprepare_still_prepares(gate_on):
    s, ns = gate_on, "skip-unprepare"
    _setup(s, ns, ["NodeUnprepareResources"])
    msgs = wait_for(lambda: _events(s, ns, "FailedPrepareDynamicResources"), 30, what="the prepare failure")
    assert any(f"DRA driver {DRIVER} is not registered on node node-1" in m for m in msgs), msgs
    assert _result(s, ns)["skipNodeOperations"] == ["NodeUnprepareResources"]
    assert _pod(s, ns)["status"].get("phase", "Pending") == "Pending"


@pytest.mark.e2e
def test_gate_off_drops_the_field_and_prepares(gate_off):
    s, ns = gate_off, "skip-off"
    _setup(s, ns, ["*"])
    slice_ = s.request("GET", f"{R}/resourceslices/{ns}-slice")[2]
    assert "skipNodeOperations" not in slice_["spec"]
    msgs = wait_for(lambda: _events(s, ns, "FailedPrepareDynamicResources"), 30, what="the prepare failure")
    assert any(f"DRA driver {DRIVER} is not registered on node node-1" in m for m in msgs), msgs
    assert "skipNodeOperations" not in _result(s, ns)
