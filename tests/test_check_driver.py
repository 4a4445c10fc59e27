"""`dramock check-driver` against real drivers in their own processes: the example driver (every check passes,
including a driver restart through a supervisor) and the third-party test driver, whole and with a bug."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.helpers import spawn, start_server, stop, stop_process, wait_for

THIRDPARTY = str(Path(__file__).parent / "fixtures" / "thirdparty_driver.py")


def node_dirs(s, node: str = "node-1") -> tuple[str, str]:
    def announced():
        code, _, obj = s.request("GET", f"/api/v1/nodes/{node}")
        ann = obj.get("metadata", {}).get("annotations") or {} if code == 200 else {}
        return ann if "dramock.io/plugins-registry-dir" in ann else None
    ann = wait_for(announced, 30, what="the node's kubelet shim")
    return ann["dramock.io/plugins-registry-dir"], ann["dramock.io/plugins-dir"]


def check_driver(s, driver: str, tmp_path, *extra: str) -> tuple[int, str, dict[str, tuple[str, str]]]:
    """(exit code, output, {check: (PASS|FAIL|SKIP, detail)}) from the JUnit XML it writes."""
    junit = tmp_path / f"{driver}-junit.xml"
    res = subprocess.run([sys.executable, "-m", "dramock", "check-driver", "--driver", driver, "--server", s.url,
                          "--node", "node-1", "--timeout", "30", "--junit-xml", str(junit), *extra],
                         capture_output=True, text=True, timeout=300)
    results = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        failure, skipped = case.find("failure"), case.find("skipped")
        if failure is not None:
            results[case.get("name")] = ("FAIL", failure.get("message"))
        elif skipped is not None:
            results[case.get("name")] = ("SKIP", skipped.get("message"))
        else:
            results[case.get("name")] = ("PASS", "")
    return res.returncode, res.stdout + res.stderr, results


@pytest.fixture
def cluster(tmp_path, starts_processes):
    s = start_server(str(tmp_path), "--nodes", "1", "--no-example-driver", command="serve")
    yield s
    stop(s)


def test_example_driver_passes_every_check(cluster, tmp_path):
    registry, plugins = node_dirs(cluster)
    pidfile, stopfile = tmp_path / "driver.pid", tmp_path / "stop"
    driver = (f"{sys.executable} -m dramock example-driver --server {cluster.url} --node-name node-1 "
              f"--plugins-registry-dir {registry} --plugins-dir {plugins} --cdi-dir {tmp_path / 'cdi'}")
    # A supervisor, as a DaemonSet's kubelet is one: the driver comes back after it was killed.
    loop = f'while [ ! -e {stopfile} ]; do {driver} & echo $! > {pidfile}; wait $!; done'
    supervisor = spawn(["sh", "-c", loop], str(tmp_path / "driver.log"))
    try:
        code, out, results = check_driver(cluster, "gpu.example.com", tmp_path,
                                          "--driver-restart-command", f"kill $(cat {pidfile})")
        assert code == 0, out
        assert set(results) == {"registration", "slices", "pod-running", "prepare", "prepare-idempotent",
                                "status-devices", "kubelet-restart", "driver-restart", "unprepare"}, out
        assert all(status == "PASS" for status, _ in results.values()), out
        assert "gpu.example.com/gpu=gpu-0" in out and "0 failed" in out
        assert "PASS" in out.splitlines()[1]  # the table
    finally:
        stopfile.touch()
        if pidfile.exists():
            subprocess.run(["kill", pidfile.read_text().strip()], check=False)
        stop_process(supervisor)


@pytest.mark.parametrize("broken", [False, True], ids=["whole", "empty-cdi-ids"])
def test_thirdparty_driver(cluster, tmp_path, broken):
    registry, plugins = node_dirs(cluster)
    env = dict(os.environ, THIRDPARTY_EMPTY_CDI_IDS="1" if broken else "0")
    proc = subprocess.Popen([sys.executable, THIRDPARTY, "--driver", "thirdparty.example.com",
                             "--registry-dir", registry, "--plugins-dir", plugins, "--log", str(tmp_path / "calls"),
                             "--server", cluster.url, "--node-name", "node-1"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        code, out, results = check_driver(cluster, "thirdparty.example.com", tmp_path)
        failed = {name: detail for name, (status, detail) in results.items() if status == "FAIL"}
        assert results["driver-restart"][0] == "SKIP"  # no restart command given
        if not broken:
            assert code == 0 and failed == {}, out
            return
        assert code == 1, out
        assert list(failed) == ["prepare"], out
        assert "empty CDI device ID list" in failed["prepare"] and "pool node-1" not in failed["prepare"]
        assert results["prepare-idempotent"][0] == "PASS"
    finally:
        stop_process(proc)


def test_cdi_ids_table_and_junit():
    from dramock.kubelet.checkdriver import CDI_ID, FAIL, PASS, SKIP, Result, junit_xml, table

    for good in ("gpu.example.com/gpu=gpu-0", "nvidia.com/gpu=0", "a/b=c", "vendor.io/class=dev:1.2"):
        assert CDI_ID.match(good), good
    for bad in ("", "gpu-0", "gpu.example.com/gpu", "/gpu=0", "example.com/=0", "example.com/gpu=", "a b/c=d"):
        assert not CDI_ID.match(bad), bad
    results = [Result("registration", PASS, "v1.DRAPlugin"), Result("prepare", FAIL, 'device "x": <empty>'),
               Result("driver-restart", SKIP, "no command")]
    lines = table(results).splitlines()
    assert lines[0].split() == ["CHECK", "RESULT", "DETAIL"] and lines[2].split()[:2] == ["prepare", "FAIL"]
    suite = ET.fromstring(junit_xml(results, "d.example.com")).find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    assert suite.findall("testcase")[1].find("failure").get("message") == 'device "x": <empty>'
