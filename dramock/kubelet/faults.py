"""The kubelet shim's side of fault injection (dramock.faults): it asks the API server whether a kubelet-side
fault fires, so that the server decides, logs and counts every injected fault in one place."""

from __future__ import annotations

import logging
from typing import Any

import aiohttp

from dramock.client.rest import APIStatusError, Client

log = logging.getLogger("dramock.kubelet.faults")

FAULTS_PATH = "/dramock/faults"


class KubeletFaults:
    def __init__(self, client: Client, node: str):
        self.client, self.node = client, node
        self.supported = True  # False once the server answered 404 (not a dramock server with faults)

    async def _ask(self, method: str, path: str, body: Any = None) -> dict[str, Any] | None:
        if not self.supported:
            return None
        try:
            return await self.client.request(method, path, body)
        except APIStatusError as e:
            if e.code == 404:
                self.supported = False
            else:
                log.debug("fault injection: %s %s: %s", method, path, e)
        except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as e:  # ValueError: not JSON
            log.debug("fault injection: %s %s: %s", method, path, e)
        return None

    async def types(self) -> set[str]:
        """The types of the rules the server holds now (a cheap poll before asking about each)."""
        listed = await self._ask("GET", FAULTS_PATH)
        return {r.get("type", "") for r in (listed or {}).get("items") or [] if r.get("remaining") != 0}

    async def fire(self, type_: str, driver: str = "") -> dict[str, Any] | None:
        """The rule that fires for this node (and driver) now, with its params; None when none does."""
        answer = await self._ask("POST", f"{FAULTS_PATH}/fire", {"type": type_, "node": self.node, "driver": driver})
        return (answer or {}).get("fired")
