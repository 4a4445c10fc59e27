"""Shared fixtures: a real dramock server process on a free port with a real SQLite file."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

KUBECTL = "/usr/bin/kubectl"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str
    port: int
    data_dir: str
    kubeconfig: str
    proc: subprocess.Popen
    args: list[str]

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 60) -> subprocess.CompletedProcess:
        # A discovery cache of this server's own: another server that once listened on the same port (with other
        # versions served) must not answer for this one.
        res = subprocess.run([KUBECTL, "--kubeconfig", self.kubeconfig, "--cache-dir", self.data_dir + "-kubectl-cache",
                              *args], input=input, capture_output=True, text=True, timeout=timeout)
        if check and res.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
        return res

    def request(self, method: str, path: str, body=None, content_type: str = "application/json",
                headers: dict | None = None) -> tuple[int, dict, dict]:
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


def _spawn(args: list[str], url: str) -> subprocess.Popen:
    # The log goes to a file beside the data dir: a pipe nobody reads would block a chatty server.
    log_path = args[args.index("--data-dir") + 1] + ".log"
    proc = spawn(args, log_path)
    deadline = time.monotonic() + 30
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
    raise RuntimeError("dramock did not become ready in 30s")


def start_server(tmp_dir: str, *extra: str, command: str = "apiserver") -> Server:
    port = free_port()
    data_dir = os.path.join(tmp_dir, "data")
    # DRAMOCK_SERVER_CMD runs the suite against another launcher (an installed binary, a wrapper).
    launcher = os.environ.get("DRAMOCK_SERVER_CMD", f"{sys.executable} -m dramock").split()
    args = [*launcher, command, "--port", str(port), "--data-dir", data_dir, *extra]
    url = f"http://127.0.0.1:{port}"
    proc = _spawn(args, url)
    kubeconfig = os.path.join(tmp_dir, "kubeconfig")
    try:
        with open(kubeconfig, "w") as f:
            f.write(subprocess.run([sys.executable, "-m", "dramock", "kubeconfig", "--server", url],
                                   capture_output=True, text=True, check=True).stdout)
    except BaseException:
        stop_process(proc)
        raise
    return Server(url, port, data_dir, kubeconfig, proc, args)


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


def stop(server: Server) -> None:
    stop_process(server.proc)


def _descendants(pid: int) -> list[int]:
    """Every live process below `pid`, read from /proc (children first found, grandchildren after)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def pytest_configure(config: pytest.Config) -> None:
    # kubectl run directly by tests caches discovery per session, never in the user's ~/.kube/cache.
    os.environ.setdefault("KUBECACHEDIR", tempfile.mkdtemp(prefix="dramock-kubectl-cache-"))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The last line of defence behind every fixture's own cleanup: whatever the suite started and left
    running (a fixture that failed half-way, a test killed by its timeout) is killed when the session ends."""
    if not os.path.isdir("/proc"):
        return
    leftovers = [pid for pid in _descendants(os.getpid()) if _alive(pid)]
    for pid in leftovers:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if leftovers and reporter is not None:
        reporter.write_line(f"killed {len(leftovers)} process(es) left running by the test session", red=True)


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="session")
def server(tmp_path_factory) -> Iterator[Server]:
    """One server shared by tests that only add their own uniquely named objects."""
    s = start_server(str(tmp_path_factory.mktemp("dramock")))
    yield s
    stop(s)


@pytest.fixture
def fresh_server(tmp_path) -> Iterator[Server]:
    """A server of the test's own (for restarts, kills and revision arithmetic)."""
    s = start_server(str(tmp_path))
    yield s
    stop(s)


def wait_for(predicate, timeout: float = 20.0, interval: float = 0.05, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
