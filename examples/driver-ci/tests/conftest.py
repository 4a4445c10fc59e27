"""The driver under test runs next to the dramock_cluster fixture's node, as its DaemonSet pod would."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]


def wait_for(predicate, timeout: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def slices(cluster) -> list[dict]:
    out = cluster.kubectl("get", "resourceslices", "--field-selector", "spec.driver=fpga.example.com", "-o", "json")
    return json.loads(out.stdout)["items"]


@pytest.fixture(scope="session")
def fpga_driver(dramock_cluster, tmp_path_factory):
    """The driver on node-1, registered and with its slice published; its DeviceClass installed."""
    dirs = dramock_cluster.node_dirs("node-1")
    log = open(tmp_path_factory.mktemp("fpga") / "driver.log", "w")
    proc = subprocess.Popen([sys.executable, str(HERE / "fpga_driver.py"), "--server", dramock_cluster.url,
                             "--node-name", "node-1", "--registry-dir", dirs.registration_dir,
                             "--plugins-dir", dirs.plugins_dir], stdout=log, stderr=subprocess.STDOUT)
    try:
        dramock_cluster.kubectl("apply", "-f", str(HERE / "deviceclass.yaml"))
        wait_for(lambda: slices(dramock_cluster), what="the driver's ResourceSlice")
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()
