"""A small async REST client for the bundled components: they talk to the API server over HTTP only."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

import aiohttp
import yaml

log = logging.getLogger("dramock.client")

Obj = dict[str, Any]


class APIStatusError(Exception):
    """A non-2xx answer; `status` is the Kubernetes Status body."""

    def __init__(self, code: int, status: Obj):
        super().__init__(f"{code} {status.get('reason', '')}: {status.get('message', '')}")
        self.code = code
        self.status = status


def server_from_kubeconfig(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    current = cfg.get("current-context")
    ctx = next((c["context"] for c in cfg.get("contexts", []) if c["name"] == current), None)
    cluster_name = ctx["cluster"] if ctx else cfg["clusters"][0]["name"]
    cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == cluster_name)
    return cluster["server"].rstrip("/")


def resource_path(group: str, version: str, plural: str, namespace: str | None = None,
                  name: str | None = None, subresource: str = "") -> str:
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    if namespace:
        base += f"/namespaces/{namespace}"
    base += f"/{plural}"
    if name:
        base += f"/{name}"
    if subresource:
        base += f"/{subresource}"
    return base


class Client:
    def __init__(self, server: str, user_agent: str):
        self.server = server.rstrip("/")
        self.user_agent = user_agent
        self._session: aiohttp.ClientSession | None = None

    async def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(headers={"User-Agent": self.user_agent},
                                                  timeout=aiohttp.ClientTimeout(total=None, sock_connect=10))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def request(self, method: str, path: str, body: Any = None, params: dict[str, str] | None = None,
                      content_type: str = "application/json") -> Obj:
        s = await self.session()
        url = self.server + path + (("?" + urlencode(params)) if params else "")
        data = json.dumps(body) if body is not None else None
        async with s.request(method, url, data=data, headers={"Content-Type": content_type},
                             timeout=aiohttp.ClientTimeout(total=60)) as r:
            raw = await r.read()
            payload = json.loads(raw) if raw else {}
            if r.status >= 300:
                raise APIStatusError(r.status, payload)
            return payload

    async def watch(self, path: str, params: dict[str, str]) -> AsyncIterator[Obj]:
        """Yield watch events; ends when the server closes the stream."""
        s = await self.session()
        q = dict(params, watch="1")
        async with s.get(self.server + path + "?" + urlencode(q)) as r:
            if r.status >= 300:
                raise APIStatusError(r.status, json.loads(await r.read() or b"{}"))
            async for line in r.content:
                if line.strip():
                    yield json.loads(line)


async def list_and_watch(client: Client, path: str, on_event: Any, stop: asyncio.Event) -> None:
    """The informer loop: list, then watch from the list's resourceVersion; relist on 410 or errors.

    `on_event(type, obj)` gets a synthetic ADDED per listed object (and DELETED for ones gone since the
    previous list), then every watch event.
    """
    known: dict[str, Obj] = {}
    while not stop.is_set():
        try:
            listed = await client.request("GET", path)
            rv = listed["metadata"]["resourceVersion"]
            current = {_key(o): o for o in listed.get("items", [])}
            for k, o in known.items():
                if k not in current:
                    await on_event("DELETED", o)
            for o in current.values():
                await on_event("ADDED", o)
            known = current
            while not stop.is_set():
                async for ev in client.watch(path, {"resourceVersion": rv, "allowWatchBookmarks": "true",
                                                    "timeoutSeconds": "300"}):
                    obj = ev["object"]
                    if ev["type"] == "ERROR":
                        raise APIStatusError(obj.get("code", 500), obj)
                    rv = obj["metadata"]["resourceVersion"]
                    if ev["type"] == "BOOKMARK":
                        continue
                    if ev["type"] == "DELETED":
                        known.pop(_key(obj), None)
                    else:
                        known[_key(obj)] = obj
                    await on_event(ev["type"], obj)
        except (aiohttp.ClientError, APIStatusError, asyncio.TimeoutError) as e:
            log.debug("informer %s: %s; relisting", path, e)
            await asyncio.sleep(0.5)


def _key(obj: Obj) -> str:
    m = obj["metadata"]
    return f"{m.get('namespace', '')}/{m['name']}"
