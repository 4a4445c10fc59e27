"""How responsive the API server stays while it refuses hostile requests (issue 17).

    python bench/hostile.py [--repeat 20]

For each hostile request (the YAML alias bomb, 22 self-copying JSON-patch operations, deep nesting, NaN, a
3 MB body of 150,000 labels, created and replaced) it sends the request `--repeat` times while a second
client probes /readyz every 2 ms, and prints the request's own latency, its answer, and the probes' p50 / p99 /
max: how long
any other client waits while the hostile one is served. A bare aiohttp server answering the same probes
is the baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import aiohttp
from aiohttp import web

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from processes import free_port, wait_ready  # noqa: E402

CM = "/api/v1/namespaces/default/configmaps"
BOMB = "\n".join(
    [f'{name}: &{name} [{", ".join(["*" + prev] * 9 if prev else ["lol"] * 9)}]'
     for name, prev in zip("abcdefghi", ["", *"abcdefgh"], strict=True)]).encode()
COPIES = json.dumps([{"op": "add", "path": "/metadata/annotations", "value": {"a.example.com/x": "y" * 100}}] + [
    {"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/k{i}.example.com~1c"}
    for i in range(22)]).encode()
DEEP = b'{"metadata":{"name":"deep"},"data":' + b"[" * 5000 + b"]" * 5000 + b"}"
NAN = b'{"metadata":{"name":"nan"},"data":{"a":NaN}}'


def labels_body(n: int) -> bytes:
    return json.dumps({"metadata": {"name": f"labels-{time.monotonic_ns()}",
                                    "labels": {f"k{i}": "v" for i in range(n)}}}).encode()


def labels_update(n: int) -> bytes:
    return json.dumps({"metadata": {"name": "labels-put", "labels": {f"k{i}": "v" for i in range(n)},
                                    "annotations": {"trial": str(time.monotonic_ns())}}}).encode()


CASES = [
    ("yaml alias bomb", "POST", CM, lambda: BOMB, "application/yaml"),
    ("json-patch 22 self-copies", "PATCH", f"{CM}/target", lambda: COPIES, "application/json-patch+json"),
    ("json nested 5000 deep", "POST", CM, lambda: DEEP, "application/json"),
    ("NaN in a body", "POST", CM, lambda: NAN, "application/json"),
    ("150,000 labels (3 MB, valid)", "POST", CM, lambda: labels_body(150_000), "application/json"),
    ("PUT of 150,000 labels (valid)", "PUT", f"{CM}/labels-put", lambda: labels_update(150_000), "application/json"),
]


async def probe_while(session: aiohttp.ClientSession, url: str, busy: asyncio.Event) -> list[float]:
    lat = []
    while not busy.is_set():
        t = time.perf_counter()
        async with session.get(url + "/readyz") as r:
            await r.read()
        lat.append(time.perf_counter() - t)
        await asyncio.sleep(0.002)
    return lat


async def measure(url: str, repeat: int) -> None:
    async with aiohttp.ClientSession() as s:
        async with s.post(url + CM, json={"metadata": {"name": "target"}}) as r:
            await r.read()
        async with s.post(url + CM, data=labels_update(150_000), headers={"Content-Type": "application/json"}) as r:
            await r.read()
        print(f"{'request':32} {'answer':>6} {'req p50 ms':>10} {'readyz p50':>10} {'p99':>8} {'max ms':>8}")
        for name, method, path, body, ctype in CASES:
            took, probes, answers = [], [], set()
            for _ in range(repeat):
                payload = body()  # built before probing: this client's loop is the probes' loop too
                done = asyncio.Event()
                prober = asyncio.create_task(probe_while(s, url, done))
                await asyncio.sleep(0.01)
                t = time.perf_counter()
                async with s.request(method, url + path, data=payload, headers={"Content-Type": ctype}) as r:
                    await r.read()
                    answers.add(r.status)
                took.append(time.perf_counter() - t)
                done.set()
                probes += await prober
            probes.sort()
            p99 = probes[min(len(probes) - 1, int(len(probes) * 0.99))]
            print(f"{name:32} {','.join(map(str, sorted(answers))):>6} {statistics.median(took) * 1000:10.1f} "
                  f"{statistics.median(probes) * 1000:10.2f} {p99 * 1000:8.2f} {probes[-1] * 1000:8.2f}")


async def bare_baseline(repeat: int) -> None:
    app = web.Application()
    app.router.add_get("/readyz", lambda _r: web.Response(text="ok"))
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    async with aiohttp.ClientSession() as s:
        done = asyncio.Event()
        prober = asyncio.create_task(probe_while(s, f"http://127.0.0.1:{port}", done))
        await asyncio.sleep(0.2 * repeat / 10)
        done.set()
        probes = sorted(await prober)
    await runner.cleanup()
    p99 = probes[min(len(probes) - 1, int(len(probes) * 0.99))]
    print(f"{'bare aiohttp /readyz (baseline)':32} {'200':>6} {'':>10} {statistics.median(probes) * 1000:10.2f} "
          f"{p99 * 1000:8.2f} {probes[-1] * 1000:8.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    port = free_port()
    data = tempfile.mkdtemp(prefix="dramock-bench-hostile-")
    proc = subprocess.Popen([sys.executable, "-m", "dramock", "apiserver", "--port", str(port), "--secure-port", "0",
                             "--data-dir", data],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        asyncio.run(wait_ready(url))
        asyncio.run(measure(url, args.repeat))
        asyncio.run(bare_baseline(args.repeat))
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
