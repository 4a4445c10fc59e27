"""Start-up time of the store over a long log: `python bench/storage_startup.py [--rows 200000]`.

Builds a SQLite log of `--rows` uncompacted rows (`--keys` objects, each updated many times, about 1 KB
each, some deleted and re-created) and times opening it, which loads the latest state and at most
`--history` events, never the whole log.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from dramock.storage.revlog import (  # noqa: E402
    DEFAULT_HISTORY,
    RevisionLog,
    _log,  # noqa: E402  (the bench writes rows directly: fast to build)
)


def build(url: str, rows: int, keys: int) -> None:
    store = RevisionLog(url, lambda o, r: None)
    store.close()
    batch, prev = [], {}
    filler = "x" * 900
    with store.engine.begin() as conn:
        for rid in range(1, rows + 1):
            name = f"ns/obj-{rid % keys}"
            deleted = rid % 97 == 0 and name in prev
            created = name not in prev
            obj = {"metadata": {"name": name, "resourceVersion": str(rid)}, "data": {"blob": filler, "i": rid}}
            batch.append({"id": rid, "bucket": "configmaps", "name": name, "created": created, "deleted": deleted,
                          "prev_revision": prev.get(name, 0), "value": json.dumps(obj)})
            if deleted:
                prev.pop(name)
                # remember the tombstone as the predecessor of the next create
                prev[name + "#t"] = rid
            else:
                prev[name] = rid
            if name + "#t" in prev and created:
                batch[-1]["prev_revision"] = prev.pop(name + "#t")
            if len(batch) == 5000:
                conn.execute(_log.insert(), batch)
                batch = []
        if batch:
            conn.execute(_log.insert(), batch)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--keys", type=int, default=2_000)
    ap.add_argument("--history", type=int, default=DEFAULT_HISTORY)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        url = f"sqlite:///{d}/bench.db"
        t0 = time.perf_counter()
        build(url, args.rows, args.keys)
        size = os.path.getsize(f"{d}/bench.db") + os.path.getsize(f"{d}/bench.db-wal")
        print(f"built {args.rows} rows over {args.keys} keys in {time.perf_counter() - t0:.1f}s "
              f"({size / 1e6:.0f} MB)")
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            store = RevisionLog(url, lambda o, r: None, history=args.history)
            times.append(time.perf_counter() - t0)
            live, rev = store.count("configmaps"), store.revision
            store.close()
        print(f"start-up with {args.rows} log rows (history {args.history}): best {min(times):.2f}s, "
              f"worst {max(times):.2f}s; {live} live objects, revision {rev}")


if __name__ == "__main__":
    main()
