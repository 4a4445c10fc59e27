"""End to end with the real kubectl (v1.32, /usr/bin/kubectl) against a real dramock process."""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest
import yaml

from tests.helpers import KUBECTL, wait_for

# Defaults (allocationMode/count) are spelled out: the requests list is atomic, so kubectl's three-way
# patch would otherwise resend it on every apply, against upstream exactly as against dramock.
MANIFESTS = textwrap.dedent("""\
    apiVersion: resource.k8s.io/v1
    kind: DeviceClass
    metadata:
      name: e2e-gpu.example.com
    spec:
      selectors:
      - cel:
          expression: device.driver == "gpu.example.com"
    ---
    apiVersion: resource.k8s.io/v1
    kind: ResourceSlice
    metadata:
      name: e2e-node1-gpu
    spec:
      driver: gpu.example.com
      nodeName: e2e-node1
      pool:
        name: e2e-node1
        generation: 1
        resourceSliceCount: 1
      devices:
      - name: gpu-0
        attributes:
          model:
            string: LATEST-GPU-MODEL
    ---
    apiVersion: resource.k8s.io/v1
    kind: ResourceClaimTemplate
    metadata:
      name: e2e-template
      namespace: e2e
    spec:
      spec:
        devices:
          requests:
          - name: gpu
            exactly:
              deviceClassName: e2e-gpu.example.com
              allocationMode: ExactCount
              count: 1
    ---
    apiVersion: resource.k8s.io/v1
    kind: ResourceClaim
    metadata:
      name: e2e-claim
      namespace: e2e
    spec:
      devices:
        requests:
        - name: gpu
          exactly:
            deviceClassName: e2e-gpu.example.com
            allocationMode: ExactCount
            count: 1
    """)


@pytest.fixture(scope="module")
def applied(server, tmp_path_factory):
    server.kubectl("create", "namespace", "e2e")
    path = tmp_path_factory.mktemp("manifests") / "dra.yaml"
    path.write_text(MANIFESTS)
    first = server.kubectl("apply", "-f", str(path))
    return server, str(path), first.stdout


def test_no_kubeconfig_needed_shape(server):
    # The README's promise is for port 8080; here we only check the kubeconfig `dramock kubeconfig` prints.
    out = server.kubectl("config", "view", "-o", "json").stdout
    assert json.loads(out)["clusters"][0]["cluster"]["server"] == server.url


def test_api_resources_match_upstream(server):
    out = server.kubectl("api-resources", "--api-group=resource.k8s.io").stdout.splitlines()
    assert out[0].split() == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    rows = [line.split() for line in out[1:]]
    assert rows == [
        ["deviceclasses", "resource.k8s.io/v1", "false", "DeviceClass"],
        ["devicetaintrules", "resource.k8s.io/v1", "false", "DeviceTaintRule"],
        ["resourceclaims", "resource.k8s.io/v1", "true", "ResourceClaim"],
        ["resourceclaimtemplates", "resource.k8s.io/v1", "true", "ResourceClaimTemplate"],
        ["resourceslices", "resource.k8s.io/v1", "false", "ResourceSlice"],
    ]


def test_empty_list_on_a_new_server(fresh_server):
    res = fresh_server.kubectl("get", "deviceclasses")
    assert (res.stdout, res.stderr.strip()) == ("", "No resources found")


def test_protobuf_creates(server):
    server.kubectl("create", "namespace", "pb-x")
    server.kubectl("-n", "pb-x", "create", "configmap", "c", "--from-literal=a=b")
    server.kubectl("-n", "pb-x", "create", "secret", "generic", "s", "--from-literal=p=q")
    server.kubectl("-n", "pb-x", "create", "serviceaccount", "sa1")
    server.kubectl("-n", "pb-x", "create", "quota", "q", "--hard=pods=3")
    server.kubectl("-n", "pb-x", "run", "p1", "--image=nginx")
    cm = json.loads(server.kubectl("-n", "pb-x", "get", "configmap", "c", "-o", "json").stdout)
    assert cm["data"] == {"a": "b"}
    secret = json.loads(server.kubectl("-n", "pb-x", "get", "secret", "s", "-o", "json").stdout)
    assert secret["data"] == {"p": "cQ=="} and secret["type"] == "Opaque"
    quota = json.loads(server.kubectl("-n", "pb-x", "get", "quota", "q", "-o", "json").stdout)
    assert quota["spec"]["hard"] == {"pods": "3"}


def test_apply_then_unchanged(applied):
    server, path, first = applied
    assert "deviceclass.resource.k8s.io/e2e-gpu.example.com created" in first
    assert "resourceclaim.resource.k8s.io/e2e-claim created" in first
    again = server.kubectl("apply", "-f", path).stdout.splitlines()
    assert again == [
        "deviceclass.resource.k8s.io/e2e-gpu.example.com unchanged",
        "resourceslice.resource.k8s.io/e2e-node1-gpu unchanged",
        "resourceclaimtemplate.resource.k8s.io/e2e-template unchanged",
        "resourceclaim.resource.k8s.io/e2e-claim unchanged",
    ]


def test_server_side_apply(applied, tmp_path):
    server, path, _ = applied
    out = server.kubectl("apply", "--server-side", "-f", path).stdout
    assert "serverside-applied" in out
    cls = json.loads(server.kubectl("get", "deviceclass", "e2e-gpu.example.com", "-o", "json",
                                    "--show-managed-fields").stdout)
    managers = {(m["manager"], m["operation"]) for m in cls["metadata"]["managedFields"]}
    assert ("kubectl", "Apply") in managers
    # A conflicting manager is refused unless forced.
    changed = tmp_path / "dc.yaml"
    changed.write_text(textwrap.dedent("""\
        apiVersion: resource.k8s.io/v1
        kind: DeviceClass
        metadata:
          name: e2e-gpu.example.com
        spec:
          selectors:
          - cel:
              expression: device.driver == "other.example.com"
        """))
    res = server.kubectl("apply", "--server-side", "--field-manager=other", "-f", str(changed), check=False)
    assert res.returncode != 0 and "conflict" in res.stderr.lower()
    server.kubectl("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", str(changed))
    server.kubectl("apply", "--server-side", "-f", path, "--force-conflicts")


def test_get_yaml_wide_and_describe(applied):
    server, _, _ = applied
    doc = yaml.safe_load(server.kubectl("get", "resourceslice", "e2e-node1-gpu", "-o", "yaml").stdout)
    assert doc["spec"]["devices"][0]["name"] == "gpu-0"
    wide = server.kubectl("get", "resourceslices", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[:4] == ["NAME", "NODE", "DRIVER", "POOL"]
    row = next(line.split() for line in wide if line.startswith("e2e-node1-gpu"))
    assert row[1:4] == ["e2e-node1", "gpu.example.com", "e2e-node1"]
    claims = server.kubectl("-n", "e2e", "get", "resourceclaims").stdout.splitlines()
    assert claims[0].split() == ["NAME", "STATE", "AGE"]
    assert claims[1].split()[:2] == ["e2e-claim", "pending"]
    desc = server.kubectl("-n", "e2e", "describe", "resourceclaim", "e2e-claim").stdout
    assert "Name:" in desc and "e2e-claim" in desc and "Device Class Name:  e2e-gpu.example.com" in desc


def test_get_watch_sees_events(applied):
    server, _, _ = applied
    proc = subprocess.Popen([KUBECTL, "--kubeconfig", server.kubeconfig, "-n", "e2e", "get", "resourceclaims",
                             "-w", "--output-watch-events"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        lines: list[str] = []

        def seen(word):
            line = proc.stdout.readline()
            lines.append(line)
            return word in " ".join(lines)

        wait_for(lambda: seen("e2e-claim"), what="initial row")
        server.kubectl("-n", "e2e", "label", "resourceclaim", "e2e-claim", "watched=yes")
        wait_for(lambda: seen("MODIFIED"), what="MODIFIED event")
    finally:
        proc.kill()
        proc.wait()


def test_patch_all_types_label_delete_wait(applied):
    server, _, _ = applied
    ns = ("-n", "e2e")
    server.kubectl(*ns, "patch", "resourceclaim", "e2e-claim", "--type=merge",
                   "-p", '{"metadata":{"labels":{"m":"1"}}}')
    server.kubectl(*ns, "patch", "resourceclaim", "e2e-claim", "--type=json",
                   "-p", '[{"op":"add","path":"/metadata/labels/j","value":"2"}]')
    server.kubectl(*ns, "patch", "resourceclaim", "e2e-claim", "--type=strategic",
                   "-p", '{"metadata":{"labels":{"s":"3"}}}')
    server.kubectl(*ns, "label", "resourceclaim", "e2e-claim", "l=4")
    labels = json.loads(server.kubectl(*ns, "get", "resourceclaim", "e2e-claim", "-o", "json").stdout
                        )["metadata"]["labels"]
    assert {k: labels[k] for k in "mjsl"} == {"m": "1", "j": "2", "s": "3", "l": "4"}
    bad = server.kubectl(*ns, "patch", "resourceclaim", "e2e-claim", "--type=merge",
                         "-p", '{"spec":{"devices":{"requests":[]}}}', check=False)
    assert bad.returncode != 0 and "is invalid" in bad.stderr
    server.kubectl(*ns, "delete", "resourceclaim", "e2e-claim", "--wait=false")
    server.kubectl(*ns, "wait", "--for=delete", "resourceclaim/e2e-claim", "--timeout=20s")


def test_explain(server):
    out = server.kubectl("explain", "resourceclaim.spec.devices.requests.exactly").stdout
    assert "deviceClassName" in out and "allocationMode" in out and "FIELDS:" in out
