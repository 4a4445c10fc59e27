"""kube-controller-manager's clusterrole-aggregation controller (pkg/controller/clusterroleaggregation): a
ClusterRole with an aggregationRule gets, as its `rules`, the rules of every ClusterRole its selectors match
(by name order, duplicates dropped), so that `kubectl get clusterrole admin -o yaml` shows what `admin` grants.
The authorizer evaluates aggregation itself as well, so a grant is in force before this controller catches up."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from dramock.client.informer import Informer, cancel_all
from dramock.client.rest import APIStatusError, Client, resource_path
from dramock.schemas.labelselector import matches

log = logging.getLogger("dramock.controllers.clusterroleaggregation")

Obj = dict[str, Any]
GROUP, VERSION = "rbac.authorization.k8s.io", "v1"


def aggregated_rules(role: Obj, roles: list[Obj]) -> list[Obj]:
    out: list[Obj] = []
    selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
    for other in sorted(roles, key=lambda r: r["metadata"]["name"]):
        if other["metadata"]["name"] == role["metadata"]["name"]:
            continue
        labels = other["metadata"].get("labels") or {}
        if any(matches(sel, labels) for sel in selectors):
            out += [r for r in other.get("rules") or [] if r not in out]
    return out


class ClusterRoleAggregationController:
    def __init__(self, client: Client):
        self.client = client
        self.roles = Informer(client, resource_path(GROUP, VERSION, "clusterroles"))
        self.dirty = asyncio.Event()
        self.roles.add_handler(lambda *_: self.dirty.set())

    async def run(self, stop: asyncio.Event) -> None:
        tasks = [asyncio.create_task(self.roles.run(stop))]
        try:
            await self.roles.synced.wait()
            while not stop.is_set():
                self.dirty.clear()
                try:
                    await self.sync()
                except Exception as e:  # noqa: BLE001 - a controller keeps going
                    log.warning("cluster role aggregation: %s", e)
                waiter = asyncio.ensure_future(self.dirty.wait())
                stopper = asyncio.ensure_future(stop.wait())
                await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
                for f in (waiter, stopper):
                    f.cancel()
        finally:
            await cancel_all(tasks)

    async def sync(self) -> None:
        roles = self.roles.list()
        for role in roles:
            if not role.get("aggregationRule"):
                continue
            rules = aggregated_rules(role, roles)
            if rules == (role.get("rules") or []):
                continue
            try:
                await self.client.request("PATCH", resource_path(GROUP, VERSION, "clusterroles",
                                                                 name=role["metadata"]["name"]),
                                          {"rules": rules}, content_type="application/merge-patch+json")
            except APIStatusError as e:
                log.warning("cluster role aggregation of %s: %s", role["metadata"]["name"], e.status)
