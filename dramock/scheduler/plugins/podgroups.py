"""The DynamicResources plugin's part for claims of a PodGroup (DRAWorkloadResourceClaims, KEP-5729): a pod
claim that matches its PodGroup's claim uses the group's ResourceClaim (owned by the PodGroup when made from a
template), and PreBind reserves it for the PodGroup instead of the pod, so that every pod of the group shares
it without taking a `reservedFor` slot each. PostFilter leaves such a claim allocated (a PodGroup reference is
not a pod it could account for). PodGroups are watched only with the gate on and PodGroups served."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from dramock.client import discovery
from dramock.client.informer import Informer
from dramock.client.rest import Client, resource_path
from dramock.scheduler.framework import Obj
from dramock.schemas import podgroups as pg
from dramock.schemas.featuregates import FeatureGates

log = logging.getLogger("dramock.scheduler")


class PodGroupClaims:
    client: Client
    gates: FeatureGates
    podgroups: Informer | None
    informers: tuple[Informer, ...]

    if TYPE_CHECKING:  # the scheduling queue's (a base class further along the MRO)
        def _move_all(self, reason: str, claim: tuple[str, str] | None = None) -> None: ...

    async def _watch_pod_groups(self, stop: asyncio.Event) -> None:
        if self.podgroups is not None or not self.gates.enabled(pg.GATE):
            return
        if not await discovery.serves(self.client, pg.GROUP, pg.VERSION, pg.PLURAL, stop, attempts=150):
            log.info("%s is on but PodGroups are not served: claims are never shared by a group", pg.GATE)
            return
        informer = Informer(self.client, resource_path(pg.GROUP, pg.VERSION, pg.PLURAL))
        informer.add_handler(lambda type_, obj, _old: self._move_all(f"podgroup {type_.lower()}"))
        self.podgroups = informer
        self.informers = (*self.informers, informer)

    def _group_using(self, pod: Obj, cname: str) -> Obj | None:
        """The pod's PodGroup when the pod's claim resolving to ResourceClaim `cname` is the group's."""
        if self.podgroups is None:
            return None
        name = pg.pod_group_name(pod)
        group = self.podgroups.get(pod["metadata"].get("namespace", ""), name) if name else None
        if group is None:
            return None
        for pc in (pod.get("spec") or {}).get("resourceClaims") or []:
            pgc = pg.group_claim(pc, group)
            if pgc is not None and pg.group_claim_name(group, pgc) == cname:
                return group
        return None

    def _made_for_group(self, pod: Obj, claim: Obj) -> bool:
        group = self._group_using(pod, claim["metadata"]["name"])
        return group is not None and pg.controlled_by(claim, group)

    def _consumer(self, pod: Obj, cname: str) -> Obj:
        """The `reservedFor` entry PreBind writes for the pod's use of ResourceClaim `cname`."""
        group = self._group_using(pod, cname)
        if group is not None:
            return pg.reservation(group)
        return {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
