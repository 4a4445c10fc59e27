"""API server throughput and latency for ResourceClaims, beside a bare aiohttp baseline in the same run.

    python bench/apiserver.py [--requests 2000] [--concurrency 16] [--watchers 50]
    python bench/apiserver.py --ops list --list-requests 2000     # one operation only (reads are seeded)
    python bench/apiserver.py --replicas 2 --database-url postgresql+psycopg://user@host:5432/db

Both servers run as separate processes on loopback, measured interleaved: each operation's load is cut in
--slices parts and the servers take turns part by part, so that the baseline and dramock meet the same machine
(a shared machine's speed drifts by tens of percent from one minute to the next). The baseline is an aiohttp
handler that answers the same JSON bodies without any API machinery (no decoding, validation, storage or
selectors), so the ratio is the cost of being a real API server. By default (`--baseline same-fields`) it pastes
into each object the fields every real API server adds (namespace, uid, creationTimestamp and a fixed
managedFields entry), so that both servers hand the bench's client objects of the same shape and size: this
client, not the servers, paces the watch fan-out, and parsing the bigger events of a real server was most of
that gap (callgrind: 143k client instructions per dramock event, 116k per echoed event, 144k per same-fields
one).
`--baseline echo` answers with the request's object as it came (the figures before 2026-11-28).

Watch fan-out: W watchers stream a collection; each write is timed until every watcher has received its
event. dramock is measured twice: speaking JSON, and speaking
Kubernetes protobuf both ways (protobuf bodies, `Accept: application/vnd.kubernetes.protobuf`, watch
streams of length-prefixed frames), as client-go components do.

With --database-url, it measures scale-out instead: write and read throughput of one API server on that database
and of --replicas API servers on it, the requests spread round-robin over them, side by side.
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
from processes import free_port, wait_ready  # bench/processes.py (this script's directory)

from dramock.apiserver import protobuf
from dramock.apiserver.pb.k8s.io.api.resource.v1 import generated_pb2 as resource_v1
from dramock.apiserver.pb.k8s.io.apimachinery.pkg.apis.meta.v1 import generated_pb2 as meta_v1
from dramock.apiserver.pb.k8s.io.apimachinery.pkg.runtime import generated_pb2 as runtime_pb

PB = protobuf.MEDIA_TYPE
JSON_HEADERS = {"Content-Type": "application/json"}
PB_HEADERS = {"Content-Type": PB, "Accept": PB}
NS_PATH = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
OPS = ("create", "get", "list", "watch")


def claim(name: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "labels": {"bench": "yes"}},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}}]}}}


# ---------------------------------------------------------------- the bare baseline server

BASELINE = r'''
import asyncio, json, sys, time, uuid
from aiohttp import web
port = int(sys.argv[1])
same_fields = sys.argv[2] == "same-fields"
# What the bench's claims' managedFields hold (the fields they set); pasted, not computed.
FIELDS = {"f:metadata": {"f:labels": {".": {}, "f:bench": {}}}, "f:spec": {"f:devices": {"f:requests": {}}}}
stored = {}
queues = set()
rv = [0]
async def collection(request):
    if request.method == "POST":
        obj = json.loads(await request.read())
        rv[0] += 1
        meta = obj["metadata"]
        if same_fields:
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            meta.update({"namespace": "default", "uid": str(uuid.uuid4()), "creationTimestamp": now,
                         "managedFields": [{"manager": "Python", "operation": "Update",
                                            "apiVersion": obj["apiVersion"], "time": now,
                                            "fieldsType": "FieldsV1", "fieldsV1": FIELDS}]})
        meta["resourceVersion"] = str(rv[0])
        stored[obj["metadata"]["name"]] = obj
        line = (json.dumps({"type": "ADDED", "object": obj}) + "\n").encode()
        for q in queues:
            q.put_nowait(line)
        return web.json_response(obj, status=201)
    if request.query.get("watch"):
        resp = web.StreamResponse()
        await resp.prepare(request)
        q = asyncio.Queue()
        queues.add(q)
        try:
            while True:
                await resp.write(await q.get())
        finally:
            queues.discard(q)
    limit = int(request.query.get("limit", "0") or 0)
    items = list(stored.values())[: limit or None]
    return web.json_response({"kind": "ResourceClaimList", "apiVersion": "resource.k8s.io/v1",
                              "metadata": {"resourceVersion": str(rv[0])}, "items": items})
async def item(request):
    obj = stored.get(request.match_info["name"])
    if obj is None:
        return web.json_response({"kind": "Status", "code": 404}, status=404)
    return web.json_response(obj)
async def ready(request):
    return web.Response(text="ok")
app = web.Application()
app.router.add_route("*", "''' + NS_PATH + r'''", collection)
app.router.add_get("''' + NS_PATH + r'''/{name}", item)
app.router.add_get("/readyz", ready)
web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)
'''


# ---------------------------------------------------------------- load

def _summary(part: dict) -> dict:
    return summarize(part["latencies"], part["elapsed"])


def summarize(latencies: list[float], elapsed: float) -> dict:
    latencies.sort()
    n = len(latencies)
    return {"n": n, "ops": n / elapsed, "p50": latencies[n // 2] * 1000,
            "p99": latencies[min(n - 1, int(n * 0.99))] * 1000}


async def run_requests(url: str | list[str], make, n: int, concurrency: int,
                       headers: dict[str, str] | None = None, first: int = 0) -> dict:
    """Issue requests make(first) .. make(first + n - 1), each -> (method, path, body), with `concurrency` in
    flight (spread round-robin when given several server URLs). A part: latencies, elapsed and n."""
    urls = [url] if isinstance(url, str) else url
    headers = headers or JSON_HEADERS
    latencies: list[float] = []
    counter = iter(range(first, first + n))
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as s:
        async def worker():
            for i in counter:
                method, path, body = make(i)
                t = time.perf_counter()
                async with s.request(method, urls[i % len(urls)] + path, data=body, headers=headers) as r:
                    await r.read()
                    if r.status >= 300:
                        raise RuntimeError(f"{method} {path}: {r.status} {await r.text()}")
                latencies.append(time.perf_counter() - t)
        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return {"latencies": latencies, "elapsed": time.perf_counter() - start, "n": len(latencies)}


def _frames(pb: bool):
    """A watch stream reader yielding each event's object name: JSON lines, or protobuf frames."""
    async def names(r: aiohttp.ClientResponse):
        if not pb:
            async for line in r.content:
                yield json.loads(line)["object"]["metadata"]["name"]
            return
        while True:
            size = int.from_bytes(await r.content.readexactly(4), "big")
            event = meta_v1.WatchEvent.FromString(await r.content.readexactly(size))
            envelope = runtime_pb.Unknown.FromString(event.object.raw[len(protobuf.MAGIC):])
            yield resource_v1.ResourceClaim.FromString(envelope.raw).metadata.name
    return names


async def watch_fanout(url: str, watchers: int, writes: int, prefix: str, pb: bool) -> dict:
    """Time from each write until all watchers have its event. A part: those latencies, elapsed and n, the
    events delivered."""
    received: dict[str, int] = {}
    done: dict[str, asyncio.Event] = {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=watchers + 4),
                                     timeout=aiohttp.ClientTimeout(total=None)) as s:
        async with s.get(url + NS_PATH) as r:
            rv = (await r.json())["metadata"]["resourceVersion"]
        started = asyncio.Semaphore(0)

        async def watch():
            accept = {"Accept": PB + ";stream=watch"} if pb else {}
            async with s.get(url + NS_PATH, params={"watch": "1", "resourceVersion": rv}, headers=accept) as r:
                started.release()
                async for name in _frames(pb)(r):
                    if name in done:
                        received[name] += 1
                        if received[name] == watchers:
                            done[name].set()

        tasks = [asyncio.create_task(watch()) for _ in range(watchers)]
        for _ in range(watchers):
            await started.acquire()
        latencies = []
        start = time.perf_counter()
        for i in range(writes):
            name = f"{prefix}-{i}"
            received[name] = 0
            done[name] = asyncio.Event()
            t = time.perf_counter()
            async with s.post(url + NS_PATH, data=encode(claim(name), pb),
                              headers=PB_HEADERS if pb else JSON_HEADERS) as r:
                await r.read()
            await asyncio.wait_for(done[name].wait(), 30)
            latencies.append(time.perf_counter() - t)
        elapsed = time.perf_counter() - start
        for t in tasks:
            t.cancel()
        return {"latencies": latencies, "elapsed": elapsed, "n": writes * watchers}  # n: events delivered


def encode(obj: dict, pb: bool) -> bytes:
    return protobuf.encode(obj) if pb else json.dumps(obj).encode()


def process_cpu(pid: int | None) -> float:
    """CPU seconds (user + system) a process has used so far, from /proc; 0 where that is not available."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _op_names(args: argparse.Namespace) -> list[str]:
    names = {"create": "create", "get": "get", "list": "list (limit=100)", "watch": f"watch fan-out x{args.watchers}"}
    return [names[op] for op in OPS if op in args.ops]


def _slice_of(op: str, args: argparse.Namespace, url: str, tag: str, pb: bool, k: int):
    """The k-th of args.slices equal parts of one operation's load, against one server."""
    n, c, parts = args.requests, args.concurrency, args.slices
    headers = PB_HEADERS if pb else JSON_HEADERS
    per = n // parts
    if op == "create":
        return run_requests(url, lambda i: ("POST", NS_PATH, encode(claim(f"{tag}-{i}"), pb)), per, c, headers,
                            first=k * per)
    if op == "get":
        return run_requests(url, lambda i: ("GET", f"{NS_PATH}/{tag}-{i % (per * parts)}", None), per, c, headers,
                            first=k * per)
    if op.startswith("list"):
        return run_requests(url, lambda i: ("GET", NS_PATH + "?limit=100", None),
                            max((args.list_requests or max(n // 10, 10)) // parts, 1), c, headers)
    return watch_fanout(url, args.watchers, max(args.writes // parts, 1), f"{tag}-w{k}", pb)


async def measure(args: argparse.Namespace, servers: list[tuple[str, str, bool, int | None]]) -> dict[str, dict]:
    """Every operation against every server, interleaved: each operation's load is cut in args.slices parts, and
    the servers take turns part by part (who goes first rotates). On a busy machine whose speed drifts, a
    baseline measured seconds or minutes apart from the server it is compared with is a different machine.
    Returns, per server tag, each operation's figures, with `cpu_ms` (the server's CPU milliseconds per request
    or event) and `client_cpu_ms` (this process's)."""
    merged: dict[str, dict[str, dict]] = {tag: {} for tag, *_ in servers}
    if "create" not in args.ops:  # the objects the reads read, created untimed
        for tag, url, pb, _ in servers:
            for k in range(args.slices):
                await _slice_of("create", args, url, tag, pb, k)
    for op in _op_names(args):
        for k in range(args.slices):
            turn = k % len(servers)
            for tag, url, pb, pid in servers[turn:] + servers[:turn]:
                before, client_before = process_cpu(pid), time.process_time()
                part = await _slice_of(op, args, url, tag, pb, k)
                total = merged[tag].setdefault(op, {"latencies": [], "elapsed": 0.0, "n": 0, "cpu": 0.0,
                                                    "client_cpu": 0.0})
                total["latencies"] += part["latencies"]
                total["elapsed"] += part["elapsed"]
                total["n"] += part["n"]
                total["cpu"] += process_cpu(pid) - before
                total["client_cpu"] += time.process_time() - client_before
    out: dict[str, dict[str, dict]] = {}
    for tag, ops in merged.items():
        out[tag] = {}
        for op, total in ops.items():
            figures = summarize(total["latencies"], total["elapsed"])
            n = max(total["n"], 1)
            figures.update(n=n, ops=n / total["elapsed"], cpu_ms=total["cpu"] * 1000 / n,
                           client_cpu_ms=total["client_cpu"] * 1000 / n)
            out[tag][op] = figures
    return out


async def scale_out(args: argparse.Namespace) -> None:
    """Writes and reads with one API server on the database, then with --replicas of them."""
    n, c = args.requests, args.concurrency
    results: dict[int, dict[str, dict]] = {}
    for count in sorted({1, args.replicas}):
        procs = []
        with tempfile.TemporaryDirectory() as tmp:
            try:
                urls = []
                for i in range(count):
                    port = free_port()
                    procs.append(subprocess.Popen(
                        [sys.executable, "-m", "dramock", "apiserver", "--port", str(port), "--secure-port", "0",
                         "--data-dir",
                         os.path.join(tmp, f"data-{i}"), "--database-url", args.database_url],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                    urls.append(f"http://127.0.0.1:{port}")
                for url in urls:
                    await wait_ready(url)
                tag = f"x{count}-{time.time_ns()}"
                out = results[count] = {}
                out["create (write)"] = _summary(await run_requests(
                    urls, lambda i, tag=tag: ("POST", NS_PATH, json.dumps(claim(f"{tag}-{i}"))), n, c))
                out["get (read)"] = _summary(await run_requests(
                    urls, lambda i, tag=tag: ("GET", f"{NS_PATH}/{tag}-{i % n}", None), n, c))
                out["list limit=100 (read)"] = _summary(await run_requests(
                    urls, lambda i: ("GET", NS_PATH + "?limit=100", None), max(n // 10, 10), c))
            finally:
                for proc in procs:
                    proc.terminate()
                    proc.wait()
    one, many = results[1], results[args.replicas]
    print(f"ResourceClaims on {args.database_url.split('@')[-1]}: {n} requests per op, concurrency {c}, "
          f"spread round-robin over the replicas")
    header = f"{'operation':<24}{'1 replica ops/s':>16}{'p50 ms':>9}   {args.replicas} replicas ops/s" \
             f"{'p50 ms':>9}   {'speed-up':>8}"
    print(header)
    print("-" * len(header))
    for op in one:
        a, b = one[op], many[op]
        print(f"{op:<24}{a['ops']:>16.0f}{a['p50']:>9.2f}   {b['ops']:>17.0f}{b['p50']:>9.2f}   "
              f"{b['ops'] / a['ops']:>8.2f}")


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--watchers", type=int, default=50)
    p.add_argument("--writes", type=int, default=200)
    p.add_argument("--ops", type=lambda v: set(v.split(",")), default=set(OPS), metavar="OP,...",
                   help=f"operations to measure, of {','.join(OPS)} (default all; the creates run anyway, "
                        "untimed, for the reads to read)")
    p.add_argument("--list-requests", type=int, default=0, metavar="N",
                   help="list requests per run (default --requests / 10)")
    p.add_argument("--baseline", choices=("same-fields", "echo"), default="same-fields",
                   help="what the bare server answers with: the request's object with the fields a real API server "
                        "adds pasted in (default), or the request's object as it came")
    p.add_argument("--slices", type=int, default=4, metavar="N",
                   help="each operation's load in N parts, the servers taking turns part by part (default 4)")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="N runs, each with fresh servers, then the median of each figure and ratio")
    p.add_argument("--replicas", type=int, default=2, help="API servers on --database-url (scale-out mode)")
    p.add_argument("--database-url", default="",
                   help="SQLAlchemy URL of a shared database (e.g. PostgreSQL): measure 1 vs --replicas servers")
    args = p.parse_args()
    if args.ops - set(OPS):
        p.error(f"--ops: unknown {','.join(sorted(args.ops - set(OPS)))} (known: {','.join(OPS)})")
    if args.database_url:
        await scale_out(args)
        return
    runs = []
    for run in range(args.repeat):
        runs.append(await one_run(args))
        print(f"run {run + 1} of {args.repeat}:" if args.repeat > 1 else "", end="" if args.repeat == 1 else "\n")
        print_run(args, *runs[-1])
    if args.repeat > 1:
        print(f"\nmedians over {args.repeat} runs (ratio = dramock JSON / bare in the same run):")
        for op in runs[0][0]:
            ratios = [mock[op]["ops"] / bare[op]["ops"] for mock, _, bare in runs]
            print(f"{op:<24} JSON {statistics.median(r[0][op]['ops'] for r in runs):>8.0f} ops/s   "
                  f"bare {statistics.median(r[2][op]['ops'] for r in runs):>8.0f} ops/s   ratio "
                  f"{statistics.median(ratios):.2f} ({' / '.join(f'{x:.2f}' for x in ratios)})   server cpu ms/op "
                  f"{statistics.median(r[0][op]['cpu_ms'] for r in runs):.3f} (bare "
                  f"{statistics.median(r[2][op]['cpu_ms'] for r in runs):.3f})")


async def one_run(args: argparse.Namespace) -> tuple[dict[str, dict], dict[str, dict], dict[str, dict]]:
    """One measurement with fresh servers: dramock speaking JSON, dramock speaking protobuf, and bare."""
    procs = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            dport, bport = free_port(), free_port()
            procs.append(subprocess.Popen([sys.executable, "-m", "dramock", "apiserver", "--port", str(dport),
                                           "--secure-port", "0", "--data-dir", os.path.join(tmp, "data")],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            procs.append(subprocess.Popen([sys.executable, "-c", BASELINE, str(bport), args.baseline],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            durl, burl = f"http://127.0.0.1:{dport}", f"http://127.0.0.1:{bport}"
            await wait_ready(durl)
            await wait_ready(burl)
            figures = await measure(args, [("bare", burl, False, procs[1].pid),
                                           ("dramock", durl, False, procs[0].pid),
                                           ("dramock-pb", durl, True, procs[0].pid)])
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait()
    return figures["dramock"], figures["dramock-pb"], figures["bare"]


def print_run(args: argparse.Namespace, mock: dict[str, dict], mock_pb: dict[str, dict],
              bare: dict[str, dict]) -> None:
    print(f"ResourceClaims: {args.requests} requests per op, concurrency {args.concurrency}, "
          f"{args.watchers} watchers x {args.writes} writes, baseline {args.baseline}, in {args.slices} interleaved "
          "slices")
    header = f"{'operation':<24}{'JSON ops/s':>11}{'p50 ms':>8}{'p99 ms':>8}   {'protobuf ops/s':>15}{'p50 ms':>8}" \
             f"{'p99 ms':>8}   {'bare ops/s':>11}{'p50 ms':>8}   {'ratio':>6}" \
             f"   {'server cpu ms/op (JSON/pb/bare)':>31}   {'client cpu ms/op (JSON/pb/bare)':>31}"
    print(header)
    print("-" * len(header))
    for op in mock:
        m, q, b = mock[op], mock_pb[op], bare[op]
        print(f"{op:<24}{m['ops']:>11.0f}{m['p50']:>8.2f}{m['p99']:>8.2f}   {q['ops']:>15.0f}{q['p50']:>8.2f}"
              f"{q['p99']:>8.2f}   {b['ops']:>11.0f}{b['p50']:>8.2f}   {m['ops'] / b['ops']:>6.2f}"
              f"   {m['cpu_ms']:>11.3f} / {q['cpu_ms']:.3f} / {b['cpu_ms']:.3f}"
              f"   {m['client_cpu_ms']:>9.3f} / {q['client_cpu_ms']:.3f} / {b['client_cpu_ms']:.3f}")
    print("(JSON and protobuf: dramock; bare: aiohttp answering JSON with no API machinery; ratio = dramock JSON "
          "throughput / bare; watch fan-out counts events delivered; server cpu ms/op = the server process's CPU time "
          "per request or event, the steadier figure on a busy machine; client cpu ms/op = this bench's own, which "
          "paces the watch fan-out)")

if __name__ == "__main__":
    asyncio.run(main())
