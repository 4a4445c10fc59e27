"""ResourceClaim controller (kube-controller-manager's `resource-claim-controller`, KEP-4381).

As upstream's pkg/controller/resourceclaim, acting only through the API:

- a pod's `spec.resourceClaims` entry with `resourceClaimTemplateName` gets a ResourceClaim made from the
  template (generateName `<pod>-<claim>-`, annotation `resource.kubernetes.io/pod-claim-name`, the pod as
  controlling owner with blockOwnerDeletion), recorded in `pod.status.resourceClaimStatuses` (server-side
  apply of pods/status by `ResourceClaimController`);
- a pod already bound to a node whose allocated claim does not list it gets reserved (`status.reservedFor`);
- `status.reservedFor` entries of pods that are gone, replaced or done are removed; when the last one goes,
  the allocation is cleared and the `resource.kubernetes.io/delete-protection` finalizer dropped (also for a
  claim being deleted that nobody uses);
- a claim generated for a pod that is done (or replaced) and no longer reserved is deleted;
- claims for PodGroups (DRAWorkloadResourceClaims): see podgroupclaims.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any

from dramock.client.informer import WorkQueue, run_worker, shared_informer
from dramock.client.rest import APIStatusError, Client, resource_path
from dramock.controllers.podgroupclaims import PodGroupClaims
from dramock.schemas import podgroups as pg
from dramock.schemas.featuregates import FeatureGates

log = logging.getLogger("dramock.controllers.resourceclaim")

Obj = dict[str, Any]
GROUP, VERSION = "resource.k8s.io", "v1"
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
EXTENDED_RESOURCE_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
FINALIZER = "resource.kubernetes.io/delete-protection"
FIELD_MANAGER = "ResourceClaimController"
# Same limit as upstream's ResourceClaimReservedForMaxSize.
RESERVED_FOR_MAX = 256
# Workers, as kube-controller-manager's --concurrent-resourceclaim-syncs default.
CONCURRENT_RESOURCECLAIM_SYNCS = 50


class ClaimNotFound(Exception):
    """The pod's claim was not created yet (upstream's resourceclaim.ErrClaimNotFound)."""


def is_pod_done(pod: Obj) -> bool:
    """Terminal, or deleted before it was ever scheduled: the pod will not use its claims any more."""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return True
    return bool(pod["metadata"].get("deletionTimestamp")) and not (pod.get("spec") or {}).get("nodeName")


def claim_name(pod: Obj, pod_claim: Obj) -> tuple[str | None, bool]:
    """The ResourceClaim name a pod claim refers to and whether its owner must be checked.

    None means no claim is needed (the status records none). Raises ClaimNotFound while a templated claim
    has not been created yet.
    """
    if pod_claim.get("resourceClaimName"):
        return pod_claim["resourceClaimName"], False
    if pod_claim.get("resourceClaimTemplateName"):
        for st in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            if st.get("name") == pod_claim.get("name"):
                return st.get("resourceClaimName") or None, True
        raise ClaimNotFound(pod_claim.get("name"))
    return None, False


def is_for_pod(pod: Obj, claim: Obj) -> bool:
    uid = pod["metadata"].get("uid")
    return any(r.get("uid") == uid and r.get("controller") for r in claim["metadata"].get("ownerReferences") or [])


def owning_pod(claim: Obj) -> tuple[str, str]:
    for r in claim["metadata"].get("ownerReferences") or []:
        if r.get("apiVersion") == "v1" and r.get("kind") == "Pod" and r.get("controller"):
            return r.get("name", ""), r.get("uid", "")
    return "", ""


def reserved_for_pod(pod: Obj, claim: Obj) -> bool:
    uid = pod["metadata"].get("uid")
    return any(r.get("uid") == uid for r in (claim.get("status") or {}).get("reservedFor") or [])


def generate_name(pod_name: str, claim: str) -> str:
    """`<pod>-<claim>-`, both shortened proportionally when longer than upstream's 57 characters."""
    name = f"{pod_name}-{claim}-"
    max_base = 57
    if len(name) > max_base:
        name = pod_name[:len(pod_name) * max_base // len(name)] + "-" + \
            claim[:len(claim) * max_base // len(name)] + "-"
    return name


def claim_metric_labels(claim: Obj) -> tuple[str, str, str]:
    """(allocated, admin_access, source) as upstream's dynamic_resource_allocation_resource_claims."""
    allocated = "true" if (claim.get("status") or {}).get("allocation") else "false"
    admin = False
    for req in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        if (req.get("exactly") or {}).get("adminAccess"):
            admin = True
    annotations = claim["metadata"].get("annotations") or {}
    source = ""
    if POD_CLAIM_ANNOTATION in annotations:
        source = "resource_claim_template"
    elif annotations.get(EXTENDED_RESOURCE_ANNOTATION) == "true":
        source = "extended_resource"
    return allocated, "true" if admin else "false", source


class ResourceClaimController(PodGroupClaims):
    def __init__(self, client: Client, workers: int = CONCURRENT_RESOURCECLAIM_SYNCS,
                 gates: FeatureGates | None = None):
        self.client = client
        self.gates = gates or FeatureGates()
        self.workers = workers
        self.pods = shared_informer(client, "/api/v1/pods")
        self.claims = shared_informer(client, resource_path(GROUP, VERSION, "resourceclaims"))
        self.templates = shared_informer(client, resource_path(GROUP, VERSION, "resourceclaimtemplates"))
        self.queue = WorkQueue()
        # UIDs of pods seen deleted (upstream's deletedObjects LRU): no API call needed to drop their reservations.
        self.deleted_pods: OrderedDict[str, None] = OrderedDict()
        # Claims this controller created, until the claim informer has them (upstream's claimCache.Mutation).
        self.created: dict[tuple[str, str], Obj] = {}
        # Pod claim statuses this controller wrote, until the pod informer has them (pod uid -> {claim: name}):
        # a sync that runs on the claim's event before the pod's does not write them a second time.
        self.statuses_written: dict[str, dict[str, str]] = {}
        self.creates = {"success": 0, "failure": 0}
        # Indexes, so an event does not scan the namespace: pods naming a claim in spec.resourceClaims
        # ((ns, claim) -> pod names), and claims by their controlling pod's uid.
        self.pods_using: dict[tuple[str, str], set[str]] = {}
        self.claims_of_pod: dict[str, set[str]] = {}
        self._init_podgroups()
        self.pods.add_handler(self._on_pod)
        self.claims.add_handler(self._on_claim)

    async def run(self, stop: asyncio.Event) -> None:
        tasks = [asyncio.create_task(i.run(stop)) for i in (self.pods, self.claims, self.templates)]
        try:
            await asyncio.gather(self.pods.synced.wait(), self.claims.synced.wait(), self.templates.synced.wait())
            await self._start_podgroups(stop, tasks)
            tasks += [asyncio.create_task(run_worker(self.queue, self._sync, stop, "resourceclaim"))
                      for _ in range(self.workers)]
            await stop.wait()
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    # ---------------------------------------------------------------- events

    def _on_pod(self, type_: str, pod: Obj, _old: Obj | None) -> None:
        deleted = type_ == "DELETED"
        written = self.statuses_written.get(pod["metadata"].get("uid", ""))
        if written is not None and (deleted or _statuses_include(pod, written)):
            del self.statuses_written[pod["metadata"].get("uid", "")]
        if deleted:
            self.deleted_pods[pod["metadata"].get("uid", "")] = None
            while len(self.deleted_pods) > 10000:
                self.deleted_pods.popitem(last=False)
        claims = (pod.get("spec") or {}).get("resourceClaims") or []
        ns = pod["metadata"]["namespace"]
        # The claim the scheduler made for extended resources (KEP-5004) is released like the others.
        extended = ((pod.get("status") or {}).get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
        if extended and (deleted or is_pod_done(pod)):
            self.queue.add(("claim", ns, extended))
        if not claims:
            return
        self._index_group_pod(pod, deleted)
        for pc in claims:
            if pc.get("resourceClaimName"):
                users = self.pods_using.setdefault((ns, pc["resourceClaimName"]), set())
                if deleted:
                    users.discard(pod["metadata"]["name"])
                    if not users:
                        del self.pods_using[ns, pc["resourceClaimName"]]
                else:
                    users.add(pod["metadata"]["name"])
        if deleted or is_pod_done(pod):
            # Release the reservations of a pod that will not run (any more).
            for pc in claims:
                try:
                    name, _ = claim_name(pod, pc)
                except ClaimNotFound:
                    continue
                if name:
                    self.queue.add(("claim", ns, name))
            return
        if not pod["metadata"].get("deletionTimestamp"):
            self.queue.add(("pod", ns, pod["metadata"]["name"]))

    def _on_claim(self, type_: str, claim: Obj, _old: Obj | None) -> None:
        m = claim["metadata"]
        ns = m["namespace"]
        pod_name, pod_uid = owning_pod(claim)
        if pod_uid:
            owned = self.claims_of_pod.setdefault(pod_uid, set())
            if type_ == "DELETED":
                owned.discard(m["name"])
                if not owned:
                    del self.claims_of_pod[pod_uid]
            else:
                owned.add(m["name"])
        # The informer has it (or has seen it go): what this controller remembers of its own create is done.
        self.created.pop((ns, m["name"]), None)
        if type_ == "DELETED":
            # Re-create a generated claim someone deleted while its pod still needs it.
            if pod_name:
                self.queue.add(("pod", ns, pod_name))
            return
        self.queue.add(("claim", ns, m["name"]))
        # A pod bound to a node waits for its claim's allocation to be reserved.
        for user in sorted(self.pods_using.get((ns, m["name"]), ())):
            pod = self.pods.get(ns, user)
            if pod is not None and (pod.get("spec") or {}).get("nodeName"):
                self.queue.add(("pod", ns, user))
        if pod_name:
            self.queue.add(("pod", ns, pod_name))
        self._on_group_claim(claim)

    async def _sync(self, key: tuple[str, str, str]) -> None:
        what, ns, name = key
        if what == "pod":
            await self.sync_pod(ns, name)
        elif what == "podgroup":
            await self.sync_pod_group(ns, name)
        else:
            await self.sync_claim(ns, name)

    # ---------------------------------------------------------------- pods

    def _claim(self, ns: str, name: str) -> Obj | None:
        return self.claims.get(ns, name) or self.created.get((ns, name))

    async def sync_pod(self, ns: str, name: str) -> None:
        pod = self.pods.get(ns, name)
        if pod is None or is_pod_done(pod):
            return
        new_statuses: dict[str, str] = {}
        for pc in (pod.get("spec") or {}).get("resourceClaims") or []:
            grouped = self.group_claim_of(pod, pc)
            if grouped is not None:
                # The group's claim: named in the pod status once the PodGroup has it, never one of its own.
                gname = pg.group_claim_name(*grouped)
                if pc.get("resourceClaimTemplateName") and gname and _status_name(pod, pc["name"]) != gname:
                    new_statuses[pc["name"]] = gname
                continue
            if self.waits_for_group(pod):
                continue
            await self._handle_claim(pod, pc, new_statuses)
        written = self.statuses_written.get(pod["metadata"].get("uid", ""), {})
        if new_statuses and any(written.get(k) != v for k, v in new_statuses.items()):
            await self._update_pod_status(pod, new_statuses)
            if not _statuses_include(self.pods.get(ns, name) or pod, new_statuses):
                self.statuses_written.setdefault(pod["metadata"].get("uid", ""), {}).update(new_statuses)
        if not (pod.get("spec") or {}).get("nodeName"):
            return  # the scheduler reserves claims for the pods it binds
        for pc in pod["spec"].get("resourceClaims") or []:
            grouped = self.group_claim_of(pod, pc)
            if grouped is not None:
                group, pgc = grouped
                gname = pg.group_claim_name(group, pgc)
                claim = self._claim(ns, gname) if gname else None
                if claim is None or (pgc.get("resourceClaimTemplateName") and not pg.controlled_by(claim, group)):
                    continue
                status = claim.get("status") or {}
                uid = group["metadata"]["uid"]
                if status.get("allocation") and not any(r.get("uid") == uid for r in status.get("reservedFor") or []) \
                        and len(status.get("reservedFor") or []) < RESERVED_FOR_MAX:
                    await self._reserve_for_group(group, claim)
                continue
            try:
                cname, check_owner = claim_name(pod, pc)
            except ClaimNotFound:
                cname, check_owner = new_statuses.get(pc.get("name", "")), True
            if not cname:
                continue
            claim = self._claim(ns, cname)
            if claim is None or (check_owner and not is_for_pod(pod, claim)):
                continue
            status = claim.get("status") or {}
            if status.get("allocation") and not reserved_for_pod(pod, claim) and \
                    len(status.get("reservedFor") or []) < RESERVED_FOR_MAX:
                await self._reserve_for_pod(pod, claim)

    async def _handle_claim(self, pod: Obj, pc: Obj, new_statuses: dict[str, str]) -> None:
        ns = pod["metadata"]["namespace"]
        try:
            cname, check_owner = claim_name(pod, pc)
        except ClaimNotFound:
            pass
        else:
            if cname is None:
                return  # no claim needed
            claim = self._claim(ns, cname)
            if claim is not None and (not check_owner or is_for_pod(pod, claim)):
                return  # already created
            if claim is not None:
                log.warning("claim %s/%s created for pod %s is no longer owned by it; creating a new one",
                            ns, cname, pod["metadata"]["name"])
        template_name = pc.get("resourceClaimTemplateName")
        if not template_name:
            return
        claim = self._find_pod_claim(pod, pc)
        if claim is None:
            owner = {"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
            claim = await self._create_from_template(ns, template_name, owner, POD_CLAIM_ANNOTATION, pc["name"])
        new_statuses[pc["name"]] = claim["metadata"]["name"]

    async def _create_from_template(self, ns: str, template_name: str, owner: Obj, annotation: str,
                                    claim_name: str) -> Obj:
        """A claim from the template, controlled by `owner` (a pod, or a PodGroup) and named after it and its
        claim (`annotation` records which); counted, and remembered until the informer has it."""
        template = self.templates.get(ns, template_name)
        if template is None:
            template = await self.client.request(
                "GET", resource_path(GROUP, VERSION, "resourceclaimtemplates", ns, template_name))
        tmeta = (template.get("spec") or {}).get("metadata") or {}
        md: Obj = {
            "generateName": generate_name(owner["name"], claim_name),
            "namespace": ns,
            "ownerReferences": [{**owner, "controller": True, "blockOwnerDeletion": True}],
            "annotations": {**(tmeta.get("annotations") or {}), annotation: claim_name},
        }
        if tmeta.get("labels"):
            md["labels"] = dict(tmeta["labels"])
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceClaim", "metadata": md,
                "spec": (template.get("spec") or {}).get("spec") or {}}
        try:
            claim = await self.client.request("POST", resource_path(GROUP, VERSION, "resourceclaims", ns), body)
        except APIStatusError:
            self.creates["failure"] += 1
            raise
        self.creates["success"] += 1
        if self.claims.get(ns, claim["metadata"]["name"]) is None:  # (its watch event can come before the answer)
            self.created[(ns, claim["metadata"]["name"])] = claim
        if owner["kind"] == "Pod":  # found by its pod from now on, also before the informer has it
            self.claims_of_pod.setdefault(owner["uid"], set()).add(claim["metadata"]["name"])
        log.info("created ResourceClaim %s/%s for %s %s", ns, claim["metadata"]["name"], owner["kind"],
                 owner["name"])
        return claim

    def _find_pod_claim(self, pod: Obj, pc: Obj) -> Obj | None:
        """A claim created for this pod claim earlier whose name did not make it into the pod status."""
        ns = pod["metadata"]["namespace"]
        candidates = [c for name in sorted(self.claims_of_pod.get(pod["metadata"].get("uid", ""), ()))
                      if (c := self._claim(ns, name)) is not None]
        for c in candidates:
            if is_for_pod(pod, c) and (c["metadata"].get("annotations") or {}).get(POD_CLAIM_ANNOTATION) == pc["name"]:
                return c
        return None

    async def _update_pod_status(self, pod: Obj, new_statuses: dict[str, str]) -> None:
        statuses = {s["name"]: s.get("resourceClaimName")
                    for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
        statuses.update(new_statuses)
        entries = []
        for n, c in statuses.items():
            entries.append({"name": n, "resourceClaimName": c} if c else {"name": n})
        body = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": pod["metadata"]["name"], "namespace": pod["metadata"]["namespace"]},
                "status": {"resourceClaimStatuses": entries}}
        await self.client.request(
            "PATCH", resource_path("", "v1", "pods", pod["metadata"]["namespace"], pod["metadata"]["name"], "status"),
            body, params={"fieldManager": FIELD_MANAGER, "force": "true"},
            content_type="application/apply-patch+yaml")

    async def _reserve_for_pod(self, pod: Obj, claim: Obj) -> None:
        claim = dict(claim)
        status = dict(claim.get("status") or {})
        status["reservedFor"] = list(status.get("reservedFor") or []) + [
            {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}]
        claim["status"] = status
        m = claim["metadata"]
        await self.client.request("PUT", resource_path(GROUP, VERSION, "resourceclaims", m["namespace"], m["name"],
                                                       "status"), claim)

    # ---------------------------------------------------------------- claims

    async def _pod_still_there(self, ns: str, ref: Obj) -> bool:
        """Whether the pod a reservedFor entry names still exists and may still run."""
        if ref.get("uid") in self.deleted_pods:
            return False
        pod = self.pods.get(ns, ref.get("name", ""))
        if pod is None:
            # Maybe not in the cache yet: be sure before dropping a reservation the scheduler just made.
            try:
                pod = await self.client.request("GET", resource_path("", "v1", "pods", ns, ref.get("name", "")))
            except APIStatusError as e:
                if e.code != 404:
                    raise
                return False
            return pod["metadata"].get("uid") == ref.get("uid")
        if pod["metadata"].get("uid") != ref.get("uid"):
            return False
        return not is_pod_done(pod)

    async def sync_claim(self, ns: str, name: str) -> None:
        claim = self.claims.get(ns, name)
        if claim is None:
            return
        path = resource_path(GROUP, VERSION, "resourceclaims", ns, name)
        reserved = (claim.get("status") or {}).get("reservedFor") or []
        valid = []
        for ref in reserved:
            if ref.get("apiGroup", "") == "" and ref.get("resource") == "pods":
                if await self._pod_still_there(ns, ref):
                    valid.append(ref)
                continue
            if pg.is_group_ref(ref):
                if await self._pod_group_still_there(ns, ref):
                    valid.append(ref)
                continue
            valid.append(ref)  # not a pod: nothing this controller can check
        has_finalizer = FINALIZER in (claim["metadata"].get("finalizers") or [])
        if len(valid) < len(reserved):
            claim = _copy(claim)
            claim["status"]["reservedFor"] = valid
            if not valid:
                claim["status"].pop("reservedFor")
                # The transition from used to unused deallocates what the scheduler allocated (it set the
                # finalizer when it did).
                if has_finalizer:
                    claim["status"].pop("allocation", None)
            claim = await self.client.request("PUT", path + "/status", claim)
            log.info("claim %s/%s: removed %d stale reservation(s)%s", ns, name, len(reserved) - len(valid),
                     "" if valid else ", deallocated")
            if FINALIZER in (claim["metadata"].get("finalizers") or []) and \
                    not (claim.get("status") or {}).get("allocation"):
                claim["metadata"]["finalizers"] = [f for f in claim["metadata"]["finalizers"] if f != FINALIZER]
                claim = await self.client.request("PUT", path, claim)
        elif has_finalizer and claim["metadata"].get("deletionTimestamp") and not valid:
            claim = _copy(claim)
            if claim["status"].get("allocation"):
                claim["status"].pop("allocation")
                claim = await self.client.request("PUT", path + "/status", claim)
            claim["metadata"]["finalizers"] = [f for f in claim["metadata"].get("finalizers") or [] if f != FINALIZER]
            await self.client.request("PUT", path, claim)
            log.info("claim %s/%s: deallocated and finalizer removed", ns, name)
            return
        if valid or claim is None:
            return
        # Not reserved: a claim generated for a pod that will not run any more can go now (the garbage
        # collector would only act once the pod object itself is gone).
        pod_name, pod_uid = owning_pod(claim)
        if not pod_name or claim["metadata"].get("deletionTimestamp"):
            return
        pod = self.pods.get(ns, pod_name)
        if pod is None:
            return  # maybe not seen yet; the garbage collector handles pods that are truly gone
        if pod["metadata"].get("uid") != pod_uid or is_pod_done(pod):
            try:
                await self.client.request("DELETE", path)
                log.info("deleted unused generated claim %s/%s (pod %s)", ns, name, pod_name)
            except APIStatusError as e:
                if e.code != 404:
                    raise

    # ---------------------------------------------------------------- metrics

    def metric_counts(self) -> dict[tuple[str, str, str], int]:
        counts: dict[tuple[str, str, str], int] = {}
        for c in self.claims.list():
            labels = claim_metric_labels(c)
            counts[labels] = counts.get(labels, 0) + 1
        return counts


def _statuses_include(pod: Obj, statuses: dict[str, str]) -> bool:
    """Whether the pod's status.resourceClaimStatuses already name these claims."""
    have = {s.get("name"): s.get("resourceClaimName")
            for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    return all(have.get(k) == v for k, v in statuses.items())


def _status_name(pod: Obj, claim: str) -> str | None:
    for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if s.get("name") == claim:
            return s.get("resourceClaimName")
    return None


def _copy(claim: Obj) -> Obj:
    out = dict(claim)
    out["metadata"] = dict(claim["metadata"])
    out["status"] = dict(claim.get("status") or {})
    return out


def register_metrics(controller: ResourceClaimController, registry: Any = None) -> bool:
    """Expose `dynamic_resource_allocation_resource_claims` (gauge) and `..._resourceclaim_creates_total`
    through prometheus_client, when it is installed. Returns whether they were registered."""
    try:
        from prometheus_client import REGISTRY
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
    except ImportError:  # optional
        return False

    class Collector:
        def collect(self):
            g = GaugeMetricFamily("dynamic_resource_allocation_resource_claims",
                                  "Number of ResourceClaims, categorized by allocation status, admin access, and "
                                  "source.", labels=["allocated", "admin_access", "source"])
            for labels, n in sorted(controller.metric_counts().items()):
                g.add_metric(list(labels), n)
            yield g
            c = CounterMetricFamily("dynamic_resource_allocation_resourceclaim_creates",
                                    "Number of ResourceClaims creation requests, categorized by creation status.",
                                    labels=["status", "admin_access"])
            for status, n in controller.creates.items():
                c.add_metric([status, "false"], n)
            yield c

    reg = registry if registry is not None else REGISTRY
    try:
        reg.register(Collector())
    except ValueError:  # already registered in this process
        return False
    return True
