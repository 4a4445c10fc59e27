"""What the end-to-end benchmarks share: a free loopback port, and waiting for a server's /readyz."""

from __future__ import annotations

import asyncio
import socket

import aiohttp


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def wait_ready(url: str, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    async with aiohttp.ClientSession() as s:
        while asyncio.get_running_loop().time() < deadline:
            try:
                async with s.get(url + "/readyz") as r:
                    if r.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    raise RuntimeError(f"{url} not ready")
