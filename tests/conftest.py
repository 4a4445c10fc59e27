"""Shared fixtures: a real dramock server process on a free port with a real SQLite file."""

from __future__ import annotations

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
