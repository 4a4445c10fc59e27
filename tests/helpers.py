"""The test suite's helpers, in one place: starting and stopping servers and clusters, and the requests and
checks that several test modules share. Fixtures and the tier rule (unit or e2e) are in tests/conftest.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dramock.testing.server import (  # noqa: F401 - the suite imports these from here
    Server,
    free_port,
    spawn,
    stop_process,
    wait_for,
)
from dramock.testing.server import start_server as _start_server

KUBECTL = "/usr/bin/kubectl"
R = "/apis/resource.k8s.io/v1"
ROOT = Path(__file__).resolve().parents[1]  # the repository


def start_server(tmp_dir: str, *extra: str, command: str = "apiserver") -> Server:
    return _start_server(tmp_dir, *extra, command=command, kubectl=KUBECTL)


def stop(server: Server) -> None:
    server.stop()


# ---------------------------------------------------------------- a cluster with simulated nodes


@contextmanager
def node_cluster(prefix: str, *extra: str, nodes: int = 2, grace: float = 10.0) -> Iterator[Server]:
    """`dramock serve --nodes N` in a fresh short directory under /tmp (the simulated nodes keep their plugin
    sockets below it, and unix socket paths are short, so node-1's root is <data-dir>/nodes/node-1 as the READMEs
    say), handed over once every node is registered with the example driver's ResourceSlice and the gpu.example.com
    DeviceClass exists. Afterwards: SIGTERM, SIGKILL after `grace` seconds (a short one when nothing is left to
    check), and the directory goes."""
    tmp = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    try:
        s = start_server(tmp, "--nodes", str(nodes), *extra, command="serve")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        wait_for(lambda: len(s.request("GET", "/api/v1/nodes")[2].get("items", [])) == nodes, 30,
                 what=f"{nodes} nodes")
        wait_for(lambda: len(s.request("GET", f"{R}/resourceslices")[2].get("items", [])) == nodes, 30,
                 what="the example driver's slices on every node")
        wait_for(lambda: s.request("GET", f"{R}/deviceclasses/gpu.example.com")[0] == 200, 30,
                 what="the gpu.example.com DeviceClass")
        yield s
    finally:
        if s.proc.poll() is None:
            s.proc.terminate()
            try:
                s.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                s.proc.kill()
                s.proc.wait(timeout=10)
        stop_process(s.proc)  # closes its log
        shutil.rmtree(tmp, ignore_errors=True)


def kubectl(target: Server | str, *args: str, input: str | None = None, check: bool = True,
            timeout: float = 90) -> subprocess.CompletedProcess:
    """kubectl against a server (or a kubeconfig file), run from the repository root so that paths and messages are
    the READMEs' own; a failure fails the test unless check=False."""
    kubeconfig = target if isinstance(target, str) else target.kubeconfig
    res = subprocess.run([KUBECTL, "--kubeconfig", kubeconfig, *args], input=input, capture_output=True, text=True,
                         timeout=timeout, cwd=ROOT)
    if check and res.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    return res


# ------------------------------------------------ requests (to a Server, or anything with its request method)


def get(s: Any, path: str) -> dict | None:
    """The object at `path`, None when it is not there (404); any other answer but 200 fails the test."""
    code, _, body = s.request("GET", path)
    if code == 404:
        return None
    assert code == 200, (path, body)
    return body


def create(s: Any, path: str, obj: dict) -> dict:
    """POST `obj` to `path`; anything but 201 Created fails the test."""
    code, _, body = s.request("POST", path, obj)
    assert code == 201, (path, body)
    return body


def make_ns(s: Any, prefix: str = "test") -> str:
    """A new namespace named `<prefix>-<random>`."""
    name = f"{prefix}-" + uuid.uuid4().hex[:8]
    code, _, body = s.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    assert code == 201, body
    return name


def watch_lines(url: str, n: int, timeout: float = 20) -> list[dict]:
    """Read `n` events from a watch URL (the server must send them before `timeout`)."""
    out: list[dict] = []
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        for line in resp:
            out.append(json.loads(line))
            if len(out) >= n:
                break
    return out


def results(claim: dict) -> list[dict]:
    """A ResourceClaim's allocation results (empty while it is not allocated)."""
    return (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []


# ---------------------------------------------------------------- protobuf descriptors


def strip_json_names(messages) -> None:
    """protoc's Python generator leaves the default json_name out of descriptors: drop it to compare them."""
    for m in messages:
        for f in m.field:
            f.ClearField("json_name")
        strip_json_names(m.nested_type)
