"""The store under a real API server process: kill -9 past the history limit, database errors as Status."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from tests.helpers import start_server, stop, wait_for

pytestmark = pytest.mark.e2e

CM = "/api/v1/namespaces/default/configmaps"


def test_kill9_cycles_past_the_history_limit_restart_every_time(tmp_path):
    # A history of 40 events and compaction every 0.2 s: each cycle writes several times the limit, so every
    # restart loads a log that was compacted (or half-compacted when the kill came) behind the history.
    s = start_server(str(tmp_path), "--watch-history-limit", "40", "--etcd-compaction-interval", "0.2")
    acked: dict[str, tuple[int, int]] = {}  # key -> (n, resourceVersion) of its last acknowledged write
    highest = 0
    try:
        n = 0
        for cycle in range(6):
            stopping = threading.Event()
            written = [0]

            def writer(stopping=stopping, written=written):
                nonlocal n
                while not stopping.is_set():
                    key = f"cm-{n % 15}"
                    try:
                        if key in acked:
                            code, _, body = s.request("PUT", f"{CM}/{key}", {
                                "metadata": {"name": key}, "data": {"n": str(n)}})
                        else:
                            code, _, body = s.request("POST", CM, {"metadata": {"name": key}, "data": {"n": str(n)}})
                    except OSError:
                        return
                    if code in (200, 201):
                        acked[key] = (n, int(body["metadata"]["resourceVersion"]))
                        written[0] += 1
                    n += 1

            t = threading.Thread(target=writer)
            t.start()
            wait_for(lambda written=written: written[0] >= 120, what=f"120 acknowledged writes in cycle {cycle}")
            s.kill9()
            stopping.set()
            t.join(10)
            s.restart()  # raises if the server exits or is not ready in 30 s
            code, _, body = s.request("GET", CM)
            assert code == 200
            stored = {i["metadata"]["name"]: (int(i["data"]["n"]), int(i["metadata"]["resourceVersion"]))
                      for i in body["items"]}
            for key, (value, rv) in acked.items():
                # The write in flight at the kill may have committed: never older than acknowledged.
                assert stored[key][0] >= value and stored[key][1] >= rv, (cycle, key)
            top = max(rv for _, rv in acked.values())
            assert top > highest
            highest = top
            assert int(body["metadata"]["resourceVersion"]) >= highest
    finally:
        stop(s)


def test_database_errors_reach_the_client_as_status_without_sql(tmp_path):
    s = start_server(str(tmp_path))
    try:
        assert s.request("POST", CM, {"metadata": {"name": "before"}})[0] == 201
        db = sqlite3.connect(f"{s.data_dir}/dramock.db")
        db.execute("DROP TABLE revlog")
        db.commit()
        db.close()
        code, _, body = s.request("POST", CM, {"metadata": {"name": "after"}})
        assert (code, body["kind"], body["reason"]) == (500, "Status", "InternalError")
        assert body["message"].startswith("Internal error occurred: ")
        for leak in ("INSERT", "revlog", "sqlite", "SQL"):
            assert leak not in body["message"]
        assert s.request("GET", f"{CM}/after")[0] == 404
        with open(s.data_dir + ".log") as f:
            assert "no such table" in f.read()  # the detail is in the log
    finally:
        stop(s)
