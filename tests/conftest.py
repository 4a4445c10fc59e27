"""Shared fixtures (a real dramock server process on a free port with a real SQLite file) and the test tiers.

The tiers: a test is end-to-end (marker `e2e`) when it starts processes (a dramock server or its components,
kubectl, helm, a browser, PostgreSQL, node) or talks to one that a fixture started; every other test is the unit
tier, which `pytest -m "not e2e"` runs on its own in seconds. A test is e2e when it uses one of
`PROCESS_FIXTURES`, directly or through other fixtures (every fixture that starts processes requests
`starts_processes`), or when it or its module is marked so. A unit test that starts a process anyway fails,
naming the process (`_refuse_processes`). Helpers are in tests/helpers.py.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from collections.abc import Iterator

import pytest

from tests.helpers import (  # noqa: F401 - older `from tests.conftest import ...` lines keep working
    KUBECTL,
    Server,
    free_port,
    spawn,
    start_server,
    stop,
    stop_process,
    wait_for,
)

pytest_plugins = ["pytester"]

# Fixtures that make a test end-to-end: the marker fixture below, the pytest plugin's cluster, and pytester (its
# runs start the plugin's cluster).
PROCESS_FIXTURES = frozenset({"starts_processes", "dramock_cluster", "dramock_namespace", "pytester"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("e2e") is None and PROCESS_FIXTURES.intersection(item.fixturenames):
            item.add_marker(pytest.mark.e2e)


# What starting a process looks like to sys.addaudithook (asyncio's subprocesses go through subprocess.Popen).
_PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.posix_spawn", "os.exec", "os.spawn", "os.fork",
                             "os.forkpty"})
_unit_test: list[str] = []  # the node id of the unit test being set up or run, if one is


def _refuse_processes(event: str, args: tuple) -> None:
    if _unit_test and event in _PROCESS_EVENTS:
        argv = args[1] if event == "subprocess.Popen" else args[:1]
        what = " ".join(map(str, argv)) if isinstance(argv, (list, tuple)) else str(argv)
        raise RuntimeError(f"{_unit_test[0]} is in the unit tier but starts a process ({event}: {what[:200]}): "
                           "mark it e2e (see tests/conftest.py)")


sys.addaudithook(_refuse_processes)


def _guarded(item: pytest.Item):
    """Set-up and call of a unit test run with _refuse_processes on (teardown may end other tests' fixtures)."""
    unit = item.get_closest_marker("e2e") is None
    if unit:
        _unit_test.append(item.nodeid)
    try:
        return (yield)
    finally:
        if unit:
            _unit_test.clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    return (yield from _guarded(item))


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
def starts_processes() -> None:
    """Requested by every fixture that starts processes, so that the tests using one are marked e2e."""


@pytest.fixture(scope="session")
def server(tmp_path_factory, starts_processes) -> Iterator[Server]:
    """One server shared by tests that only add their own uniquely named objects."""
    s = start_server(str(tmp_path_factory.mktemp("dramock")))
    yield s
    stop(s)


@pytest.fixture
def fresh_server(tmp_path, starts_processes) -> Iterator[Server]:
    """A server of the test's own (for restarts, kills and revision arithmetic)."""
    s = start_server(str(tmp_path))
    yield s
    stop(s)
