"""Informers with a local cache, and a work queue: the client-go shapes the bundled controllers are built from.

An `Informer` lists a collection, then watches it from the list's resourceVersion (relisting on 410 or when
the stream breaks), keeps the objects in a cache and calls its handlers with
`(type, obj, old)` for every change. `synced` is set once the first list has been delivered.

A `WorkQueue` has client-go's workqueue semantics: a key is queued at most once, a key being processed is not
handed to a second worker, and one added meanwhile is queued again when the first is `done`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Callable, Hashable
from typing import Any

import aiohttp

from dramock.client.rest import APIStatusError, Client

log = logging.getLogger("dramock.client.informer")

Obj = dict[str, Any]
Handler = Callable[[str, Obj, Obj | None], Any]


def resource_version(obj: Obj) -> int:
    """An object's resourceVersion as a number, to tell which of two copies is newer (0 when it has none)."""
    try:
        return int(obj["metadata"].get("resourceVersion") or 0)
    except (ValueError, TypeError):
        return 0


def newer(candidate: Obj, current: Obj | None) -> bool:
    """Whether a copy (e.g. a write's answer) may replace a cached one: a watch event can arrive before the answer
    to the write that caused it, and must not be undone by the older answer."""
    return current is None or resource_version(candidate) > resource_version(current)


def object_key(obj: Obj) -> str:
    """`namespace/name`, or `name` for cluster-scoped objects (client-go's MetaNamespaceKeyFunc)."""
    m = obj["metadata"]
    return f"{m['namespace']}/{m['name']}" if m.get("namespace") else m["name"]


class Informer:
    """Several users may `run` one informer (a shared informer): one list and one watch serve them all, and
    it stops when the last of them stops. Handlers are added before the first `run`."""

    def __init__(self, client: Client, path: str, keep_managed_fields: bool = False):
        self.client = client
        self.path = path
        # kube-scheduler's and kube-controller-manager's informers drop metadata.managedFields (their
        # WithTransform trim): nothing reads them there, and they are a large part of every cached object.
        self.keep_managed_fields = keep_managed_fields
        self.cache: dict[str, Obj] = {}
        self.handlers: list[Handler] = []
        self.synced = asyncio.Event()
        self._runner: asyncio.Future | None = None
        self._users = 0

    def add_handler(self, handler: Handler) -> None:
        self.handlers.append(handler)

    def get(self, namespace: str | None, name: str) -> Obj | None:
        return self.cache.get(f"{namespace}/{name}" if namespace else name)

    def list(self, namespace: str | None = None) -> list[Obj]:
        if namespace is None:
            return list(self.cache.values())
        return [o for o in self.cache.values() if o["metadata"].get("namespace") == namespace]

    def _trim(self, obj: Obj) -> Obj:
        if not self.keep_managed_fields:
            md = obj.get("metadata")
            if isinstance(md, dict):
                md.pop("managedFields", None)
        return obj

    async def _dispatch(self, type_: str, obj: Obj, old: Obj | None) -> None:
        for h in self.handlers:
            try:
                r = h(type_, obj, old)
                if inspect.isawaitable(r):
                    await r
            except Exception:  # one handler's bug must not stop the informer
                log.exception("informer %s: handler failed", self.path)

    async def run(self, stop: asyncio.Event) -> None:
        self._users += 1
        if self._runner is None or self._runner.done():
            self._runner = asyncio.ensure_future(self._run(stop))
        runner = self._runner
        try:
            await asyncio.shield(runner)
        finally:
            self._users -= 1
            if self._users == 0 and not runner.done():
                runner.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await runner

    async def _run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                listed = await self.client.request("GET", self.path)
                rv = listed["metadata"]["resourceVersion"]
                current = {object_key(o): self._trim(o) for o in listed.get("items", [])}
                for k, o in list(self.cache.items()):
                    if k not in current:
                        del self.cache[k]
                        await self._dispatch("DELETED", o, o)
                for k, o in current.items():
                    old = self.cache.get(k)
                    self.cache[k] = o
                    if old is None:
                        await self._dispatch("ADDED", o, None)
                    elif old["metadata"].get("resourceVersion") != o["metadata"].get("resourceVersion"):
                        await self._dispatch("MODIFIED", o, old)
                self.synced.set()
                while not stop.is_set():
                    async for ev in self.client.watch(self.path, {"resourceVersion": rv, "allowWatchBookmarks": "true",
                                                                  "timeoutSeconds": "300"}):
                        obj = self._trim(ev["object"])
                        if ev["type"] == "ERROR":
                            raise APIStatusError(obj.get("code", 500), obj)
                        rv = obj["metadata"]["resourceVersion"]
                        if ev["type"] == "BOOKMARK":
                            continue
                        k = object_key(obj)
                        if ev["type"] == "DELETED":
                            old = self.cache.pop(k, None)
                            await self._dispatch("DELETED", obj, old)
                        else:
                            old = self.cache.get(k)
                            self.cache[k] = obj
                            await self._dispatch("ADDED" if old is None else "MODIFIED", obj, old)
            except (aiohttp.ClientError, APIStatusError, asyncio.TimeoutError, KeyError, ValueError) as e:
                log.debug("informer %s: %s; relisting", self.path, e)
                await asyncio.sleep(0.5)


def shared_informer(client: Client, path: str) -> Informer:
    """The client's one informer of `path` when the client shares informers (`client.shared_informers` is a
    dict, as the controller manager sets it: client-go's SharedInformerFactory), else a new informer."""
    shared = client.shared_informers
    if shared is None:
        return Informer(client, path)
    if path not in shared:
        shared[path] = Informer(client, path)
    return shared[path]


async def list_and_watch(client: Client, path: str, on_event: Callable[[str, Obj], Any], stop: asyncio.Event) -> None:
    """For components that only need events: an informer whose one handler gets `(type, obj)`."""
    informer = Informer(client, path)
    informer.add_handler(lambda type_, obj, _old: on_event(type_, obj))
    await informer.run(stop)


async def cancel_all(tasks: list[asyncio.Task]) -> None:
    """Cancel a component's tasks and wait for them, whatever they were doing (shutdown path)."""
    for t in tasks:
        t.cancel()
    for t in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await t


class WorkQueue:
    def __init__(self, base_delay: float = 0.05, max_delay: float = 30.0):
        self._queue: asyncio.Queue[Hashable] = asyncio.Queue()
        self._dirty: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._failures: dict[Hashable, int] = {}
        self.base_delay = base_delay
        self.max_delay = max_delay

    def add(self, key: Hashable) -> None:
        if key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.put_nowait(key)

    def add_after(self, key: Hashable, delay: float) -> None:
        asyncio.get_running_loop().call_later(delay, self.add, key)

    def add_rate_limited(self, key: Hashable) -> None:
        """Requeue after a failure, backing off exponentially per key."""
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        self.add_after(key, min(self.base_delay * (2 ** n), self.max_delay))

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)

    async def get(self) -> Hashable:
        key = await self._queue.get()
        self._dirty.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: Hashable) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._queue.put_nowait(key)

    def __len__(self) -> int:
        return self._queue.qsize()


async def run_worker(queue: WorkQueue, sync: Callable[[Any], Any], stop: asyncio.Event, name: str) -> None:
    """Take keys off `queue` and `sync` them; failures are retried with backoff."""
    while not stop.is_set():
        key = await queue.get()
        try:
            await sync(key)
            queue.forget(key)
        except Exception as e:
            level = logging.DEBUG if isinstance(e, (APIStatusError, aiohttp.ClientError)) else logging.WARNING
            log.log(level, "%s: syncing %s: %s", name, key, e, exc_info=level == logging.WARNING)
            queue.add_rate_limited(key)
        finally:
            queue.done(key)
