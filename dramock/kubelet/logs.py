"""What a container "sees", as its log: dramock runs no containers, so the kubelet shim writes, per container,
the lines a real one would care about (its CDI devices, the environment, mounts and device nodes the drivers'
CDI specs give it, its phase changes), and serves them as the kubelet does, on
`GET /containerLogs/<namespace>/<pod>/<container>` (query: follow, tailLines, timestamps, limitBytes), the
endpoint the API server's pods/log proxies to (node status.daemonEndpoints.kubeletEndpoint.Port).
exec, attach and port-forward answer that there is no container to connect to."""

from __future__ import annotations

import asyncio
import glob
import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from dramock import timefmt

log = logging.getLogger("dramock.kubelet.logs")
Obj = dict[str, Any]


def cdi_edits(cdi_dirs: list[str], device_ids: list[str]) -> Obj:
    """The container edits (env, mounts, deviceNodes) CDI specs in `cdi_dirs` give the fully qualified device
    names `vendor/class=device`: each device's own edits, plus its spec's spec-wide edits once."""
    wanted = set(device_ids)
    out: Obj = {"env": [], "mounts": [], "deviceNodes": []}
    for d in cdi_dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.json"))):
            try:
                with open(path, encoding="utf-8") as f:
                    spec = json.load(f)
            except (OSError, ValueError):
                continue
            kind = spec.get("kind", "")
            hit = False
            for dev in spec.get("devices") or []:
                if f"{kind}={dev.get('name')}" in wanted:
                    hit = True
                    _merge(out, dev.get("containerEdits") or {})
            if hit:
                _merge(out, spec.get("containerEdits") or {})
    return out


def _merge(out: Obj, edits: Obj) -> None:
    for key in ("env", "mounts", "deviceNodes"):
        for item in edits.get(key) or []:
            if item not in out[key]:
                out[key].append(item)


@dataclass
class ContainerLog:
    lines: list[tuple[str, str]] = field(default_factory=list)  # (RFC 3339 nano time, text)
    done: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)


class ContainerLogs:
    def __init__(self) -> None:
        self._logs: dict[tuple[str, str, str], ContainerLog] = {}  # (namespace, pod, container)

    def write(self, namespace: str, pod: str, container: str, text: str) -> None:
        entry = self._logs.setdefault((namespace, pod, container), ContainerLog())
        now = timefmt.now_nano()
        entry.lines.extend((now, line) for line in text.splitlines())
        entry.changed.set()
        entry.changed = asyncio.Event()

    def finish(self, namespace: str, pod: str, container: str) -> None:
        entry = self._logs.setdefault((namespace, pod, container), ContainerLog())
        entry.done = True
        entry.changed.set()

    def forget(self, namespace: str, pod: str) -> None:
        for key in [k for k in self._logs if k[:2] == (namespace, pod)]:
            self._logs[key].done = True
            self._logs[key].changed.set()
            del self._logs[key]

    def get(self, namespace: str, pod: str, container: str) -> ContainerLog | None:
        return self._logs.get((namespace, pod, container))


def _render(lines: list[tuple[str, str]], timestamps: bool) -> bytes:
    return "".join(f"{t} {text}\n" if timestamps else f"{text}\n" for t, text in lines).encode()


class KubeletServer:
    """The kubelet's HTTP endpoint (only what the API server proxies to)."""

    def __init__(self, logs: ContainerLogs, host: str = "127.0.0.1", port: int = 0):
        self.logs, self.host, self.port = logs, host, port
        self._runner: web.AppRunner | None = None

    async def start(self) -> int:
        app = web.Application()
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._container_logs)
        for verb in ("exec", "attach", "portForward"):
            app.router.add_route("*", f"/{verb}/{{tail:.*}}", self._no_containers)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _no_containers(self, request: web.Request) -> web.Response:
        return web.Response(status=400, text="dramock runs no containers: there is nothing to connect to")

    async def _container_logs(self, request: web.Request) -> web.StreamResponse:
        ns, pod, container = (request.match_info[k] for k in ("namespace", "pod", "container"))
        entry = self.logs.get(ns, pod, container)
        if entry is None:
            return web.Response(status=404, text=f'container "{container}" in pod "{pod}" is not known on this node')
        q = request.query
        timestamps = q.get("timestamps") in ("true", "1")
        lines = list(entry.lines)
        tail = q.get("tailLines")
        if tail is not None and tail.lstrip("-").isdigit() and int(tail) >= 0:
            lines = lines[len(lines) - int(tail):] if int(tail) else []
        body = _render(lines, timestamps)
        limit = q.get("limitBytes")
        if limit and limit.isdigit():
            body = body[:int(limit)]
        if q.get("follow") not in ("true", "1"):
            return web.Response(body=body, content_type="text/plain")
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await resp.prepare(request)
        await resp.write(body)
        sent = len(entry.lines)
        while not entry.done and self.logs.get(ns, pod, container) is entry:
            await entry.changed.wait()
            new = entry.lines[sent:]
            sent = len(entry.lines)
            if new:
                await resp.write(_render(new, timestamps))
        await resp.write_eof()
        return resp
