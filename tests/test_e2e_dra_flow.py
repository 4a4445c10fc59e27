"""The whole DRA flow a newcomer sees with `dramock serve` and kubectl: the docs page's pod-with-cats
(two claims from one template) is scheduled, its claims allocated and reserved, the example driver
prepares the devices (CDI spec files), the pod runs; deleting it unprepares and frees the devices."""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import pytest

from tests.helpers import node_cluster, wait_for

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "pod-with-cats" / "pod-with-cats.yaml"


@pytest.fixture
def cluster(starts_processes):
    with node_cluster("dramock-e2e-") as s:
        yield s


def _claims(s) -> list[dict]:
    return json.loads(s.kubectl("get", "resourceclaims", "-o", "json").stdout)["items"]


def _cdi_files(s) -> list[str]:
    return sorted(glob.glob(os.path.join(s.data_dir, "nodes", "*", "cdi", "*.json")))


def test_pod_with_cats_runs_and_releases_its_devices(cluster):
    s = cluster
    s.kubectl("apply", "-f", str(EXAMPLE))
    s.kubectl("wait", "--for=jsonpath={.status.phase}=Running", "pod/pod-with-cats", "--timeout=60s")
    pod = json.loads(s.kubectl("get", "pod", "pod-with-cats", "-o", "json").stdout)
    node = pod["spec"]["nodeName"]
    claims = _claims(s)
    assert sorted(c["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] for c in claims) == \
        ["cat-0", "cat-1"]
    devices = set()
    for c in claims:
        result = c["status"]["allocation"]["devices"]["results"][0]
        assert (result["driver"], result["pool"]) == ("gpu.example.com", node)
        assert [r["uid"] for r in c["status"]["reservedFor"]] == [pod["metadata"]["uid"]]
        assert "resource.kubernetes.io/delete-protection" in c["metadata"]["finalizers"]
        devices.add(result["device"])
    assert len(devices) == 2
    files = _cdi_files(s)
    assert [os.path.basename(f) for f in files] == sorted(
        f"gpu.example.com-{c['metadata']['uid']}.json" for c in claims)
    spec = json.loads(Path(files[0]).read_text())
    assert spec["cdiVersion"] and spec["kind"] == "gpu.example.com/gpu"
    assert "CDI devices gpu.example.com/gpu=" in s.kubectl("describe", "pod", "pod-with-cats").stdout

    s.kubectl("delete", "pod", "pod-with-cats", "--timeout=60s")
    wait_for(lambda: not _claims(s), 30, what="the generated claims to be gone")
    wait_for(lambda: not _cdi_files(s), 30, what="NodeUnprepareResources to remove the CDI files")

    # The devices are free: the same pod again gets two devices on a node.
    s.kubectl("apply", "-f", str(EXAMPLE))
    s.kubectl("wait", "--for=jsonpath={.status.phase}=Running", "pod/pod-with-cats", "--timeout=60s")
    assert len(_claims(s)) == 2


def test_serve_metrics_include_the_claim_controller(cluster):
    import urllib.request

    cluster.kubectl("apply", "-f", str(EXAMPLE))
    cluster.kubectl("wait", "--for=jsonpath={.status.phase}=Running", "pod/pod-with-cats", "--timeout=60s")

    def claims_metric():
        with urllib.request.urlopen(cluster.url + "/metrics") as r:
            text = r.read().decode()
        return ('dynamic_resource_allocation_resource_claims{admin_access="false",allocated="true",'
                'source="resource_claim_template"} 2.0') in text

    wait_for(claims_metric, 30, what="the claim controller's gauge to count two allocated template claims")
