"""A hand-made fuzzer for dramock's API server: hostile bodies, headers, names and query parameters against
every served resource, found through discovery (so kinds added later are fuzzed too).

`run(url, requests, seed)` sends the requests over keep-alive connections and returns a Report: status
codes seen, every 5xx, every error body that is not a Status, the slowest /readyz probe made while the
fuzzing ran, and the names of objects the server said it created. Deterministic for a seed.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

PREFIX = "fz-"
CONTENT_TYPES = ["application/json", "application/yaml", "application/merge-patch+json",
                 "application/json-patch+json", "application/strategic-merge-patch+json",
                 "application/apply-patch+yaml", "text/plain", "", "application/json; charset=latin-1",
                 "application/vnd.kubernetes.protobuf"]
QUERIES = ["", "limit=-1", "limit=abc", "limit=99999999999999999999", "continue=W10", "continue=%00",
           "continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MWU0MDAsInN0YXJ0IjoieCJ9", "resourceVersion=abc",
           "resourceVersion=-5", "resourceVersion=99999999999", "resourceVersionMatch=Exact",
           "resourceVersion=1&resourceVersionMatch=Bogus", "fieldValidation=Bogus", "fieldValidation=Strict",
           "dryRun=All", "dryRun=Bad", "labelSelector=a%3D%3D%3Db", "labelSelector=!!", "labelSelector=a+in+(",
           "fieldSelector=spec.nope%3Dx", "fieldSelector=%3D%3D", "propagationPolicy=Sideways",
           "gracePeriodSeconds=x", "gracePeriodSeconds=-1", "sendInitialEvents=true", "pretty=maybe",
           "fieldManager=" + "m" * 200, "timeoutSeconds=-1&watch=0", "force=yes", "orphanDependents=x"]
NAMES = ["x", "UPPER", "a" * 300, "..", "dot.name", "sp ace", "%2F", "ünï", "a%00b", "-lead", "trail-"]
HOSTILE_BODIES = [
    b"", b"null", b"[]", b"42", b'"str"', b"{", b'{"a":}', b"\xff\xfe\x00", b'{"metadata":NaN}',
    b'{"metadata":{"name":"' + PREFIX.encode() + b'inf"},"x":Infinity}', b'{"a":1e999}',
    b'{"metadata":{"name":"\\ud800"}}', b"[" * 3000 + b"]" * 3000, b'{"a":' * 3000 + b"1" + b"}" * 3000,
    b"a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    b"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e]\n",
    b"k8s\x00\x0a\x02\x08\x01", b"k8s\x00" + bytes(range(256)), b'{"metadata":{"name":"a"},"metadata":{}}',
    b'[{"op":"copy","from":"/metadata","path":"/metadata/x"}]' * 1,
    b'[{"op":"move","from":"/","path":"/a"}]', b'[{"op":"bogus"}]', b"--- !!python/object:os.system\n",
    b"!!binary aGVsbG8=", b'{"apiVersion":"v9","kind":"Nope","metadata":{"name":"x"}}',
]
HOSTILE_HEADERS = [{}, {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
                   {"Accept": "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"},
                   {"Accept": "application/vnd.kubernetes.protobuf"}, {"Accept": "text/html"},
                   {"Accept": "application/json;as=Bogus;g=x"}, {"Content-Encoding": "gzip"},
                   {"Impersonate-User": "nobody"}, {"X-Weird": "\u00e9"}]


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    choice = rng.randrange(14 if depth < 3 else 12)
    if choice == 12:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    if choice == 13:
        return {rng.choice(["a", "name", "spec", "", "x.y/z"]): _random_value(rng, depth + 1)
                for _ in range(rng.randrange(3))}
    return [None, True, 0, -1, 2**63, 2**64, 1.5, -1e308, "", "x" * rng.choice([1, 64, 300]),
            "\u0000\n\t\"\\", rng.choice(["1Gi", "-1", "1e3", "NaNi", "2006-01-02T15:04:05Z"])][choice]


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


def _mutate(obj: Any, rng: random.Random) -> Any:
    obj = json.loads(json.dumps(obj))
    for _ in range(rng.randrange(1, 4)):
        path = rng.choice(_paths(obj))
        if not path:
            continue
        parent = obj
        for p in path[:-1]:
            parent = parent[p]
        key = path[-1]
        action = rng.randrange(3)
        if action == 0:
            parent[key] = _random_value(rng)
        elif action == 1 and isinstance(parent, dict):
            parent.pop(key, None)
        elif isinstance(parent, dict):
            parent[rng.choice(["unknownField", "status", "metadata", "spec", "a\nb"])] = _random_value(rng)
    return obj


def base_object(group_version: str, resource: dict, name: str, namespace: str | None) -> dict:
    """A small, mostly valid object of the resource's kind (valid enough that mutations reach deep rules)."""
    meta: dict[str, Any] = {"name": name, "labels": {"fuzz": "yes"}}
    if namespace:
        meta["namespace"] = namespace
    obj: dict[str, Any] = {"apiVersion": group_version, "kind": resource["kind"], "metadata": meta}
    kind = resource["kind"]
    if kind == "ResourceClaim":
        obj["spec"] = {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}}
    elif kind == "ResourceClaimTemplate":
        obj["spec"] = {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}}}
    elif kind == "DeviceClass":
        obj["spec"] = {"selectors": [{"cel": {"expression": 'device.driver == "d.example.com"'}}]}
    elif kind == "ResourceSlice":
        obj["spec"] = {"driver": "d.example.com", "pool": {"name": "p", "resourceSliceCount": 1},
                       "nodeName": "n", "devices": [{"name": "d0", "attributes": {"a": {"int": 1}}}]}
    elif kind == "DeviceTaintRule":
        obj["spec"] = {"taint": {"key": "k", "effect": "NoSchedule"}}
    elif kind == "Pod":
        obj["spec"] = {"containers": [{"name": "c", "image": "i"}],
                       "resourceClaims": [{"name": "g", "resourceClaimName": "x"}]}
    elif kind == "ConfigMap":
        obj["data"] = {"k": "v"}
    elif kind == "ResourceQuota":
        obj["spec"] = {"hard": {"pods": "3"}}
    return obj


@dataclass
class Report:
    requests: int = 0
    codes: dict[int, int] = field(default_factory=dict)
    server_errors: list[str] = field(default_factory=list)
    not_status: list[str] = field(default_factory=list)
    slowest_readyz: float = 0.0
    created: set[str] = field(default_factory=set)


async def _resources(session: aiohttp.ClientSession, url: str) -> list[tuple[str, dict]]:
    out = []
    async with session.get(f"{url}/api/v1") as r:
        out += [("v1", res) for res in (await r.json())["resources"]]
    async with session.get(f"{url}/apis") as r:
        groups = (await r.json())["groups"]
    for g in groups:
        for v in g["versions"]:
            async with session.get(f"{url}/apis/{v['groupVersion']}") as r:
                out += [(v["groupVersion"], res) for res in (await r.json())["resources"]]
    return [(gv, res) for gv, res in out if "/" not in res["name"] or res["name"].endswith(("/status", "/binding"))]


def _request(rng: random.Random, url: str, resources: list[tuple[str, dict]], namespace: str,
             n: int) -> tuple[str, str, bytes | None, dict[str, str], str]:
    gv, res = rng.choice(resources)
    plural, _, sub = res["name"].partition("/")
    base = f"{url}/api/v1" if gv == "v1" else f"{url}/apis/{gv}"
    ns = namespace if res["namespaced"] else None
    name = PREFIX + f"{n}" if rng.random() < 0.8 else rng.choice(NAMES)
    scope = f"{base}/namespaces/{ns}" if ns else base
    coll = f"{scope}/{plural}"
    method = rng.choice(["POST", "POST", "POST", "PUT", "PATCH", "DELETE", "GET", "GET"])
    path = coll if method in ("POST",) and not sub else f"{coll}/{name}" + (f"/{sub}" if sub else "")
    if method == "GET" and rng.random() < 0.5:
        path = coll
    if method == "DELETE" and rng.random() < 0.2:
        path = coll
    query = rng.choice(QUERIES) if rng.random() < 0.5 else ""
    if "watch" in query or "timeoutSeconds" in query and "watch=0" not in query:
        query = ""
    headers = dict(rng.choice(HOSTILE_HEADERS)) if rng.random() < 0.3 else {}
    body: bytes | None = None
    if method in ("POST", "PUT", "PATCH") or (method == "DELETE" and rng.random() < 0.3):
        if rng.random() < 0.25:
            body = rng.choice(HOSTILE_BODIES)
        else:
            obj: Any = base_object(gv, res, name, ns)
            if method == "DELETE":
                obj = {"kind": "DeleteOptions", "apiVersion": "v1",
                       "gracePeriodSeconds": 0, "preconditions": {"uid": "x"}}
            if rng.random() < 0.8:
                obj = _mutate(obj, rng)
            if method == "PATCH" and rng.random() < 0.3:
                obj = [{"op": rng.choice(["add", "replace", "remove", "copy", "move", "test"]),
                        "path": "/" + "/".join(str(p) for p in rng.choice(_paths(obj)) or ("metadata",)),
                        "from": "/metadata", "value": _random_value(rng)}]
            body = json.dumps(obj).encode()
        ctype = rng.choice(CONTENT_TYPES) if rng.random() < 0.3 else (
            "application/merge-patch+json" if method == "PATCH" else "application/json")
        headers["Content-Type"] = ctype
    if method == "PATCH" and "Content-Type" not in headers:
        headers["Content-Type"] = "application/merge-patch+json"
    if method == "GET" and "?" not in path and rng.random() < 0.1:
        query = (query + "&" if query else "") + "watch=0"
    return method, path + (f"?{query}" if query else ""), body, headers, name


async def run(url: str, requests: int, seed: int = 1, concurrency: int = 8, namespace: str = "fuzz") -> Report:
    rng = random.Random(seed)
    report = Report()
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        async with session.post(f"{url}/api/v1/namespaces", json={"metadata": {"name": namespace}}) as r:
            await r.read()
        resources = await _resources(session, url)
        plan = [_request(rng, url, resources, namespace, n) for n in range(requests)]
        queue = iter(plan)
        done = asyncio.Event()

        async def worker() -> None:
            for method, target, body, headers, name in queue:
                try:
                    async with session.request(method, target, data=body, headers=headers) as r:
                        raw = await r.read()
                        status, ctype = r.status, r.headers.get("Content-Type", "")
                except aiohttp.ClientError as e:  # the server dropped the request without an answer
                    report.requests += 1
                    report.not_status.append(f"{method} {target} {headers} -> no answer: {e!r}")
                    continue
                if True:
                    report.requests += 1
                    report.codes[status] = report.codes.get(status, 0) + 1
                    if status >= 500 and not _upstreams_own(status, raw):
                        report.server_errors.append(f"{method} {target} -> {status} {raw[:300]!r}")
                    if status >= 400 and status != 406 and not _is_status(raw, ctype):
                        report.not_status.append(f"{method} {target} -> {status} {raw[:200]!r}")
                    if status in (200, 201) and method in ("POST", "PUT", "PATCH") and name.startswith(PREFIX):
                        report.created.add(name)

        async def prober() -> None:
            while not done.is_set():
                start = time.monotonic()
                async with session.get(f"{url}/readyz") as r:
                    assert r.status == 200
                report.slowest_readyz = max(report.slowest_readyz, time.monotonic() - start)
                try:
                    await asyncio.wait_for(done.wait(), 0.2)
                except TimeoutError:
                    pass

        probe = asyncio.create_task(prober())
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        done.set()
        await probe
    return report


def _upstreams_own(status: int, raw: bytes) -> bool:
    """A 5xx kube-apiserver answers too: 504 for a resourceVersion newer than the store's (the client retries)."""
    return status == 504 and b"Too large resource version" in raw


def _is_status(raw: bytes, content_type: str) -> bool:
    if "protobuf" in content_type:
        return raw.startswith(b"k8s\x00")
    try:
        doc = json.loads(raw)
    except ValueError:
        return False
    return isinstance(doc, dict) and doc.get("kind") == "Status" and isinstance(doc.get("code"), int)
