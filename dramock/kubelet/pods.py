"""Pod lifecycle for pods bound to this node, as far as DRA needs it (KEP-4381 "Managing resources").

A pod runs once each of its ResourceClaims exists, is allocated and is reserved for it: the kubelet calls
NodePrepareResources once per driver (for the claims not yet prepared on this node), then posts Running and
Ready through pods/status. Until then the pod stays Pending and gets a FailedPrepareDynamicResources event.
When a pod is being deleted (deletionTimestamp), the kubelet calls NodeUnprepareResources for the claims no
other pod on the node still uses, then deletes the pod for good (gracePeriodSeconds=0).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from dramock.client.rest import APIStatusError, Client, list_and_watch, resource_path
from dramock.kubelet.node import now_time
from dramock.kubelet.plugins import PluginError, PluginRegistry

log = logging.getLogger("dramock.kubelet.pods")

Obj = dict[str, Any]
EVENT_FAILED_PREPARE = "FailedPrepareDynamicResources"
EVENT_FAILED_UNPREPARE = "FailedUnprepareDynamicResources"
RETRY_INTERVAL = 1.0


class NotReady(Exception):
    """A pod cannot run yet; the message goes into an Event."""


@dataclass
class PreparedClaim:
    namespace: str
    name: str
    uid: str
    drivers: list[str]
    pods: set[str] = field(default_factory=set)  # pod UIDs on this node using the claim
    devices: dict[str, list[Obj]] = field(default_factory=dict)  # driver -> devices from NodePrepareResources

    def wire(self) -> Obj:
        return {"namespace": self.namespace, "uid": self.uid, "name": self.name}


def pod_claim_names(pod: Obj) -> list[tuple[str, str | None]]:
    """(pod claim name, ResourceClaim name or None while its generated claim is not known yet)."""
    statuses = {s.get("name"): s.get("resourceClaimName")
                for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    out = []
    for pc in (pod.get("spec") or {}).get("resourceClaims") or []:
        if pc.get("resourceClaimName"):
            out.append((pc["name"], pc["resourceClaimName"]))
        else:
            out.append((pc["name"], statuses.get(pc["name"])))
    return out


class PodManager:
    def __init__(self, client: Client, node_name: str, plugins: PluginRegistry):
        self.client = client
        self.node_name = node_name
        self.plugins = plugins
        self.pods: dict[str, Obj] = {}  # uid -> pod bound to this node
        self.prepared: dict[str, PreparedClaim] = {}  # claim uid -> state
        self.running: set[str] = set()  # pod UIDs this kubelet started
        self._dirty = asyncio.Event()
        self._last_event: dict[str, str] = {}  # pod uid -> last event message (no repeats)

    def kick(self) -> None:
        self._dirty.set()

    async def _on_pod(self, typ: str, pod: Obj) -> None:
        if (pod.get("spec") or {}).get("nodeName") != self.node_name:
            return
        uid = pod["metadata"]["uid"]
        if typ == "DELETED":
            self.pods.pop(uid, None)
            self.running.discard(uid)
            self._last_event.pop(uid, None)
        else:
            self.pods[uid] = pod
            if (pod.get("status") or {}).get("phase") == "Running" and uid not in self.running:
                self._adopt(pod)  # started by an earlier kubelet run: its claims count as prepared
        self.kick()

    async def _on_claim(self, typ: str, claim: Obj) -> None:
        self.kick()

    def _adopt(self, pod: Obj) -> None:
        # The claims it uses are looked up again when it terminates (_rediscover).
        self.running.add(pod["metadata"]["uid"])

    async def run(self, stop: asyncio.Event) -> None:
        informers = [asyncio.create_task(list_and_watch(self.client, resource_path("", "v1", "pods"),
                                                        self._on_pod, stop)),
                     asyncio.create_task(list_and_watch(self.client, resource_path("resource.k8s.io", "v1",
                                                                                   "resourceclaims"),
                                                        self._on_claim, stop))]
        try:
            while not stop.is_set():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._dirty.wait(), RETRY_INTERVAL)
                self._dirty.clear()
                for pod in list(self.pods.values()):
                    try:
                        await self.sync_pod(pod)
                    except Exception as e:  # noqa: BLE001 - one pod's failure must not stop the others
                        log.warning("pod %s/%s: %s", pod["metadata"].get("namespace"), pod["metadata"]["name"], e)
        finally:
            for t in informers:
                t.cancel()
            for t in informers:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t

    async def sync_pod(self, pod: Obj) -> None:
        m = pod["metadata"]
        uid = m["uid"]
        if m.get("deletionTimestamp"):
            await self._terminate(pod)
            return
        if uid in self.running or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        try:
            claims = await self._claims_for(pod)
            await self._prepare(pod, claims)
        except (NotReady, PluginError) as e:
            await self._event(pod, EVENT_FAILED_PREPARE, str(e))
            return
        await self._set_running(pod)
        self.running.add(uid)
        log.info("pod %s/%s running on %s", m.get("namespace"), m["name"], self.node_name)

    async def _claims_for(self, pod: Obj) -> list[Obj]:
        ns, name, uid = pod["metadata"].get("namespace", ""), pod["metadata"]["name"], pod["metadata"]["uid"]
        claims = []
        for pod_claim, claim_name in pod_claim_names(pod):
            if claim_name is None:
                raise NotReady(f"waiting for the ResourceClaim of pod claim {pod_claim!r} to be created")
            try:
                claim = await self.client.request(
                    "GET", resource_path("resource.k8s.io", "v1", "resourceclaims", ns, claim_name))
            except APIStatusError as e:
                if e.code == 404:
                    raise NotReady(f"resource claim {ns}/{claim_name} does not exist")
                raise
            status = claim.get("status") or {}
            if not status.get("allocation"):
                raise NotReady(f"resource claim {ns}/{claim_name} is not allocated")
            if not any(r.get("resource") == "pods" and r.get("uid") == uid for r in status.get("reservedFor") or []):
                raise NotReady(f"pod {ns}/{name} ({uid}) is not allowed to use resource claim {ns}/{claim_name}: "
                               "the claim is not reserved for it")
            claims.append(claim)
        return claims

    async def _prepare(self, pod: Obj, claims: list[Obj]) -> None:
        by_driver: dict[str, list[PreparedClaim]] = {}
        pending: list[PreparedClaim] = []
        for claim in claims:
            cm = claim["metadata"]
            if cm["uid"] in self.prepared:
                continue
            results = ((claim["status"]["allocation"].get("devices") or {}).get("results")) or []
            drivers = sorted({r["driver"] for r in results if r.get("driver")})
            pc = PreparedClaim(cm.get("namespace", ""), cm["name"], cm["uid"], drivers)
            pending.append(pc)
            for d in drivers:
                by_driver.setdefault(d, []).append(pc)
        for driver in by_driver:
            if self.plugins.get(driver) is None:
                raise NotReady(f"DRA driver {driver} is not registered on node {self.node_name}")
        # One NodePrepareResources per driver, with all of the pod's claims that driver still has to prepare.
        for driver, pcs in sorted(by_driver.items()):
            plugin = self.plugins.get(driver)
            if plugin is None:
                raise NotReady(f"DRA driver {driver} is not registered on node {self.node_name}")
            answer = await plugin.node_prepare_resources([pc.wire() for pc in pcs])
            for pc in pcs:
                res = answer.get(pc.uid)
                if res is None:
                    raise PluginError(f"NodePrepareResources on {driver}: claim {pc.namespace}/{pc.name} "
                                      "is missing from the response")
                if res["error"]:
                    raise PluginError(f"NodePrepareResources on {driver}: claim {pc.namespace}/{pc.name}: "
                                      f"{res['error']}")
                pc.devices[driver] = res["devices"]
        for pc in pending:
            self.prepared[pc.uid] = pc
        for claim in claims:
            self.prepared[claim["metadata"]["uid"]].pods.add(pod["metadata"]["uid"])

    async def _terminate(self, pod: Obj) -> None:
        uid = pod["metadata"]["uid"]
        # Claims of this pod that no other live pod on the node uses get unprepared first.
        mine = [pc for pc in self.prepared.values() if uid in pc.pods]
        if uid in self.running and not mine:
            mine = await self._rediscover(pod)  # started before this kubelet run
        others_using = {pc.uid for pc in mine
                        if any(p != uid and p in self.pods and not self.pods[p]["metadata"].get("deletionTimestamp")
                               for p in pc.pods)}
        last = [pc for pc in mine if pc.uid not in others_using]
        by_driver: dict[str, list[PreparedClaim]] = {}
        for pc in last:
            for d in pc.drivers:
                by_driver.setdefault(d, []).append(pc)
        try:
            for driver, pcs in sorted(by_driver.items()):
                plugin = self.plugins.get(driver)
                if plugin is None:
                    raise NotReady(f"DRA driver {driver} is not registered on node {self.node_name}; "
                                   "cannot unprepare its claims")
                answer = await plugin.node_unprepare_resources([pc.wire() for pc in pcs])
                for pc in pcs:
                    res = answer.get(pc.uid)
                    if res is None or res["error"]:
                        raise PluginError(f"NodeUnprepareResources on {driver}: claim {pc.namespace}/{pc.name}: "
                                          f"{'missing from the response' if res is None else res['error']}")
        except (NotReady, PluginError) as e:
            await self._event(pod, EVENT_FAILED_UNPREPARE, str(e))
            return
        for pc in mine:
            pc.pods.discard(uid)
            if pc.uid not in others_using and not pc.pods:
                self.prepared.pop(pc.uid, None)
        try:
            await self.client.request(
                "DELETE", resource_path("", "v1", "pods", pod["metadata"].get("namespace"), pod["metadata"]["name"]),
                {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                 "preconditions": {"uid": uid}})
        except APIStatusError as e:
            if e.code not in (404, 409):
                raise
        self.running.discard(uid)
        self.pods.pop(uid, None)

    async def _rediscover(self, pod: Obj) -> list[PreparedClaim]:
        out = []
        ns = pod["metadata"].get("namespace", "")
        for _, claim_name in pod_claim_names(pod):
            if not claim_name:
                continue
            try:
                claim = await self.client.request(
                    "GET", resource_path("resource.k8s.io", "v1", "resourceclaims", ns, claim_name))
            except APIStatusError:
                continue
            cm = claim["metadata"]
            results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
            pc = self.prepared.setdefault(cm["uid"], PreparedClaim(
                ns, cm["name"], cm["uid"], sorted({r["driver"] for r in results or [] if r.get("driver")})))
            pc.pods.add(pod["metadata"]["uid"])
            out.append(pc)
        return out

    async def _set_running(self, pod: Obj) -> None:
        now = now_time()
        spec = pod.get("spec") or {}
        containers = [{"name": c["name"], "image": c.get("image", ""), "imageID": "",
                       "containerID": f"dramock://{uuid.uuid4().hex}", "ready": True, "started": True,
                       "restartCount": 0, "state": {"running": {"startedAt": now}}}
                      for c in spec.get("containers") or []]
        conditions = [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
                      for t in ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")]
        body = {"status": {"phase": "Running", "conditions": conditions, "hostIP": "127.0.0.1",
                           "hostIPs": [{"ip": "127.0.0.1"}], "podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}],
                           "startTime": now, "containerStatuses": containers}}
        m = pod["metadata"]
        await self.client.request("PATCH", resource_path("", "v1", "pods", m.get("namespace"), m["name"], "status"),
                                  body, content_type="application/strategic-merge-patch+json")

    async def _event(self, pod: Obj, reason: str, message: str) -> None:
        m = pod["metadata"]
        key = m["uid"]
        if self._last_event.get(key) == f"{reason}:{message}":
            return
        self._last_event[key] = f"{reason}:{message}"
        log.info("pod %s/%s: %s: %s", m.get("namespace"), m["name"], reason, message)
        now = now_time()
        ns = m.get("namespace") or "default"
        event = {"apiVersion": "v1", "kind": "Event",
                 "metadata": {"generateName": f"{m['name']}.", "namespace": ns},
                 "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": m["name"],
                                    "uid": m["uid"], "resourceVersion": m.get("resourceVersion", "")},
                 "reason": reason, "message": message, "type": "Warning",
                 "source": {"component": "kubelet", "host": self.node_name},
                 "firstTimestamp": now, "lastTimestamp": now, "count": 1,
                 "reportingComponent": "kubelet", "reportingInstance": self.node_name}
        try:
            await self.client.request("POST", resource_path("", "v1", "events", ns), event)
        except APIStatusError as e:
            log.debug("event for pod %s/%s: %s", ns, m["name"], e)
