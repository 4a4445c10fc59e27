"""A write soak against one API server: is there a throughput cliff when history fills, does the WAL stay
bounded, does RSS flatten once history is full?

    python bench/soak.py [--minutes 10] [--interval 60] [--concurrency 8] [--keys 1000] [-- extra apiserver flags]

Starts `dramock apiserver` on a fresh SQLite data dir, creates --keys ConfigMaps, then patches them round-robin as
fast as --concurrency clients can, and prints per interval: writes/s, the WAL and database file sizes, the
server's RSS, and its revision.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time

import aiohttp
from processes import free_port, wait_ready  # bench/processes.py (this script's directory)

CM = "/api/v1/namespaces/default/configmaps"


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def size_mb(path: str) -> float:
    return os.path.getsize(path) / 1e6 if os.path.exists(path) else 0.0


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--interval", type=float, default=60)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--keys", type=int, default=1000)
    p.add_argument("extra", nargs="*", help="extra apiserver flags (after --)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        port, data = free_port(), os.path.join(tmp, "data")
        proc = subprocess.Popen([sys.executable, "-m", "dramock", "apiserver", "--port", str(port),
                                 "--secure-port", "0", "--data-dir", data,
                                 *args.extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        db = os.path.join(data, "dramock.db")
        try:
            await wait_ready(url)
            writes = 0
            revision = 0
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=args.concurrency)) as s:
                for i in range(args.keys):
                    async with s.post(url + CM, json={"metadata": {"name": f"soak-{i}"}, "data": {"n": "0"}}) as r:
                        assert r.status == 201, await r.text()
                end = time.monotonic() + args.minutes * 60
                counter = iter(range(10**12))

                async def writer() -> None:
                    nonlocal writes, revision
                    for i in counter:
                        if time.monotonic() >= end:
                            return
                        body = json.dumps({"data": {"n": str(i)}})
                        async with s.patch(f"{url}{CM}/soak-{i % args.keys}", data=body,
                                           headers={"Content-Type": "application/merge-patch+json"}) as r:
                            obj = await r.json()
                            assert r.status == 200, obj
                        writes += 1
                        revision = max(revision, int(obj["metadata"]["resourceVersion"]))

                tasks = [asyncio.create_task(writer()) for _ in range(args.concurrency)]
                print(f"{'minute':>7}{'writes/s':>10}{'revision':>10}{'WAL MB':>9}{'DB MB':>8}{'RSS MB':>8}",
                      flush=True)
                start, last_writes, last_t = time.monotonic(), 0, time.monotonic()
                while not all(t.done() for t in tasks):
                    await asyncio.wait(tasks, timeout=args.interval)
                    now = time.monotonic()
                    rate = (writes - last_writes) / (now - last_t)
                    last_writes, last_t = writes, now
                    print(f"{(now - start) / 60:>7.1f}{rate:>10.0f}{revision:>10}{size_mb(db + '-wal'):>9.1f}"
                          f"{size_mb(db):>8.1f}{rss_mb(proc.pid):>8.0f}", flush=True)
                for t in tasks:
                    t.result()
        finally:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    asyncio.run(main())
