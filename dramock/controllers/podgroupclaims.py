"""The ResourceClaim controller's part for PodGroups (DRAWorkloadResourceClaims, KEP-5729), as upstream's
pkg/controller/resourceclaim does it in 1.37:

- a PodGroup's `spec.resourceClaims` entry with `resourceClaimTemplateName` gets one ResourceClaim made from the
  template (generateName `<podgroup>-<claim>-`, annotation `resource.kubernetes.io/podgroup-claim-name`, the
  PodGroup as controlling owner with blockOwnerDeletion), recorded in the PodGroup's
  `status.resourceClaimStatuses`; the garbage collector deletes it with the PodGroup;
- a pod of the group whose claim matches the group's exactly gets no claim of its own: its
  `status.resourceClaimStatuses` names the group's claim (once the group has one);
- a bound pod of the group whose group claim is allocated but not reserved reserves it for the PodGroup;
- `status.reservedFor` entries of PodGroups that are gone are removed (the last one deallocates).

It acts only with DRAWorkloadResourceClaims on (the controller manager's --feature-gates; `serve` passes its
own) and PodGroups served (learned from discovery). With the gate off, a pod's claim is always its own and
reservations for PodGroups are left alone, as upstream's controller does.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from dramock.client import discovery
from dramock.client.informer import Informer, shared_informer
from dramock.client.rest import APIStatusError, Client, resource_path
from dramock.schemas import podgroups as pg
from dramock.schemas.featuregates import FeatureGates

if TYPE_CHECKING:
    from dramock.client.informer import WorkQueue

log = logging.getLogger("dramock.controllers.resourceclaim")
Obj = dict[str, Any]
GROUP, VERSION = "resource.k8s.io", "v1"
FIELD_MANAGER = "ResourceClaimController"


def generate_name(group_name: str, claim: str) -> str:
    """`<podgroup>-<claim>-`, both shortened proportionally past 57 characters (as for pods)."""
    name = f"{group_name}-{claim}-"
    if len(name) > 57:
        name = group_name[:len(group_name) * 57 // len(name)] + "-" + claim[:len(claim) * 57 // len(name)] + "-"
    return name


class PodGroupClaims:
    """Mixed into ResourceClaimController; `podgroups` stays None while the server does not serve them."""

    client: Client
    queue: WorkQueue
    pods: Informer
    claims: Informer
    templates: Informer
    created: dict[tuple[str, str], Obj]
    creates: dict[str, int]
    gates: FeatureGates

    async def _create_from_template(self, ns: str, template_name: str, owner: Obj, annotation: str,
                                    claim_name: str) -> Obj:
        raise NotImplementedError  # the controller's (resourceclaim.py)

    def _init_podgroups(self) -> None:
        self.podgroups: Informer | None = None
        # (ns, PodGroup name) -> names of the pods in that group that have claims.
        self.group_pods: dict[tuple[str, str], set[str]] = {}

    async def _start_podgroups(self, stop: asyncio.Event, tasks: list[asyncio.Task]) -> None:
        if not self.gates.enabled(pg.GATE):
            return
        if not await discovery.serves(self.client, pg.GROUP, pg.VERSION, pg.PLURAL, stop, attempts=150):
            return
        informer = shared_informer(self.client, resource_path(pg.GROUP, pg.VERSION, pg.PLURAL))
        informer.add_handler(self._on_pod_group)
        self.podgroups = informer
        tasks.append(asyncio.create_task(informer.run(stop)))
        await informer.synced.wait()
        log.info("PodGroups are served: claims for PodGroups are managed")

    # ---------------------------------------------------------------- events

    def _index_group_pod(self, pod: Obj, deleted: bool) -> None:
        name = pg.pod_group_name(pod)
        if not name:
            return
        key = (pod["metadata"]["namespace"], name)
        members = self.group_pods.setdefault(key, set())
        if deleted:
            members.discard(pod["metadata"]["name"])
            if not members:
                del self.group_pods[key]
        else:
            members.add(pod["metadata"]["name"])

    def _on_pod_group(self, type_: str, group: Obj, _old: Obj | None) -> None:
        m = group["metadata"]
        ns = m["namespace"]
        if type_ != "DELETED":
            self.queue.add(("podgroup", ns, m["name"]))
        else:
            # Reservations for it go; claims it owns are the garbage collector's.
            for claim in self.claims.list(ns):
                if any(pg.is_group_ref(r) and r.get("uid") == m.get("uid")
                       for r in (claim.get("status") or {}).get("reservedFor") or []):
                    self.queue.add(("claim", ns, claim["metadata"]["name"]))
        for pod_name in sorted(self.group_pods.get((ns, m["name"]), ())):
            self.queue.add(("pod", ns, pod_name))

    def _on_group_claim(self, claim: Obj) -> None:
        """A claim a PodGroup controls changed: the group (its status) and its pods (reservation) may act."""
        if self.podgroups is None:
            return
        ns = claim["metadata"]["namespace"]
        for r in claim["metadata"].get("ownerReferences") or []:
            if r.get("kind") == "PodGroup" and r.get("controller") and r.get("apiVersion", "").startswith(pg.GROUP):
                self.queue.add(("podgroup", ns, r.get("name", "")))
                for pod_name in sorted(self.group_pods.get((ns, r.get("name", "")), ())):
                    self.queue.add(("pod", ns, pod_name))

    # ---------------------------------------------------------------- PodGroups

    def pod_group_of(self, pod: Obj) -> Obj | None:
        name = pg.pod_group_name(pod)
        if not name or self.podgroups is None:
            return None
        return self.podgroups.get(pod["metadata"]["namespace"], name)

    def group_claim_of(self, pod: Obj, pod_claim: Obj) -> tuple[Obj, Obj] | None:
        """(PodGroup, its claim entry) when the pod claim is its group's."""
        group = self.pod_group_of(pod)
        pgc = pg.group_claim(pod_claim, group)
        return (group, pgc) if group is not None and pgc is not None else None

    def waits_for_group(self, pod: Obj) -> bool:
        """A pod naming a PodGroup that is not there (yet) makes no claims of its own: the group may share them."""
        return self.podgroups is not None and bool(pg.pod_group_name(pod)) and self.pod_group_of(pod) is None

    async def sync_pod_group(self, ns: str, name: str) -> None:
        group = self.podgroups.get(ns, name) if self.podgroups is not None else None
        if group is None or group["metadata"].get("deletionTimestamp"):
            return
        recorded = {s.get("name"): s.get("resourceClaimName")
                    for s in (group.get("status") or {}).get("resourceClaimStatuses") or []}
        new: dict[str, str] = {}
        for pgc in (group.get("spec") or {}).get("resourceClaims") or []:
            template_name = pgc.get("resourceClaimTemplateName")
            if not template_name:
                continue
            current = recorded.get(pgc.get("name"))
            claim = self.claims.get(ns, current) or self.created.get((ns, current)) if current else None
            if claim is not None and pg.controlled_by(claim, group):
                continue
            claim = self._find_group_claim(group, pgc["name"])
            if claim is None:
                claim = await self._create_group_claim(group, pgc["name"], template_name)
            new[pgc["name"]] = claim["metadata"]["name"]
        if new:
            statuses = {**recorded, **new}
            body = {"apiVersion": f"{pg.GROUP}/{pg.VERSION}", "kind": "PodGroup",
                    "metadata": {"name": name, "namespace": ns},
                    "status": {"resourceClaimStatuses": [
                        {"name": n, "resourceClaimName": c} if c else {"name": n} for n, c in statuses.items()]}}
            await self.client.request(
                "PATCH", resource_path(pg.GROUP, pg.VERSION, pg.PLURAL, ns, name, "status"), body,
                params={"fieldManager": FIELD_MANAGER, "force": "true"}, content_type="application/apply-patch+yaml")

    def _find_group_claim(self, group: Obj, claim_name: str) -> Obj | None:
        """A claim made for this PodGroup claim earlier whose name did not make it into the status."""
        ns = group["metadata"]["namespace"]
        candidates = self.claims.list(ns) + [c for (cns, _), c in self.created.items() if cns == ns]
        for c in candidates:
            if pg.controlled_by(c, group) and \
                    (c["metadata"].get("annotations") or {}).get(pg.POD_GROUP_CLAIM_ANNOTATION) == claim_name:
                return c
        return None

    async def _create_group_claim(self, group: Obj, claim_name: str, template_name: str) -> Obj:
        gm = group["metadata"]
        owner = {"apiVersion": f"{pg.GROUP}/{pg.VERSION}", "kind": "PodGroup", "name": gm["name"], "uid": gm["uid"]}
        return await self._create_from_template(gm["namespace"], template_name, owner,
                                                pg.POD_GROUP_CLAIM_ANNOTATION, claim_name)

    # ---------------------------------------------------------------- claims

    async def _pod_group_still_there(self, ns: str, ref: Obj) -> bool:
        if self.podgroups is None:
            return True  # not served: nothing this controller can check
        group = self.podgroups.get(ns, ref.get("name", ""))
        if group is None:
            try:
                group = await self.client.request(
                    "GET", resource_path(pg.GROUP, pg.VERSION, pg.PLURAL, ns, ref.get("name", "")))
            except APIStatusError as e:
                if e.code != 404:
                    raise
                return False
        return group["metadata"].get("uid") == ref.get("uid")

    async def _reserve_for_group(self, group: Obj, claim: Obj) -> None:
        claim = dict(claim)
        status = dict(claim.get("status") or {})
        status["reservedFor"] = list(status.get("reservedFor") or []) + [pg.reservation(group)]
        claim["status"] = status
        m = claim["metadata"]
        await self.client.request("PUT", resource_path(GROUP, VERSION, "resourceclaims", m["namespace"], m["name"],
                                                       "status"), claim)
