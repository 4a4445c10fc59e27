"""A real PostgreSQL server for tests: initdb into a temporary directory, listening on a free local port.

Debian's `postgresql` package provides the binaries (.ci/run installs it). PostgreSQL refuses to run as
root, so under root the server runs as the package's `postgres` user.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import IO

import pytest

from tests.helpers import free_port


@dataclass
class Postgres:
    url: str  # SQLAlchemy URL for --database-url
    proc: subprocess.Popen
    data: str
    log: IO[str]

    def stop(self) -> None:
        # The server itself, not `runuser` around it (which does not pass signals on): its pid is the first
        # line of postmaster.pid. SIGINT is PostgreSQL's fast shutdown.
        pid = None
        with contextlib.suppress(OSError, ValueError):
            with open(os.path.join(self.data, "db", "postmaster.pid")) as f:
                pid = int(f.readline())
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.log.close()
        shutil.rmtree(self.data, ignore_errors=True)


def start_postgres() -> Postgres:
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not bins:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql; .ci/run does)")
    bindir = os.path.dirname(bins[-1])
    # Not under pytest's tmp_path: its parents are private to root, and the server may run as `postgres`.
    data = tempfile.mkdtemp(prefix="dramock-pg-")
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    pgdata = os.path.join(data, "db")
    subprocess.run([*as_user, f"{bindir}/initdb", "-D", pgdata, "-U", "dramock", "--auth=trust", "-E", "UTF8",
                    "--no-sync"], check=True, capture_output=True)
    port = free_port()
    log = open(os.path.join(data, "postgres.log"), "w")  # noqa: SIM115 - the server's lifetime
    proc = subprocess.Popen([*as_user, f"{bindir}/postgres", "-D", pgdata, "-p", str(port), "-k", data,
                             "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200",
                             "-c", "fsync=off"], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready = subprocess.run([f"{bindir}/pg_isready", "-h", "127.0.0.1", "-p", str(port)], capture_output=True)
        if ready.returncode == 0:
            return Postgres(f"postgresql+psycopg://dramock@127.0.0.1:{port}/postgres", proc, data, log)
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    pg = Postgres("", proc, data, log)
    with open(os.path.join(data, "postgres.log")) as f:
        text = f.read()
    pg.stop()
    raise RuntimeError(f"PostgreSQL did not start: {text[-2000:]}")
