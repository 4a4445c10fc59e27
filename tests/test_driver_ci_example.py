"""examples/driver-ci: its CI script (what its workflow runs) passes: the driver's pytest suite with the dramock
plugin and fault rules, then `dramock check-driver` with every check passing, a driver restart included."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.helpers import KUBECTL, free_port

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "driver-ci"


def test_workflow_runs_the_ci_script():
    workflow = (EXAMPLE / ".github" / "workflows" / "driver-ci.yml").read_text()
    assert "./examples/driver-ci/ci.sh" in workflow


@pytest.mark.e2e
def test_ci_script_passes(tmp_path):
    env = dict(os.environ, PORT=str(free_port()), OUT=str(tmp_path), PYTHON=sys.executable,
               PATH=f"{os.path.dirname(KUBECTL)}:{os.path.dirname(sys.executable)}:{os.environ['PATH']}")
    res = subprocess.run(["bash", str(EXAMPLE / "ci.sh")], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    pytest_suite = ET.parse(tmp_path / "pytest.xml").getroot().find("testsuite")
    assert pytest_suite.get("failures") == "0" and int(pytest_suite.get("tests")) >= 4
    checks = ET.parse(tmp_path / "check-driver.xml").getroot().find("testsuite")
    assert (checks.get("failures"), checks.get("skipped"), checks.get("tests")) == ("0", "0", "9"), res.stdout
    assert "driver-restart      PASS" in res.stdout
