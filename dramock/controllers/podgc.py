"""Pod garbage collection (kube-controller-manager's `pod-garbage-collector`, pkg/controller/podgc) and the
NoExecute taint eviction (the taint eviction controller's effect).

Every `gc_interval` seconds, acting only through the API:

- orphaned pods: bound to a Node that no longer exists (and did not come back within `quarantine`) are marked
  Failed with a `DisruptionTarget` condition (reason DeletionByPodGC) and deleted with grace 0;
- unscheduled terminating pods (no node will ever confirm their deletion) are deleted with grace 0;
- terminating pods on a NotReady node tainted `node.kubernetes.io/out-of-service` are marked Failed and deleted
  with grace 0;
- pods on a node with a NoExecute taint they do not tolerate, or tolerate for less time than it has been there
  (`node.kubernetes.io/not-ready` / `unreachable` from the node lifecycle controller: 300 s by default, from
  DefaultTolerationSeconds), get a `DisruptionTarget` condition (reason DeletionByTaintManager) and are deleted
  (graceful: a dead kubelet never confirms, so they stay Terminating until the node is tainted out-of-service
  or deleted, as upstream).

A pod marked Failed is terminal, so the claim controller releases, deallocates and deletes its claims.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from dramock import timefmt
from dramock.client.informer import cancel_all, shared_informer
from dramock.client.rest import APIStatusError, Client, resource_path

log = logging.getLogger("dramock.controllers.podgc")

Obj = dict[str, Any]
TERMINAL = ("Succeeded", "Failed")
OUT_OF_SERVICE_TAINT = "node.kubernetes.io/out-of-service"
GC_INTERVAL = 20.0  # upstream's gcCheckPeriod
QUARANTINE = 40.0  # upstream's quarantineTime: a node missing this long is really gone
FIELD_MANAGER = "PodGC"




def node_ready(node: Obj) -> Obj | None:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c
    return None


def _tolerates(t: Obj, taint: Obj) -> bool:
    if t.get("effect") not in (None, "", taint.get("effect")):
        return False
    if t.get("operator") == "Exists":
        return t.get("key") in (None, "", taint.get("key"))
    return t.get("key") == taint.get("key") and (t.get("value") or "") == (taint.get("value") or "")


def tolerated_seconds(pod: Obj, taint: Obj) -> float | None:
    """How long the pod tolerates a NoExecute taint (upstream's getMinTolerationTime over the matching
    tolerations): 0 when none matches, None (forever) when none of them limits it."""
    matching = [t for t in (pod.get("spec") or {}).get("tolerations") or [] if _tolerates(t, taint)]
    if not matching:
        return 0.0
    limits = [float(t["tolerationSeconds"]) for t in matching if t.get("tolerationSeconds") is not None]
    return min(limits) if limits else None


class PodGC:
    def __init__(self, client: Client, gc_interval: float = GC_INTERVAL, quarantine: float = QUARANTINE):
        self.client = client
        self.gc_interval, self.quarantine = gc_interval, quarantine
        self.pods = shared_informer(client, resource_path("", "v1", "pods"))
        self.nodes = shared_informer(client, resource_path("", "v1", "nodes"))
        self._missing_since: dict[str, float] = {}  # node name -> monotonic time first seen missing

    async def run(self, stop: asyncio.Event) -> None:
        tasks = [asyncio.create_task(i.run(stop)) for i in (self.pods, self.nodes)]
        try:
            await self.pods.synced.wait()
            await self.nodes.synced.wait()
            while not stop.is_set():
                try:
                    await self.gc()
                except Exception as e:  # noqa: BLE001 - a controller keeps going
                    log.warning("pod GC: %s", e)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.gc_interval)
        finally:
            await cancel_all(tasks)

    async def gc(self) -> None:
        nodes = {n["metadata"]["name"]: n for n in self.nodes.list()}
        now_m, now_w = time.monotonic(), time.time()
        for name in list(self._missing_since):
            if name in nodes:
                del self._missing_since[name]
        for pod in self.pods.list():
            m, spec = pod["metadata"], pod.get("spec") or {}
            node_name = spec.get("nodeName")
            if not node_name:
                if m.get("deletionTimestamp"):
                    await self._force_delete(pod, None, "unscheduled terminating pod")
                continue
            node = nodes.get(node_name)
            if node is None:
                since = self._missing_since.setdefault(node_name, now_m)
                if now_m - since >= self.quarantine:
                    await self._force_delete(pod, ("DeletionByPodGC", "PodGC: node no longer exists"),
                                             f"node {node_name} no longer exists")
                continue
            taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("effect") == "NoExecute"]
            if m.get("deletionTimestamp"):
                ready = node_ready(node)
                if any(t.get("key") == OUT_OF_SERVICE_TAINT for t in taints) and \
                        (ready is None or ready.get("status") != "True"):
                    await self._force_delete(pod, None, f"terminating on out-of-service node {node_name}")
                continue
            # Taint eviction: a NoExecute taint the pod does not tolerate (long enough) evicts it.
            for taint in taints:
                tolerated = tolerated_seconds(pod, taint)
                added = timefmt.parse_seconds(taint.get("timeAdded")) or now_w
                if tolerated is not None and now_w - added >= tolerated:
                    await self._evict(pod)
                    break

    async def _patch_status(self, pod: Obj, body: Obj) -> None:
        m = pod["metadata"]
        with contextlib.suppress(APIStatusError):
            await self.client.request(
                "PATCH", resource_path("", "v1", "pods", m["namespace"], m["name"], "status"), body,
                content_type="application/strategic-merge-patch+json")

    async def _force_delete(self, pod: Obj, condition: tuple[str, str] | None, why: str) -> None:
        """Upstream's markFailedAndDeletePod(WithCondition): a non-terminal pod becomes Failed, then grace 0."""
        m = pod["metadata"]
        if (pod.get("status") or {}).get("phase") not in TERMINAL:
            status: Obj = {"phase": "Failed"}
            if condition:
                status["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": condition[0],
                                         "message": condition[1], "lastTransitionTime": timefmt.now()}]
            await self._patch_status(pod, {"status": status})
        elif m.get("deletionTimestamp") and m.get("deletionGracePeriodSeconds") == 0:
            return  # already force-deleted; finalizers hold it
        log.info("pod GC: deleting pod %s/%s: %s", m["namespace"], m["name"], why)
        with contextlib.suppress(APIStatusError):
            await self.client.request(
                "DELETE", resource_path("", "v1", "pods", m["namespace"], m["name"]),
                {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                 "preconditions": {"uid": m["uid"]}})

    async def _evict(self, pod: Obj) -> None:
        m = pod["metadata"]
        log.info("evicting pod %s/%s from NotReady node %s", m["namespace"], m["name"], pod["spec"]["nodeName"])
        await self._patch_status(pod, {"status": {"conditions": [{
            "type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint", "lastTransitionTime": timefmt.now()}]}})
        with contextlib.suppress(APIStatusError):
            await self.client.request("DELETE", resource_path("", "v1", "pods", m["namespace"], m["name"]),
                                      {"apiVersion": "v1", "kind": "DeleteOptions",
                                       "preconditions": {"uid": m["uid"]}})
