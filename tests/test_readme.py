"""The README's quick start, as a new user runs it: its serve command, then its one `kubectl apply`, and the pod
is Running with an allocated GPU claim. The commands are read from the README itself, so editing them there is
what this test checks (the install step is the suite's own `pip install`; the port is a free one, passed to
both as the flags they already take)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import KUBECTL, free_port, spawn, stop_process, wait_for

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parent.parent


def quick_start_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    return [line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines()
            if line.split("#", 1)[0].strip()]


def test_readme_quick_start_gets_a_running_pod_with_a_gpu(tmp_path):
    commands = quick_start_commands()
    # The two commands of the README: install and serve; then one kubectl apply.
    install_and_serve = commands[0]
    assert install_and_serve == "python3 -m pip install . && python3 -m dramock serve", commands
    apply = [c for c in commands if c.startswith("kubectl apply")]
    assert apply == ["kubectl apply -f examples/quickstart/"], commands

    port = free_port()
    serve = shlex.split(install_and_serve.split("&&", 1)[1])
    assert serve[:3] == ["python3", "-m", "dramock"]
    server = spawn([sys.executable, *serve[1:], "--port", str(port), "--data-dir", str(tmp_path / "data")],
                   str(tmp_path / "serve.log"))
    url = f"http://127.0.0.1:{port}"

    def kubectl(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([KUBECTL, "-s", url, *args], cwd=ROOT, capture_output=True, text=True, check=check,
                              timeout=60)

    try:
        wait_for(lambda: kubectl("get", "--raw", "/readyz", check=False).returncode == 0, 30, what="serve ready")
        # The example needs the simulated nodes' GPUs; serve publishes them right after it starts.
        wait_for(lambda: len(json.loads(kubectl("get", "resourceslices", "-o", "json").stdout)["items"]) == 2, 30,
                 what="the example driver's ResourceSlices")
        kubectl(*shlex.split(apply[0])[1:])

        def running() -> dict | None:
            p = json.loads(kubectl("-n", "quickstart", "get", "pod", "gpu-pod", "-o", "json").stdout)
            return p if p["status"].get("phase") == "Running" else None

        pod = wait_for(running, 60, what="gpu-pod Running")
        claim = json.loads(kubectl("-n", "quickstart", "get", "resourceclaim", "single-gpu", "-o", "json").stdout)
        [result] = claim["status"]["allocation"]["devices"]["results"]
        assert (result["driver"], result["pool"]) == ("gpu.example.com", pod["spec"]["nodeName"])
        assert [r["name"] for r in claim["status"]["reservedFor"]] == ["gpu-pod"]
        # What the README says `kubectl get` shows.
        table = kubectl("-n", "quickstart", "get", "pods,resourceclaims").stdout
        assert re.search(r"pod/gpu-pod\s+1/1\s+Running", table), table
        assert re.search(r"resourceclaim\.resource\.k8s\.io/single-gpu\s+allocated,reserved", table), table
    finally:
        stop_process(server)
