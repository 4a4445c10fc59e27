"""What the scheduler reports: FailedScheduling / Scheduled events (events.k8s.io/v1, as kube-scheduler's
recorder writes them, not repeated within a minute) and the pod's PodScheduled condition."""

from __future__ import annotations

import asyncio
import logging
import socket
import time

import aiohttp

from dramock import timefmt
from dramock.client.rest import APIStatusError, resource_path
from dramock.scheduler.base import SchedulerBase
from dramock.scheduler.framework import Obj

log = logging.getLogger("dramock.scheduler")


# Identical FailedScheduling events for one pod are not repeated more often than this.
EVENT_REPEAT_INTERVAL = 60.0


def now_time() -> str:
    return timefmt.now()


class Events(SchedulerBase):
    """Events and the PodScheduled condition."""

    async def _failed(self, pod: Obj, message: str, condition: bool = True, reason: str = "Unschedulable",
                      clear_nominated: bool = False) -> None:
        m = pod["metadata"]
        log.info("pod %s/%s unschedulable: %s", m.get("namespace"), m["name"], message)
        if condition:
            await self._set_condition(pod, message, reason, clear_nominated)
        uid = m.get("uid", "")
        last = self._last_event.get(uid)
        now = time.monotonic()
        if last is not None and last[0] == message and now - last[1] < EVENT_REPEAT_INTERVAL:
            return
        self._last_event[uid] = (message, now)
        await self._event(pod, "Warning", "FailedScheduling", message)

    async def _set_condition(self, pod: Obj, message: str, reason: str = "Unschedulable",
                             clear_nominated: bool = False) -> None:
        m = pod["metadata"]
        current = self.pods.get(m.get("namespace"), m["name"]) or pod
        conditions = list((current.get("status") or {}).get("conditions") or [])
        old = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
        nominated = (current.get("status") or {}).get("nominatedNodeName")
        if old is not None and old.get("status") == "False" and old.get("reason") == reason and \
                old.get("message") == message and not (clear_nominated and nominated):
            return
        cond = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": old["lastTransitionTime"] if old and old.get("status") == "False"
                and old.get("lastTransitionTime") else now_time()}
        conditions = [c for c in conditions if c.get("type") != "PodScheduled"] + [cond]
        status: Obj = {"conditions": conditions}
        if clear_nominated:  # even when our informer has not seen the nomination yet
            status["nominatedNodeName"] = None
        try:
            await self.client.request(
                "PATCH", resource_path("", "v1", "pods", m.get("namespace"), m["name"], "status"),
                {"metadata": {"uid": m.get("uid")}, "status": status},
                content_type="application/strategic-merge-patch+json")
        except (APIStatusError, aiohttp.ClientError, asyncio.TimeoutError) as e:
            log.debug("pod %s/%s: setting PodScheduled: %s", m.get("namespace"), m["name"], e)

    async def _event(self, pod: Obj, type_: str, reason: str, message: str, action: str | None = None) -> None:
        """An events.k8s.io/v1 Event, as kube-scheduler's event recorder writes it: reportingController is the
        scheduler name, reportingInstance `<scheduler name>-<hostname>`, action Scheduling or Binding unless
        given."""
        m = pod["metadata"]
        ns = m.get("namespace") or "default"
        event = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
                 "metadata": {"name": f"{m['name']}.{time.time_ns():x}", "namespace": ns},
                 "eventTime": timefmt.now_micro(),
                 "reportingController": self.scheduler_name,
                 "reportingInstance": f"{self.scheduler_name}-{socket.gethostname()}",
                 "action": action or ("Scheduling" if reason == "FailedScheduling" else "Binding"),
                 "reason": reason, "note": message, "type": type_,
                 "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": m["name"],
                               "uid": m.get("uid", ""), "resourceVersion": m.get("resourceVersion", "")}}
        try:
            await self.client.request("POST", resource_path("events.k8s.io", "v1", "events", ns), event)
        except (APIStatusError, aiohttp.ClientError, asyncio.TimeoutError) as e:
            log.debug("event for pod %s/%s: %s", ns, m["name"], e)
