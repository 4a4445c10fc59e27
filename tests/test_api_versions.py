"""Optional resource.k8s.io versions: off by default, served with --runtime-config, converted both ways."""

from __future__ import annotations

import json
import threading
import time
import urllib.request

import pytest

from tests.helpers import start_server, stop

BETA1 = "/apis/resource.k8s.io/v1beta1"
V1 = "/apis/resource.k8s.io/v1"


@pytest.fixture(scope="module")
def beta_server(tmp_path_factory, starts_processes):
    s = start_server(str(tmp_path_factory.mktemp("betas")),
                     "--runtime-config", "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true")
    yield s
    stop(s)


def test_betas_are_off_by_default(server):
    code, _, body = server.request("GET", BETA1 + "/resourceslices")
    assert (code, body["reason"]) == (404, "NotFound")
    res = server.kubectl("apply", "-f", "-", check=False, input=json.dumps({
        "apiVersion": "resource.k8s.io/v1beta1", "kind": "DeviceClass", "metadata": {"name": "x"}}))
    assert res.returncode != 0
    assert 'no matches for kind "DeviceClass" in version "resource.k8s.io/v1beta1"' in res.stderr


def test_discovery_lists_served_versions_v1_preferred(beta_server):
    code, _, group = beta_server.request("GET", "/apis/resource.k8s.io")
    assert code == 200
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta2", "v1beta1"]
    assert group["preferredVersion"]["version"] == "v1"
    code, _, _ = beta_server.request("GET", "/apis/resource.k8s.io/v1alpha3/devicetaintrules")
    assert code == 404


def test_v1beta1_slice_reads_back_as_v1_and_watches_in_v1beta1(beta_server):
    s = beta_server
    _, _, lst = s.request("GET", BETA1 + "/resourceslices")
    rv = lst["metadata"]["resourceVersion"]
    events: list = []

    def watch():
        url = f"{s.url}{BETA1}/resourceslices?watch=1&resourceVersion={rv}&timeoutSeconds=10"
        with urllib.request.urlopen(url, timeout=20) as resp:
            for line in resp:
                events.append(json.loads(line))
                return

    t = threading.Thread(target=watch)
    t.start()
    time.sleep(0.2)  # the watch starts from `rv`, so a late start loses nothing
    beta_slice = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice",
                  "metadata": {"name": "beta-slice"},
                  "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                           "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                           "devices": [{"name": "d0", "basic": {"attributes": {"model": {"string": "m"}},
                                                                "capacity": {"mem": {"value": "1Gi"}}}}]}}
    code, _, created = s.request("POST", BETA1 + "/resourceslices", beta_slice)
    assert code == 201, created
    assert created["apiVersion"] == "resource.k8s.io/v1beta1"
    assert created["spec"]["devices"][0]["basic"]["attributes"] == {"model": {"string": "m"}}
    code, _, v1 = s.request("GET", V1 + "/resourceslices/beta-slice")
    assert v1["apiVersion"] == "resource.k8s.io/v1"
    assert v1["spec"]["devices"][0] == {"name": "d0", "attributes": {"model": {"string": "m"}},
                                        "capacity": {"mem": {"value": "1Gi"}}}
    t.join(20)
    assert events and events[0]["type"] == "ADDED"
    assert events[0]["object"]["apiVersion"] == "resource.k8s.io/v1beta1"
    assert "basic" in events[0]["object"]["spec"]["devices"][0]


def test_v1beta1_flat_request_becomes_exactly(beta_server):
    claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": "flat"},
             "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.example.com"}]}}}
    code, _, created = beta_server.request("POST", BETA1 + "/namespaces/default/resourceclaims", claim)
    assert code == 201, created
    assert created["spec"]["devices"]["requests"][0] == {"name": "gpu", "deviceClassName": "gpu.example.com",
                                                         "allocationMode": "ExactCount", "count": 1}
    _, _, v1 = beta_server.request("GET", V1 + "/namespaces/default/resourceclaims/flat")
    assert v1["spec"]["devices"]["requests"][0] == {"name": "gpu", "exactly": {
        "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}}
