"""Whether the server serves scheduling.k8s.io/v1beta1 PodGroups (GenericWorkload on and the version turned
on by --runtime-config), learned from discovery as a component of an API that is off stays idle."""

from __future__ import annotations

import asyncio

import aiohttp

from dramock.client.rest import APIStatusError, Client
from dramock.schemas.podgroups import GROUP, PLURAL, VERSION


async def served(client: Client, stop: asyncio.Event | None = None, attempts: int = 150) -> bool:
    """Waits for a server that does not answer yet (`serve` starts its components before it listens)."""
    for _ in range(attempts):
        if stop is not None and stop.is_set():
            return False
        try:
            listing = await client.request("GET", f"/apis/{GROUP}/{VERSION}")
        except APIStatusError:
            return False
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
            await asyncio.sleep(0.2)
            continue
        return any(r.get("name") == PLURAL for r in listing.get("resources") or [])
    return False
