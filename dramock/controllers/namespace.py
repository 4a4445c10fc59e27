"""Namespace controller: a namespace being deleted has its contents deleted, then disappears.

Like upstream's, it acts only through the API: it discovers the namespaced resources the server serves (at
every namespace it empties, as upstream's deleter does), deletes the namespace's collection of each (one by
one where deletecollection is not supported), waits until nothing is left, then removes the `kubernetes`
finalizer through /finalize.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from dramock.client.discovery import APIResource, server_preferred_resources
from dramock.client.informer import list_and_watch
from dramock.client.rest import APIStatusError, Client, resource_path

log = logging.getLogger("dramock.controllers.namespace")

Obj = dict[str, Any]
FINALIZER = "kubernetes"


class NamespaceController:
    def __init__(self, client: Client):
        self.client = client
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.pending: set[str] = set()

    async def run(self, stop: asyncio.Event) -> None:
        workers = [asyncio.create_task(self._worker(stop))]
        try:
            await list_and_watch(self.client, "/api/v1/namespaces", self._on_event, stop)
        finally:
            for w in workers:
                w.cancel()

    async def _on_event(self, _type: str, ns: Obj) -> None:
        name = ns["metadata"]["name"]
        if ns["metadata"].get("deletionTimestamp") and FINALIZER in (ns.get("spec") or {}).get("finalizers", []):
            if name not in self.pending:
                self.pending.add(name)
                self.queue.put_nowait(name)

    async def _worker(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            name = await self.queue.get()
            try:
                done = await self._sync(name)
            except Exception as e:  # a controller keeps going; it retries the namespace
                log.warning("namespace %s: %s", name, e)
                done = False
            if done:
                self.pending.discard(name)
            else:
                asyncio.get_running_loop().call_later(1.0, self.queue.put_nowait, name)

    async def deletable_resources(self) -> list[APIResource]:
        """The namespaced resources the server serves that can be listed and deleted."""
        return [r for r in await server_preferred_resources(self.client)
                if r.namespaced and r.supports("list", "delete")]

    async def _sync(self, name: str) -> bool:
        """Delete what is left in the namespace; finalize it once empty. True when finished."""
        try:
            ns = await self.client.request("GET", resource_path("", "v1", "namespaces", name=name))
        except APIStatusError as e:
            if e.code == 404:
                return True
            raise
        if FINALIZER not in (ns.get("spec") or {}).get("finalizers", []):
            return True
        remaining = 0
        for kind in await self.deletable_resources():
            path = kind.path(namespace=name)
            if kind.supports("deletecollection"):
                await self.client.request("DELETE", path)
            else:  # e.g. services: one by one, as upstream's namespace deleter does
                for item in (await self.client.request("GET", path)).get("items", []):
                    with contextlib.suppress(APIStatusError):
                        await self.client.request("DELETE", f"{path}/{item['metadata']['name']}")
            left = await self.client.request("GET", path)
            remaining += len(left.get("items", []))
        if remaining:
            return False
        ns["spec"]["finalizers"] = [f for f in ns["spec"]["finalizers"] if f != FINALIZER]
        await self.client.request("PUT", resource_path("", "v1", "namespaces", name=name, subresource="finalize"),
                                  ns)
        log.info("namespace %s finalized", name)
        return True
