"""The pytest plugin (dramock.testing.pytest_plugin), run the way a driver's suite runs it: pytester writes a
test file and runs pytest on it in a subprocess, where the plugin comes in through its pytest11 entry point."""

from __future__ import annotations

import os

import pytest

from tests.helpers import KUBECTL

pytestmark = pytest.mark.usefixtures("kubectl_on_path")


@pytest.fixture
def kubectl_on_path(monkeypatch):
    monkeypatch.setenv("DRAMOCK_KUBECTL", KUBECTL)


USER_TESTS = '''
import json
import os
import subprocess

DEVICE_CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: my-gpus}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
"""

CLAIM = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: one}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: my-gpus}}]
"""


def test_class_and_claim(dramock_cluster, dramock_namespace):
    dramock_cluster.kubectl("apply", "-f", "-", input=DEVICE_CLASS)
    dramock_cluster.kubectl("-n", dramock_namespace, "apply", "-f", "-", input=CLAIM)
    out = dramock_cluster.kubectl("-n", dramock_namespace, "get", "resourceclaim", "one", "-o", "json").stdout
    claim = json.loads(out)
    assert claim["metadata"]["namespace"] == dramock_namespace
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] == "ExactCount"


def test_node_dirs_and_namespace(dramock_cluster, dramock_namespace):
    dirs = dramock_cluster.node_dirs("node-1")
    assert os.path.isdir(dirs.registration_dir)
    assert os.path.exists(dirs.registration_socket("gpu.example.com"))  # the example driver registered there
    code, _, ns = dramock_cluster.request("GET", "/api/v1/namespaces/" + dramock_namespace)
    assert code == 200 and ns["status"]["phase"] == "Active"
    # The secure port: an admin kubeconfig, and identities a driver's RBAC can be tested with.
    admin = dramock_cluster.secure_kubeconfig
    assert "https://127.0.0.1:" in open(admin).read()
    alice = dramock_cluster.kubeconfig_for("alice")
    res = subprocess.run(["kubectl", "--kubeconfig", alice, "get", "nodes"], capture_output=True, text=True)
    assert 'User "alice" cannot list resource "nodes"' in res.stderr
    res = subprocess.run(["kubectl", "--kubeconfig", admin, "get", "nodes", "-o", "name"], capture_output=True,
                         text=True, check=True)
    assert "node/node-1" in res.stdout
    with open(dramock_cluster.kubeconfig) as f:
        assert dramock_cluster.url in f.read()
'''


def test_fixtures_serve_a_cluster_and_clean_up(pytester):
    pytester.makepyfile(test_user=USER_TESTS + '''

NAMESPACES = []


def test_remember(dramock_namespace):
    NAMESPACES.append(dramock_namespace)


def test_namespace_of_the_previous_test_is_going(dramock_cluster):
    code, _, ns = dramock_cluster.request("GET", "/api/v1/namespaces/" + NAMESPACES[0])
    assert code == 404 or ns["status"]["phase"] == "Terminating"
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=4)


def test_failing_test_gets_the_server_log_and_keep_keeps_the_data(pytester):
    pytester.makepyfile(test_fail='''
def test_fails(dramock_cluster, dramock_namespace):
    dramock_cluster.kubectl("get", "namespace", dramock_namespace)
    assert False, "the driver did not cope"


def test_passes(dramock_cluster):
    assert dramock_cluster.url.startswith("http://127.0.0.1:")
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--dramock-keep")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "dramock server log (call)" in out
    assert "GET" in out or "namespaces" in out or "dramock" in out
    kept = [line.rsplit(" ", 1)[1] for line in result.outlines if "dramock: kept the data dir" in line]
    assert kept, out
    assert os.path.exists(os.path.join(kept[0], "data", "dramock.db"))
    assert os.path.exists(os.path.join(kept[0], "data.log"))
    import shutil

    shutil.rmtree(kept[0])


def test_options_and_fault_injection_from_the_fixture(pytester):
    pytester.makepyfile(test_opts='''
import json

CM_500 = "api:verb=create,resource=configmaps,code=500,count=1"


def test_nodes_and_gates(dramock_cluster):
    out = json.loads(dramock_cluster.kubectl("get", "nodes", "-o", "json").stdout)
    assert sorted(n["metadata"]["name"] for n in out["items"]) == ["node-1", "node-2"]
    assert dramock_cluster.kubectl("get", "resourceslices", "-o", "name").stdout == ""


def test_inject(dramock_cluster, dramock_namespace):
    with dramock_cluster.injected(CM_500) as rules:
        assert rules[0]["rule"] == CM_500
        res = dramock_cluster.kubectl("-n", dramock_namespace, "create", "configmap", "x", check=False)
        assert res.returncode != 0 and "dramock injected fault" in res.stderr
        dramock_cluster.kubectl("-n", dramock_namespace, "create", "configmap", "x")
    assert dramock_cluster.faults() == [{"id": 1, "rule": "api:verb=list,resource=secrets,latency=10ms",
                                         "type": "api", "fired": 0, "remaining": None}]
    assert dramock_cluster.injected_count(CM_500) == 1


def test_official_client(dramock_cluster):
    from kubernetes import client

    nodes = client.CoreV1Api(dramock_cluster.api_client).list_node()
    assert sorted(n.metadata.name for n in nodes.items) == ["node-1", "node-2"]
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--dramock-nodes", "2",
                                           "--dramock-no-example-driver",
                                           "--dramock-feature-gates", "DRADeviceCompatibilityGroups=true",
                                           "--dramock-inject", "api:verb=list,resource=secrets,latency=10ms")
    result.assert_outcomes(passed=3)
