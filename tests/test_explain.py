"""`dramock explain`: one scenario per reason, built in a real API server (no scheduler, so pods stay Pending);
the command asks the server's /dramock/explain endpoint and must name the device and the reason."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.helpers import Server, start_server, stop

R = "/apis/resource.k8s.io/v1"
NODES = {"node-a": {"zone": "east"}, "node-b": {"zone": "west"}}
UNSCHEDULABLE = "0/2 nodes are available: 2 cannot allocate all claims."


@pytest.fixture(scope="module")
def api(tmp_path_factory, starts_processes) -> Iterator[Server]:
    s = start_server(str(tmp_path_factory.mktemp("explain")), "--feature-gates", "DRADeviceCompatibilityGroups=true")
    try:
        for name, labels in NODES.items():
            _create(s, "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name,
                                                                                          "labels": labels}})
        yield s
    finally:
        stop(s)


# ---------------------------------------------------------------- builders


def _create(s: Server, path: str, obj: dict) -> dict:
    code, _, body = s.request("POST", path, obj)
    assert code == 201, (path, body)
    return body


def _scenario(s: Server, ns: str, driver: str, slices: list[dict], claim_requests: list[dict], *,
              constraints: list | None = None, held: list[tuple[str, list[dict], list[dict]]] = (),
              pod_extra: dict | None = None) -> None:
    """Namespace `ns` with a class for `driver`, the slices, claims already allocated (`held`: name, requests,
    results) and a pending pod `p` whose claim `c` has `claim_requests`."""
    _create(s, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    _create(s, f"{R}/deviceclasses", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                      "metadata": {"name": driver},
                                      "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}})
    for sl in slices:
        _create(s, f"{R}/resourceslices", {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", **sl})
    for name, requests, results in held:
        claim = _create(s, f"{R}/namespaces/{ns}/resourceclaims", _claim(ns, name, requests))
        claim["status"] = {"allocation": {"devices": {"results": results}}}
        code, _, body = s.request("PUT", f"{R}/namespaces/{ns}/resourceclaims/{name}/status", claim)
        assert code == 200, body
    _create(s, f"{R}/namespaces/{ns}/resourceclaims", _claim(ns, "c", claim_requests, constraints))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns},
           "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "c"}]}}],
                    "resourceClaims": [{"name": "c", "resourceClaimName": "c"}], **(pod_extra or {})}}
    _create(s, f"/api/v1/namespaces/{ns}/pods", pod)


def _claim(ns: str, name: str, requests: list[dict], constraints: list | None = None) -> dict:
    devices: dict = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"devices": devices}}


def _req(name: str, driver: str, *exprs: str, **extra) -> dict:
    exactly = {"deviceClassName": driver, **extra}
    if exprs:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in exprs]
    return {"name": name, "exactly": exactly}


def _slice(name: str, driver: str, pool: str, devices: list[dict], node: str | None = "node-a", count: int = 1,
           **spec) -> dict:
    body = {"driver": driver, "pool": {"name": pool, "generation": 1, "resourceSliceCount": count}, **spec}
    if node:
        body["nodeName"] = node
    if devices:
        body["devices"] = devices
    return {"metadata": {"name": name}, "spec": body}


def _explain(s: Server, ns: str, *flags: str) -> str:
    res = subprocess.run([sys.executable, "-m", "dramock", "explain", "--server", s.url, "-n", ns, "p", *flags],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


def _line(out: str, device: str, request: str = "") -> str:
    """The output line about one device (the short output lists every device with a problem first), in the
    section of `request` when given."""
    lines = out.splitlines()
    if request:
        start = next(i for i, ln in enumerate(lines) if f", request {request} (" in ln)
        lines = lines[start + 1:]
    hits = [ln.strip() for ln in lines if ln.strip().startswith(device + ":")]
    assert hits, f"{device} not in:\n{out}"
    return hits[0]


# ---------------------------------------------------------------- one scenario per reason


def test_selector_false_quotes_the_expression_and_the_values_it_saw(api):
    d = "sel.example.com"
    _scenario(api, "x-selector", d, [_slice("sel", d, "sel", [
        {"name": "gpu-0", "attributes": {"model": {"string": "a100"}}}])],
        [_req("gpu", d, f'device.attributes["{d}"].model == "h100"')])
    out = _explain(api, "x-selector")
    assert out.splitlines()[0] == f"Pod x-selector/p: Pending: {UNSCHEDULABLE}"
    assert _line(out, f"{d}/sel/gpu-0") == (
        f'{d}/sel/gpu-0: SelectorFalse: request gpu selector #0 `device.attributes["{d}"].model == "h100"` is '
        f'false (it saw device.attributes["{d}"].model = "a100")')


def test_allocated_names_the_claim_holding_the_device(api):
    d = "held.example.com"
    _scenario(api, "x-held", d, [_slice("held", d, "held", [{"name": "gpu-0"}])], [_req("gpu", d)],
              held=[("other", [_req("gpu", d)], [{"request": "gpu", "driver": d, "pool": "held", "device": "gpu-0"}])])
    assert _line(_explain(api, "x-held"), f"{d}/held/gpu-0") == (
        f"{d}/held/gpu-0: Allocated: allocated to claim x-held/other (request gpu)")


def test_tainted_names_the_taint(api):
    d = "taint.example.com"
    taint = {"key": "example.com/broken", "value": "fan", "effect": "NoSchedule"}
    _scenario(api, "x-taint", d, [_slice("taint", d, "taint", [{"name": "gpu-0", "taints": [taint]}])],
              [_req("gpu", d)])
    assert _line(_explain(api, "x-taint"), f"{d}/taint/gpu-0") == (
        f"{d}/taint/gpu-0: Tainted: taint example.com/broken=fan:NoSchedule is not tolerated by the request")


def _partition(name: str, counter_set: str, counters: dict, groups: list | None = None, **attrs) -> dict:
    cc: dict = {"counterSet": counter_set, "counters": {k: {"value": v} for k, v in counters.items()}}
    if groups is not None:
        cc["compatibilityGroups"] = groups
    dev: dict = {"name": name, "consumesCounters": [cc]}
    if attrs:
        dev["attributes"] = {k: {"string": v} for k, v in attrs.items()}
    return dev


def test_counters_exhausted_says_which_counter_and_how_much_is_left(api):
    d = "part.example.com"
    counters = _slice("part-counters", d, "part", [], count=2,
                      sharedCounters=[{"name": "gpu-0", "counters": {"memory": {"value": "10Gi"}}}])
    devices = _slice("part-devices", d, "part", [_partition("half-0", "gpu-0", {"memory": "8Gi"}),
                                                 _partition("half-1", "gpu-0", {"memory": "8Gi"})], count=2)
    _scenario(api, "x-counters", d, [counters, devices], [_req("gpu", d)],
              held=[("other", [_req("gpu", d)], [{"request": "gpu", "driver": d, "pool": "part", "device": "half-0"}])])
    out = _explain(api, "x-counters")
    assert _line(out, f"{d}/part/half-1") == (
        f"{d}/part/half-1: CountersExhausted: counter set gpu-0: counter memory needs 8Gi, only 2Gi of 10Gi left")
    assert _line(out, f"{d}/part/half-0").startswith(f"{d}/part/half-0: Allocated: allocated to claim x-counters/other")


def test_consumable_capacity_left_and_request_policy_rounding(api):
    d = "bw.example.com"
    nic = {"name": "nic-0", "allowMultipleAllocations": True, "capacity": {"bandwidth": {
        "value": "10G", "requestPolicy": {"default": "5G", "validRange": {"min": "5G", "step": "5G"}}}}}
    _scenario(api, "x-capacity", d, [_slice("bw", d, "bw", [nic])],
              [_req("nic", d, capacity={"requests": {"bandwidth": "3G"}})],
              held=[("other", [_req("nic", d, capacity={"requests": {"bandwidth": "10G"}})],
                     [{"request": "nic", "driver": d, "pool": "bw", "device": "nic-0",
                       "shareID": "6b9a7c1e-3f7e-4c8e-9b0a-6f1d2e3c4b5a", "consumedCapacity": {"bandwidth": "10G"}}])])
    assert _line(_explain(api, "x-capacity"), f"{d}/bw/nic-0") == (
        f"{d}/bw/nic-0: CapacityExceeded: capacity bandwidth: requests 3G, rounded to 5G by the request policy, "
        "only 0 of 10G left")


def test_compatibility_group_conflict_names_the_partition_in_the_way(api):
    d = "mig.example.com"
    counters = _slice("mig-counters", d, "mig", [], count=2,
                      sharedCounters=[{"name": "gpu-0", "counters": {"sm": {"value": "100"}}}])
    devices = _slice("mig-devices", d, "mig", [_partition("mig-0", "gpu-0", {"sm": "20"}, ["mig"], type="mig"),
                                               _partition("vgpu-0", "gpu-0", {"sm": "50"}, ["vgpu"], type="vgpu")],
                     count=2)
    _scenario(api, "x-compat", d, [counters, devices], [_req("gpu", d, f'device.attributes["{d}"].type == "vgpu"')],
              held=[("other", [_req("gpu", d)], [{"request": "gpu", "driver": d, "pool": "mig", "device": "mig-0"}])])
    assert _line(_explain(api, "x-compat"), f"{d}/mig/vgpu-0") == (
        f"{d}/mig/vgpu-0: CompatibilityGroupConflict: counter set gpu-0: its compatibility groups [vgpu] conflict "
        f"with [mig] of {d}/mig/mig-0 (allocated)")


def test_match_attribute_names_the_other_device(api):
    d = "con.example.com"
    devs = [{"name": f"gpu-{i}", "attributes": {"model": {"string": m}}} for i, m in enumerate(("a100", "h100"))]
    _scenario(api, "x-constraint", d, [_slice("con", d, "con", devs)],
              [_req("a", d, 'device.attributes["con.example.com"].model == "a100"'),
               _req("b", d, 'device.attributes["con.example.com"].model == "h100"')],
              constraints=[{"matchAttribute": f"{d}/model"}])
    assert _line(_explain(api, "x-constraint"), f"{d}/con/gpu-1", request="b") == (
        f'{d}/con/gpu-1: ConstraintNotSatisfied: matchAttribute {d}/model: the device has "h100" but device '
        f'{d}/con/gpu-0 (request a) has "a100"')


def test_pool_incomplete_and_invalid(api):
    d = "pool.example.com"
    incomplete = _slice("pool-half", d, "half", [{"name": "gpu-0"}], count=2)
    dup_a = _slice("pool-dup-a", d, "dup", [{"name": "gpu-0"}], count=2)
    dup_b = _slice("pool-dup-b", d, "dup", [{"name": "gpu-0"}], count=2)
    try:
        _scenario(api, "x-pool", d, [incomplete, dup_a, dup_b], [_req("gpu", d)])
        out = _explain(api, "x-pool")
    finally:  # an invalid pool fails allocations on node-a that other pools cannot satisfy: not for later tests
        for sl in (incomplete, dup_a, dup_b):
            api.request("DELETE", f"{R}/resourceslices/{sl['metadata']['name']}")
    assert _line(out, f"pool {d}/half").startswith(f"pool {d}/half: PoolIncomplete: pool {d}/half is incomplete")
    assert "invalid resource pools were encountered" in out  # upstream's words for the node's reason
    assert _line(out, f"pool {d}/dup") == f"pool {d}/dup: PoolInvalid: pool {d}/dup is invalid: duplicate device " \
        "name gpu-0"


def test_node_not_selected_by_the_slice_node_selector(api):
    d = "zone.example.com"
    sel = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["north"]}]}]}
    _scenario(api, "x-nodesel", d, [_slice("zone", d, "zone", [{"name": "gpu-0"}], node=None, nodeSelector=sel)],
              [_req("gpu", d)])
    out = _explain(api, "x-nodesel")
    assert _line(out, f"{d}/zone/gpu-0") == (f"{d}/zone/gpu-0: NodeNotSelected: slice zone's nodeSelector "
                                             "{zone In [north]} does not select the node")


def test_node_failing_a_non_dra_filter(api):
    d = "aff.example.com"
    _scenario(api, "x-affinity", d, [_slice("aff", d, "aff", [{"name": "gpu-0"}])], [_req("gpu", d)],
              pod_extra={"nodeSelector": {"disk": "ssd"}})
    out = _explain(api, "x-affinity")
    assert out.splitlines()[0] == ("Pod x-affinity/p: Pending: 0/2 nodes are available: 2 node(s) didn't match "
                                   "Pod's node affinity/selector.")
    assert "node node-a: node(s) didn't match Pod's node affinity/selector" in out


def test_verbose_lists_every_device_and_json_is_served(api):
    d = "many.example.com"
    devs = [{"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"}}} for i in range(6)]
    _scenario(api, "x-many", d, [_slice("many", d, "many", devs)],
              [_req("gpu", d, f'device.attributes["{d}"].model == "h100"')])
    short, verbose = _explain(api, "x-many"), _explain(api, "x-many", "-v")
    assert re.search(r"\.\.\. and \d+ more SelectorFalse \(-v lists every device\)", short)
    assert sum(f"{d}/many/gpu-" in ln for ln in short.splitlines()) < 6
    assert all(f"{d}/many/gpu-{i}: SelectorFalse" in verbose for i in range(6))
    code, _, body = api.request("GET", "/dramock/explain/namespaces/x-many/pods/p")
    assert code == 200 and body["kind"] == "PodExplanation" and body["verdict"] == UNSCHEDULABLE
    code, _, body = api.request("GET", "/dramock/explain/namespaces/x-many/pods/nope")
    assert code == 404 and body["kind"] == "Status" and body["reason"] == "NotFound"
    code, _, body = api.request("GET", "/dramock/explain/namespaces/x-many/pods/p?format=xml")
    assert code == 400 and body["kind"] == "Status"


def test_distinct_attribute_names_the_device_with_the_same_value(api):
    d = "dist.example.com"
    devs = [{"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"}, "index": {"int": i}}} for i in range(2)]
    _scenario(api, "x-distinct", d, [_slice("dist", d, "dist", devs)],
              [_req("a", d, f'device.attributes["{d}"].index == 0'), _req("b", d)],
              constraints=[{"distinctAttribute": f"{d}/model"}])
    out = _explain(api, "x-distinct")
    assert _line(out, f"{d}/dist/gpu-1", request="b") == (
        f'{d}/dist/gpu-1: ConstraintNotSatisfied: distinctAttribute {d}/model: "a100" is also the value of device '
        f"{d}/dist/gpu-0 (request a)")
    assert _line(out, f"{d}/dist/gpu-0", request="b") == (
        f"{d}/dist/gpu-0: ChosenForOtherRequest: already chosen for claim x-distinct/c, request a of this pod")
