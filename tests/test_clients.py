"""Client libraries against a real `dramock apiserver`, each configured from the kubeconfig `dramock kubeconfig`
writes, as it is: kubernetes_asyncio, lightkube (errors arrive as ApiError), kr8s and @kubernetes/client-node
(tests/clients/node, installed by .ci/run). Each lists, creates, reads and deletes, and sees a 404 as its own
error type. Also the wire details they depend on: Content-Type exactly application/json, list items without
apiVersion/kind."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import Server, make_ns, start_server, stop

pytestmark = pytest.mark.e2e

NODE_DIR = Path(__file__).resolve().parent / "clients" / "node"
CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}


@pytest.fixture(scope="module")
def api(tmp_path_factory, starts_processes) -> Iterator[Server]:
    s = start_server(str(tmp_path_factory.mktemp("clients")))
    yield s
    stop(s)


@pytest.fixture
def ns(api: Server) -> str:
    return make_ns(api, "cl")


def test_wire_content_type_and_list_items(api: Server, ns: str):
    api.request("POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "a"}, "data": {"k": "v"}})
    with urllib.request.urlopen(f"{api.url}/api/v1/namespaces/{ns}/configmaps") as r:
        assert r.headers["Content-Type"] == "application/json"
        body = json.loads(r.read())
    assert (body["kind"], body["apiVersion"]) == ("ConfigMapList", "v1")
    [item] = body["items"]
    assert "kind" not in item and "apiVersion" not in item and item["data"] == {"k": "v"}
    code, headers, status = api.request("GET", f"/api/v1/namespaces/{ns}/configmaps/missing")
    assert code == 404 and headers["Content-Type"] == "application/json" and status["kind"] == "Status"


def test_kubernetes_asyncio(api: Server, ns: str):
    from kubernetes_asyncio import client, config
    from kubernetes_asyncio.client.exceptions import ApiException

    async def run() -> None:
        cfg = client.Configuration()
        await config.load_kube_config(config_file=api.kubeconfig, client_configuration=cfg)
        async with client.ApiClient(cfg) as c:
            core = client.CoreV1Api(c)
            names = [n.metadata.name for n in (await core.list_namespace()).items]
            assert ns in names and "default" in names
            await core.create_namespaced_config_map(ns, client.V1ConfigMap(
                metadata=client.V1ObjectMeta(name="from-asyncio"), data={"lang": "py"}))
            assert (await core.read_namespaced_config_map("from-asyncio", ns)).data == {"lang": "py"}
            custom = client.CustomObjectsApi(c)
            created = await custom.create_namespaced_custom_object(
                "resource.k8s.io", "v1", ns, "resourceclaims", dict(CLAIM, metadata={"name": "asyncio-claim"}))
            assert created["metadata"]["name"] == "asyncio-claim"
            await core.delete_namespaced_config_map("from-asyncio", ns)
            with pytest.raises(ApiException) as e:
                await core.read_namespaced_config_map("from-asyncio", ns)
            assert e.value.status == 404

    asyncio.run(run())


def test_lightkube_errors_are_api_errors(api: Server, ns: str):
    from lightkube import ApiError, Client, KubeConfig
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.core_v1 import ConfigMap, Namespace
    from lightkube.resources.resource_v1 import ResourceClaim

    c = Client(config=KubeConfig.from_file(api.kubeconfig))
    assert ns in [n.metadata.name for n in c.list(Namespace)]
    c.create(ConfigMap(metadata=ObjectMeta(name="from-lightkube", namespace=ns), data={"lang": "py"}))
    assert c.get(ConfigMap, "from-lightkube", namespace=ns).data == {"lang": "py"}
    assert [m.metadata.name for m in c.list(ConfigMap, namespace=ns)] == ["from-lightkube"]
    claim = c.create(ResourceClaim.from_dict(dict(CLAIM, metadata={"name": "lk-claim", "namespace": ns})))
    assert claim.spec.devices.requests[0].exactly.deviceClassName == "gpu.example.com"
    c.delete(ConfigMap, "from-lightkube", namespace=ns)
    with pytest.raises(ApiError) as e:
        c.get(ConfigMap, "from-lightkube", namespace=ns)
    assert e.value.status.code == 404 and e.value.status.reason == "NotFound"
    with pytest.raises(ApiError) as e:  # validation errors too
        c.create(ConfigMap(metadata=ObjectMeta(name="Bad_Name", namespace=ns)))
    assert e.value.status.code == 422


def test_kr8s(api: Server, ns: str):
    import kr8s
    from kr8s.objects import ConfigMap

    k = kr8s.api(kubeconfig=api.kubeconfig)
    assert ns in [n.name for n in k.get("namespaces")]
    cm = ConfigMap({"metadata": {"name": "from-kr8s", "namespace": ns}, "data": {"lang": "py"}}, api=k)
    cm.create()
    assert ConfigMap.get("from-kr8s", namespace=ns, api=k).raw["data"] == {"lang": "py"}
    claims = k.get("resourceclaims.resource.k8s.io", namespace=ns)
    assert list(claims) == []
    cm.delete()
    with pytest.raises(kr8s.NotFoundError):
        ConfigMap.get("from-kr8s", namespace=ns, api=k)


def test_client_node(api: Server, ns: str):
    if shutil.which("node") is None or not (NODE_DIR / "node_modules" / "@kubernetes" / "client-node").is_dir():
        pytest.fail("node and tests/clients/node/node_modules are installed by .ci/run "
                    "(apt-get install nodejs npm; npm ci in tests/clients/node)")
    res = subprocess.run(["node", "client.mjs", api.kubeconfig, ns], cwd=NODE_DIR, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert ns in out["namespaces"] and out["created"] == "from-node" and out["data"] == {"lang": "js"}
    assert out["claim"] == "node-claim" and out["error"] == 404
