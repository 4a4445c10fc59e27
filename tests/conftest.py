"""Shared fixtures: a real dramock server process on a free port with a real SQLite file."""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import Iterator

import pytest

from dramock.testing.server import (  # noqa: F401 - the suite imports these from here
    Server,
    free_port,
    spawn,
    stop_process,
    wait_for,
)
from dramock.testing.server import start_server as _start_server

pytest_plugins = ["pytester"]

KUBECTL = "/usr/bin/kubectl"


def start_server(tmp_dir: str, *extra: str, command: str = "apiserver") -> Server:
    return _start_server(tmp_dir, *extra, command=command, kubectl=KUBECTL)


def stop(server: Server) -> None:
    server.stop()


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
