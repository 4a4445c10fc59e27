"""Discovery from the client side: which resources the server serves, as client-go's discovery client finds
them (`ServerPreferredResources`).

It asks for aggregated discovery first (`/api` and `/apis` as `apidiscovery.k8s.io/v2`
`APIGroupDiscoveryList`: two requests) and falls back to the legacy documents (`/api`, `/apis`, then one
`APIResourceList` per group version) when the server answers with those. For each group, a resource is
reported once, in the most preferred version that serves it. Components that handle "every kind" (the
garbage collector, the namespace controller) use this instead of any compiled-in list, so they follow what
the server actually serves.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import aiohttp

from dramock.client.rest import APIStatusError, Client, resource_path

log = logging.getLogger("dramock.client.discovery")

Obj = dict[str, Any]

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
# As client-go asks: aggregated discovery first, the legacy documents otherwise.
ACCEPT = f"{AGGREGATED},application/json;q=0.9"


@dataclass(frozen=True)
class APIResource:
    """One served resource (a top-level one; its subresources are listed by name)."""

    group: str
    version: str
    resource: str  # the plural, as in the path
    kind: str
    namespaced: bool
    verbs: frozenset[str]
    subresources: tuple[str, ...] = ()

    @property
    def group_resource(self) -> tuple[str, str]:
        return self.group, self.resource

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def supports(self, *verbs: str) -> bool:
        return set(verbs) <= self.verbs

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str = "") -> str:
        """The collection (or, with `name`, object) path; `namespace` only counts for namespaced resources."""
        return resource_path(self.group, self.version, self.resource, namespace if self.namespaced else None,
                             name, subresource)


def _from_aggregated(items: Iterable[Obj]) -> list[APIResource]:
    out: list[APIResource] = []
    for group in items:
        name = (group.get("metadata") or {}).get("name") or ""
        seen: set[str] = set()
        for version in group.get("versions") or []:  # listed most preferred first
            if version.get("freshness") == "Stale":
                continue
            for r in version.get("resources") or []:
                if r.get("resource", "") in seen:
                    continue
                seen.add(r["resource"])
                out.append(APIResource(
                    name, version["version"], r["resource"], (r.get("responseKind") or {}).get("kind", ""),
                    r.get("scope") == "Namespaced", frozenset(r.get("verbs") or ()),
                    tuple(s["subresource"] for s in r.get("subresources") or [] if s.get("subresource"))))
    return out


def _from_resource_list(group: str, version: str, doc: Obj, seen: set[str]) -> list[APIResource]:
    entries = doc.get("resources") or []
    subs: dict[str, list[str]] = {}
    for e in entries:
        parent, _, sub = e.get("name", "").partition("/")
        if sub:
            subs.setdefault(parent, []).append(sub)
    out = []
    for e in entries:
        name = e.get("name", "")
        if "/" in name or name in seen:
            continue
        seen.add(name)
        out.append(APIResource(group, version, name, e.get("kind", ""), bool(e.get("namespaced")),
                               frozenset(e.get("verbs") or ()), tuple(sorted(subs.get(name, ())))))
    return out


async def _legacy(client: Client, core: Obj) -> list[APIResource]:
    """The legacy walk: /api's versions, /apis's groups (preferred version first), one list per version."""
    out: list[APIResource] = []
    plan: list[tuple[str, list[str]]] = [("", list(core.get("versions") or []))]
    groups = await client.request("GET", "/apis", accept="application/json")
    for g in groups.get("groups") or []:
        versions = [v["version"] for v in g.get("versions") or []]
        preferred = (g.get("preferredVersion") or {}).get("version")
        if preferred in versions:
            versions.remove(preferred)
            versions.insert(0, preferred)
        plan.append((g.get("name", ""), versions))
    for group, versions in plan:
        seen: set[str] = set()
        for v in versions:
            path = f"/apis/{group}/{v}" if group else f"/api/{v}"
            try:
                doc = await client.request("GET", path, accept="application/json")
            except APIStatusError as e:  # one group version failing does not hide the others (as upstream)
                log.debug("discovery of %s: %s", path, e)
                continue
            out.extend(_from_resource_list(group, v, doc, seen))
    return out


async def server_preferred_resources(client: Client) -> list[APIResource]:
    """Every resource the server serves, each once, in its group's most preferred version that serves it."""
    core = await client.request("GET", "/api", accept=ACCEPT)
    if core.get("kind") != "APIGroupDiscoveryList":
        return await _legacy(client, core)
    groups = await client.request("GET", "/apis", accept=ACCEPT)
    if groups.get("kind") != "APIGroupDiscoveryList":
        return await _legacy(client, await client.request("GET", "/api", accept="application/json"))
    return _from_aggregated(list(core.get("items") or []) + list(groups.get("items") or []))


async def server_legacy_resources(client: Client) -> list[APIResource]:
    """The same list from the legacy documents only (for servers without aggregated discovery, and tests)."""
    return await _legacy(client, await client.request("GET", "/api", accept="application/json"))


async def serves(client: Client, group: str, version: str, plural: str, stop: asyncio.Event | None = None,
                 attempts: int | None = None) -> bool:
    """Whether the server serves `plural` in group/version (a component of an API that is off stays idle).
    A server that does not answer yet (`serve` starts its components before it listens) is asked again every
    0.2 s, `attempts` times at most (None: until `stop`)."""
    tried = 0
    while not (stop is not None and stop.is_set()) and (attempts is None or tried < attempts):
        tried += 1
        try:
            listing = await client.request("GET", f"/apis/{group}/{version}")
        except APIStatusError:
            return False
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
            await asyncio.sleep(0.2)
            continue
        return any(r.get("name") == plural for r in listing.get("resources") or [])
    return False
