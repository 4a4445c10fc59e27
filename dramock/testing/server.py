"""A real `dramock` server process on a free port with a fresh data dir: started, waited for, stopped."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

READY_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def default_kubectl() -> str:
    """$DRAMOCK_KUBECTL, else the kubectl on PATH (empty when there is none)."""
    return os.environ.get("DRAMOCK_KUBECTL") or shutil.which("kubectl") or ""


def wait_for(predicate, timeout: float = 20.0, interval: float = 0.05, what: str = "condition"):
    """Poll `predicate` until it returns something truthy (returned) or `timeout` passes (AssertionError)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def spawn(args: list[str], log_path: str) -> subprocess.Popen:
    """A component process whose output goes to `log_path` (closed by stop_process)."""
    log = open(log_path, "w")  # noqa: SIM115 - closed in stop_process
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, text=True)
    proc._log = log  # type: ignore[attr-defined]
    return proc


def stop_process(proc: subprocess.Popen) -> str:
    """SIGTERM, then SIGKILL after 10 s; returns what it wrote to a stderr pipe, if it had one."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    log = getattr(proc, "_log", None)
    if log is not None:
        log.close()
    return proc.stderr.read() if proc.stderr else ""


@dataclass
class Server:
    """A running dramock process. Its log is `log_path` (`<data_dir>.log`)."""

    url: str
    port: int
    data_dir: str
    kubeconfig: str
    proc: subprocess.Popen
    args: list[str]
    kubectl_path: str = ""

    @property
    def log_path(self) -> str:
        return self.data_dir + ".log"

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 60) -> subprocess.CompletedProcess:
        kubectl = self.kubectl_path or default_kubectl()
        if not kubectl:
            raise RuntimeError("no kubectl found: put one on PATH or name it in $DRAMOCK_KUBECTL")
        # A discovery cache of this server's own: another server that once listened on the same port (with other
        # versions served) must not answer for this one.
        res = subprocess.run([kubectl, "--kubeconfig", self.kubeconfig, "--cache-dir", self.data_dir + "-kubectl-cache",
                              *args], input=input, capture_output=True, text=True, timeout=timeout)
        if check and res.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
        return res

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
                headers: dict | None = None) -> tuple[int, dict, dict]:
        """(HTTP code, headers, JSON body) of one request; error answers are returned, not raised."""
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": content_type, **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
                return resp.status, dict(resp.headers), json.loads(raw) if raw else {}
        except urllib.error.HTTPError as e:
            raw = e.read()
            return e.code, dict(e.headers), json.loads(raw) if raw else {}

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        stop_process(self.proc)

    def restart(self) -> None:
        self.proc = _spawn(self.args, self.url)

    def stop(self) -> None:
        stop_process(self.proc)


def _spawn(args: list[str], url: str) -> subprocess.Popen:
    # The log goes to a file beside the data dir: a pipe nobody reads would block a chatty server.
    log_path = args[args.index("--data-dir") + 1] + ".log"
    proc = spawn(args, log_path)
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            with open(log_path) as f:
                raise RuntimeError(f"dramock exited with {proc.returncode}: {f.read()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=1) as r:
                if r.status == 200:
                    return proc
        except OSError:
            pass
        time.sleep(0.05)
    stop_process(proc)
    raise RuntimeError(f"dramock did not become ready in {READY_TIMEOUT:.0f}s")


def start_server(tmp_dir: str, *extra: str, command: str = "apiserver", kubectl: str = "") -> Server:
    """Start `dramock COMMAND` with its data in `<tmp_dir>/data` and wait until /readyz answers.

    $DRAMOCK_SERVER_CMD runs another launcher (an installed binary, a wrapper) instead of this Python's."""
    from dramock.cli import kubeconfig_text

    port = free_port()
    data_dir = os.path.join(tmp_dir, "data")
    launcher = os.environ.get("DRAMOCK_SERVER_CMD", f"{sys.executable} -m dramock").split()
    # Several servers run at once in a test session: none binds the secure port unless the caller names one.
    secure = [] if "--secure-port" in extra else ["--secure-port", "0"]
    args = [*launcher, command, "--port", str(port), "--data-dir", data_dir, *secure, *extra]
    url = f"http://127.0.0.1:{port}"
    proc = _spawn(args, url)
    kubeconfig = os.path.join(tmp_dir, "kubeconfig")
    try:
        with open(kubeconfig, "w") as f:
            f.write(kubeconfig_text(url))
    except BaseException:
        stop_process(proc)
        raise
    return Server(url, port, data_dir, kubeconfig, proc, args, kubectl)
