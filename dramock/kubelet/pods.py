"""Pod lifecycle for pods bound to this node, as far as DRA needs it (KEP-4381 "Managing resources").

A pod runs once each of its ResourceClaims exists, is allocated and is reserved for it: the kubelet calls
NodePrepareResources once per driver (for the claims not yet prepared on this node), then posts Running and
Ready through pods/status, and records the CDI device IDs each container got in a Normal
`PreparedDynamicResources` event (what `kubectl describe pod` shows). Until then the pod stays Pending and
gets a FailedPrepareDynamicResources event; driver failures are retried with exponential backoff (the event's
count goes up with every attempt), API-side reasons (claim not allocated, not reserved) on every change.

A pod is done with its claims when it is being deleted (deletionTimestamp), when it reached Succeeded or
Failed, or when it vanished from the API server: the kubelet then calls NodeUnprepareResources for the claims
no other live pod on the node still uses. Unprepare failures are retried with backoff and reported as
FailedUnprepareDynamicResources events; a pod being deleted stays Terminating until its claims are unprepared,
then it reaches a terminal phase (Succeeded when its containers exit 0 on SIGTERM, as the pause image does, or
Failed; `dramock.io/exit-code` chooses) with Ready/ContainersReady False, and the kubelet confirms the deletion
(gracePeriodSeconds=0). A pod held by finalizers stays, terminal, so the claim controller releases its claims.

kwok-style completion: a running pod annotated `dramock.io/complete-after-seconds: "N"` finishes N seconds
after it started: Succeeded, or Failed when it is also annotated `dramock.io/exit-code: "<non-zero>"`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from dramock import timefmt
from dramock.client.informer import cancel_all, list_and_watch, newer
from dramock.client.rest import APIStatusError, Client, resource_path
from dramock.faults import PREPARE_ERROR, PREPARE_TIMEOUT
from dramock.kubelet.faults import KubeletFaults
from dramock.kubelet.logs import ContainerLogs, cdi_edits
from dramock.kubelet.plugins import DRAPluginClient, PluginError, PluginRegistry
from dramock.schemas import podgroups

log = logging.getLogger("dramock.kubelet.pods")

Obj = dict[str, Any]
EVENT_FAILED_PREPARE = "FailedPrepareDynamicResources"
EVENT_FAILED_UNPREPARE = "FailedUnprepareDynamicResources"
EVENT_PREPARED = "PreparedDynamicResources"
COMPLETE_AFTER_ANNOTATION = "dramock.io/complete-after-seconds"
EXIT_CODE_ANNOTATION = "dramock.io/exit-code"
# Pod claim names are DNS labels, so this key never collides with one.
EXTENDED_POD_CLAIM = "<extended resources>"
RETRY_INTERVAL = 1.0  # resync of pods waiting on the API (claims not allocated/reserved yet)
BACKOFF_INITIAL = 0.5  # driver failures: 0.5 s, 1 s, 2 s, ... up to BACKOFF_MAX
BACKOFF_MAX = 30.0
TERMINAL = ("Succeeded", "Failed")


class NotReady(Exception):
    """A pod cannot run yet; the message goes into an Event."""


@dataclass
class PreparedClaim:
    namespace: str
    name: str
    uid: str
    drivers: list[str]  # the drivers NodeUnprepareResources goes to
    pods: set[str] = field(default_factory=set)  # pod UIDs on this node using the claim
    devices: dict[str, list[Obj]] = field(default_factory=dict)  # driver -> devices from NodePrepareResources

    def wire(self) -> Obj:
        return {"namespace": self.namespace, "uid": self.uid, "name": self.name}


def pod_claim_names(pod: Obj) -> list[tuple[str, str | None]]:
    """(pod claim name, ResourceClaim name or None while its generated claim is not known yet); the claim the
    scheduler created for DRA-backed extended resources (KEP-5004) comes last, under EXTENDED_POD_CLAIM."""
    status = pod.get("status") or {}
    statuses = {s.get("name"): s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or []}
    out = []
    for pc in (pod.get("spec") or {}).get("resourceClaims") or []:
        if pc.get("resourceClaimName"):
            out.append((pc["name"], pc["resourceClaimName"]))
        else:
            out.append((pc["name"], statuses.get(pc["name"])))
    extended = (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    if extended:
        out.append((EXTENDED_POD_CLAIM, extended))
    return out


def container_claim_refs(pod: Obj, container: Obj) -> list[tuple[str, str | None]]:
    """(pod claim name, request or None) for each claim a container uses: its resources.claims, and the
    requests of the extended-resource claim mapped to it in status.extendedResourceClaimStatus."""
    refs = [(r.get("name"), r.get("request")) for r in (container.get("resources") or {}).get("claims") or []]
    ext = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
    refs += [(EXTENDED_POD_CLAIM, m.get("requestName")) for m in ext.get("requestMappings") or []
             if m.get("containerName") == container.get("name")]
    return refs


def _phase(pod: Obj) -> str:
    return (pod.get("status") or {}).get("phase") or "Pending"



def _exit_code(pod: Obj) -> int:
    """The exit code of the pod's containers when they finish: `dramock.io/exit-code`, else 0 (as the pause
    image exits on SIGTERM)."""
    try:
        return int((pod["metadata"].get("annotations") or {}).get(EXIT_CODE_ANNOTATION) or 0)
    except ValueError:
        return 1


def _drivers_of(claim: Obj, skipping: str = "") -> list[str]:
    """The drivers of the claim's devices; with `skipping` (an operation such as NodePrepareResources), only
    those for which some device does not skip it (DRAOptionalNodeOperations: a gRPC call is skipped when all
    of a driver's devices in the claim list it, or `*`, in skipNodeOperations)."""
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
    return sorted({r["driver"] for r in results or [] if r.get("driver") and not (
        skipping and {skipping, "*"} & set(r.get("skipNodeOperations") or ()))})


class PodManager:
    def __init__(self, client: Client, node_name: str, plugins: PluginRegistry,
                 backoff_initial: float = BACKOFF_INITIAL, backoff_max: float = BACKOFF_MAX,
                 faults: KubeletFaults | None = None, logs: ContainerLogs | None = None,
                 cdi_dirs: list[str] | None = None):
        self.client = client
        self.faults = faults
        self.logs = logs if logs is not None else ContainerLogs()
        self.cdi_dirs = cdi_dirs or []
        self.node_name = node_name
        self.plugins = plugins
        self.backoff_initial, self.backoff_max = backoff_initial, backoff_max
        self.pods: dict[str, Obj] = {}  # uid -> pod bound to this node
        self.prepared: dict[str, PreparedClaim] = {}  # claim uid -> state
        self.running: set[str] = set()  # pod UIDs running (started by this kubelet or adopted)
        self.released: set[str] = set()  # pod UIDs whose claims are unprepared (or were never this run's)
        self._adopted: set[str] = set()  # running pods started before this kubelet run: claims not known yet
        self._orphans: dict[str, Obj] = {}  # pods deleted from the API before their claims were unprepared
        self._started: dict[str, float] = {}  # pod uid -> wall-clock start (for completion)
        self._retry: dict[str, tuple[int, float]] = {}  # pod uid -> (failures, monotonic time of next attempt)
        self._dirty = asyncio.Event()
        self._events: dict[str, dict[tuple[str, str], list]] = {}  # pod uid -> {(reason, msg): [name, count]}

    def kick(self) -> None:
        self._dirty.set()

    async def _on_pod(self, typ: str, pod: Obj) -> None:
        if (pod.get("spec") or {}).get("nodeName") != self.node_name:
            return
        uid = pod["metadata"]["uid"]
        if typ == "DELETED":
            known = self.pods.pop(uid, None)
            if uid not in self.released and (uid in self._adopted or any(uid in pc.pods
                                                                         for pc in self.prepared.values())):
                self._orphans[uid] = known or pod  # gone without us: its claims still need unpreparing
            for s in (self.running, self.released):
                s.discard(uid)
            for d in (self._started, self._events):
                d.pop(uid, None)
            self.logs.forget(pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
            if uid not in self._orphans:
                self._retry.pop(uid, None)
        else:
            first = uid not in self.pods
            self.pods[uid] = pod
            if first and _phase(pod) in TERMINAL:
                self.released.add(uid)  # finished before this kubelet run: its claims were released then
            elif _phase(pod) == "Running" and uid not in self.running:
                self._adopt(pod)
        self.kick()

    async def _on_claim(self, typ: str, claim: Obj) -> None:
        self.kick()

    def _adopt(self, pod: Obj) -> None:
        """A pod started by an earlier kubelet run: it runs on; its claims are looked up when needed."""
        uid = pod["metadata"]["uid"]
        self.running.add(uid)
        self._adopted.add(uid)
        self._started[uid] = timefmt.parse_seconds((pod.get("status") or {}).get("startTime")) or time.time()

    def _next_wake(self) -> float:
        wake = RETRY_INTERVAL
        now_m, now_w = time.monotonic(), time.time()
        for _, at in self._retry.values():
            wake = min(wake, at - now_m)
        for uid in self.running:
            due = self._completion_due(self.pods.get(uid))
            if due is not None:
                wake = min(wake, due - now_w)
        return max(wake, 0.02)

    async def run(self, stop: asyncio.Event) -> None:
        informers = [asyncio.create_task(list_and_watch(self.client, resource_path("", "v1", "pods"),
                                                        self._on_pod, stop)),
                     asyncio.create_task(list_and_watch(self.client, resource_path("resource.k8s.io", "v1",
                                                                                   "resourceclaims"),
                                                        self._on_claim, stop))]
        try:
            while not stop.is_set():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._dirty.wait(), self._next_wake())
                self._dirty.clear()
                for pod in list(self.pods.values()):
                    try:
                        await self.sync_pod(pod)
                    except Exception as e:  # noqa: BLE001 - one pod's failure must not stop the others
                        log.warning("pod %s/%s: %s", pod["metadata"].get("namespace"), pod["metadata"]["name"], e)
                for uid, pod in list(self._orphans.items()):
                    await self._sync_orphan(uid, pod)
        finally:
            await cancel_all(informers)

    def _due(self, uid: str) -> bool:
        retry = self._retry.get(uid)
        return retry is None or retry[1] <= time.monotonic()

    def _backoff(self, uid: str) -> float:
        failures = self._retry.get(uid, (0, 0.0))[0] + 1
        delay = min(self.backoff_initial * 2 ** (failures - 1), self.backoff_max)
        self._retry[uid] = (failures, time.monotonic() + delay)
        return delay

    async def sync_pod(self, pod: Obj) -> None:
        m = pod["metadata"]
        uid = m["uid"]
        if not self._due(uid):
            return
        releasing = bool(m.get("deletionTimestamp")) or _phase(pod) in TERMINAL
        try:
            if m.get("deletionTimestamp"):
                await self._terminate(pod)
            elif _phase(pod) in TERMINAL:
                if uid not in self.released:
                    await self._release(pod)
                    self.released.add(uid)
            elif uid in self.running:
                await self._maybe_complete(pod)
            else:
                await self._start(pod)
        except NotReady as e:
            # Waiting on the API (claim not created/allocated/reserved): retried on every change, one event
            # per distinct message. A release waiting on a driver is backed off like a driver failure.
            await self._event(pod, EVENT_FAILED_UNPREPARE if releasing else EVENT_FAILED_PREPARE, str(e),
                              repeat=releasing)
            if releasing:
                self._backoff(uid)
            return
        except PluginError as e:
            delay = self._backoff(uid)
            log.info("pod %s/%s: %s (retrying in %.1fs)", m.get("namespace"), m["name"], e, delay)
            await self._event(pod, EVENT_FAILED_UNPREPARE if releasing else EVENT_FAILED_PREPARE, str(e),
                              repeat=True)
            return
        self._retry.pop(uid, None)

    async def _sync_orphan(self, uid: str, pod: Obj) -> None:
        if not self._due(uid):
            return
        try:
            await self._release(pod)
        except (NotReady, PluginError) as e:
            delay = self._backoff(uid)
            log.warning("pod %s/%s (deleted): unpreparing its claims: %s (retrying in %.1fs)",
                        pod["metadata"].get("namespace"), pod["metadata"]["name"], e, delay)
            return
        self._orphans.pop(uid, None)
        self._retry.pop(uid, None)
        self._adopted.discard(uid)

    # --- start -------------------------------------------------------------------------------------------------

    async def _start(self, pod: Obj) -> None:
        m = pod["metadata"]
        uid = m["uid"]
        claims = await self._claims_for(pod)
        await self._prepare(pod, claims)
        updated = await self._set_running(pod)
        self.running.add(uid)
        self._started[uid] = time.time()
        if uid in self.pods and newer(updated, self.pods[uid]):
            self.pods[uid] = updated
        log.info("pod %s/%s running on %s", m.get("namespace"), m["name"], self.node_name)
        await self._report_cdi_devices(updated, claims)

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
            if not any(r.get("resource") == "pods" and r.get("uid") == uid for r in status.get("reservedFor") or []) \
                    and not podgroups.reserved_for_pods_group(pod, claim):
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
            pc = PreparedClaim(cm.get("namespace", ""), cm["name"], cm["uid"],
                               _drivers_of(claim, skipping="NodeUnprepareResources"))
            pending.append(pc)
            for d in _drivers_of(claim, skipping="NodePrepareResources"):
                by_driver.setdefault(d, []).append(pc)
        for driver in by_driver:
            if self.plugins.get(driver) is None:
                raise NotReady(f"DRA driver {driver} is not registered on node {self.node_name}")
        # One NodePrepareResources per driver, with all of the pod's claims that driver still has to prepare.
        for driver, pcs in sorted(by_driver.items()):
            plugin = self.plugins.get(driver)
            if plugin is None:
                raise NotReady(f"DRA driver {driver} is not registered on node {self.node_name}")
            answer = await self._call_prepare(plugin, driver, pcs)
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

    async def _call_prepare(self, plugin: DRAPluginClient, driver: str, pcs: list[PreparedClaim]) -> dict[str, Obj]:
        """NodePrepareResources, unless an injected fault (prepare-error, prepare-timeout) says otherwise."""
        if self.faults is not None and (rule := await self.faults.fire(PREPARE_ERROR, driver)):
            raise PluginError(f"NodePrepareResources on {driver}: UNAVAILABLE: dramock injected fault "
                              f"{rule['id']}: {rule['rule']}")
        answer = await plugin.node_prepare_resources([pc.wire() for pc in pcs])
        if self.faults is not None and (rule := await self.faults.fire(PREPARE_TIMEOUT, driver)):
            # The driver did the work; the answer is lost as if the deadline passed. The retry must find the
            # claims prepared already (drivers must be idempotent).
            raise PluginError(f"NodePrepareResources on {driver}: DEADLINE_EXCEEDED: dramock injected fault "
                              f"{rule['id']}: {rule['rule']}")
        return answer

    async def _report_cdi_devices(self, pod: Obj, claims: list[Obj]) -> None:
        """One Normal event per container that got devices: its CDI device IDs (as the runtime would get them)."""
        by_pod_claim = dict(pod_claim_names(pod))
        uid_by_name = {c["metadata"]["name"]: c["metadata"]["uid"] for c in claims}
        spec = pod.get("spec") or {}
        for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
            ids: list[str] = []
            for pod_claim, request in container_claim_refs(pod, container):
                pc = self.prepared.get(uid_by_name.get(by_pod_claim.get(pod_claim) or "", ""))
                if pc is None:
                    continue
                for driver in sorted(pc.devices):
                    for d in pc.devices[driver]:
                        if request and not any(rn == request or rn.startswith(request + "/")
                                               for rn in d.get("requestNames") or []):
                            continue
                        ids += [i for i in d.get("cdiDeviceIDs") or [] if i not in ids]
            if ids:
                await self._event(pod, EVENT_PREPARED, f'container "{container["name"]}": CDI devices '
                                  + ", ".join(ids), type_="Normal")
            self._log_start(pod, container, ids)

    def _log_start(self, pod: Obj, container: Obj, ids: list[str]) -> None:
        """The container's view at start: its CDI devices and the edits their CDI specs give it."""
        m = pod["metadata"]
        ns, name = m.get("namespace", ""), m["name"]
        lines = [f"dramock: container {container['name']} of pod {ns}/{name} started on node {self.node_name} "
                 "(no process runs: these lines are what it would see)",
                 f"dramock: image {container.get('image', '')}",
                 "dramock: phase Running"]
        lines.append("dramock: CDI devices: " + (", ".join(ids) if ids else "(none)"))
        edits = cdi_edits(self.cdi_dirs, ids) if ids else {"env": [], "mounts": [], "deviceNodes": []}
        lines += [f"dramock: env {e}" for e in edits["env"]]
        lines += [f"dramock: env {e['name']}={e.get('value', '')}" for e in container.get("env") or []
                  if "value" in e]
        lines += [f"dramock: mount {mt.get('hostPath', '')} -> {mt.get('containerPath', '')}"
                  for mt in edits["mounts"]]
        lines += [f"dramock: device node {dn.get('path', '')}" for dn in edits["deviceNodes"]]
        self.logs.write(ns, name, container["name"], "\n".join(lines))

    def _log_end(self, pod: Obj, exit_code: int, why: str) -> None:
        m = pod["metadata"]
        ns = m.get("namespace", "")
        phase = "Succeeded" if exit_code == 0 and _phase(pod) == "Running" else "Failed"
        for c in (pod.get("spec") or {}).get("containers") or []:
            if self.logs.get(ns, m["name"], c["name"]) is None:
                continue
            self.logs.write(ns, m["name"], c["name"], f"dramock: {why}: exit code {exit_code}, phase {phase}")
            self.logs.finish(ns, m["name"], c["name"])

    # --- completion ------------------------------------------------------------------------------------------------

    def _completion_due(self, pod: Obj | None) -> float | None:
        if pod is None or pod["metadata"].get("deletionTimestamp") or _phase(pod) in TERMINAL:
            return None
        raw = (pod["metadata"].get("annotations") or {}).get(COMPLETE_AFTER_ANNOTATION)
        if raw is None:
            return None
        try:
            seconds = float(raw)
        except ValueError:
            return None
        started = self._started.get(pod["metadata"]["uid"])
        return None if started is None else started + max(seconds, 0.0)

    async def _maybe_complete(self, pod: Obj) -> None:
        due = self._completion_due(pod)
        if due is None or time.time() < due:
            return
        self._log_end(pod, _exit_code(pod), "completed")
        updated = await self._set_terminated(pod, _exit_code(pod))
        m = pod["metadata"]
        log.info("pod %s/%s %s (%s)", m.get("namespace"), m["name"], _phase(updated), COMPLETE_AFTER_ANNOTATION)
        if m["uid"] in self.pods and newer(updated, self.pods[m["uid"]]):
            self.pods[m["uid"]] = updated
        self.kick()  # next round: release its claims

    # --- release ---------------------------------------------------------------------------------------------------

    def _still_used(self, pc: PreparedClaim, by: str) -> bool:
        """Whether a live pod other than `by` on this node uses the prepared claim."""
        for uid in pc.pods:
            p = self.pods.get(uid)
            if uid != by and p is not None and not p["metadata"].get("deletionTimestamp") \
                    and _phase(p) not in TERMINAL:
                return True
        return False

    async def _release(self, pod: Obj) -> None:
        """Unprepare the claims of a finished pod that no other live pod on the node uses.

        Raises NotReady/PluginError; the caller retries with backoff."""
        uid = pod["metadata"]["uid"]
        if self._adopted:
            await self._rediscover_adopted(pod)
        mine = [pc for pc in self.prepared.values() if uid in pc.pods]
        last = [pc for pc in mine if not self._still_used(pc, uid)]
        by_driver: dict[str, list[PreparedClaim]] = {}
        for pc in last:
            for d in pc.drivers:
                by_driver.setdefault(d, []).append(pc)
        for driver, pcs in sorted(by_driver.items()):
            plugin = self.plugins.get(driver)
            if plugin is None:
                raise NotReady(f"DRA driver {driver} is not registered on node {self.node_name}; "
                               "cannot unprepare its claims")
            answer = await plugin.node_unprepare_resources([pc.wire() for pc in pcs])
            failed = []
            for pc in pcs:
                res = answer.get(pc.uid)
                if res is None or res["error"]:
                    failed.append(f"claim {pc.namespace}/{pc.name}: "
                                  f"{'missing from the response' if res is None else res['error']}")
                else:
                    pc.drivers = [d for d in pc.drivers if d != driver]  # done with this driver
            if failed:
                raise PluginError(f"NodeUnprepareResources on {driver}: " + "; ".join(failed))
        done = {pc.uid for pc in last}
        for pc in mine:
            if pc.uid in done:
                self.prepared.pop(pc.uid, None)
            else:
                pc.pods.discard(uid)

    async def _rediscover_adopted(self, releasing: Obj) -> None:
        """Learn the claims of all adopted pods at once, so that releasing one sees the others as users."""
        for uid in list(self._adopted):
            pod = self.pods.get(uid) or (releasing if releasing["metadata"]["uid"] == uid else None)
            if pod is None:
                pod = self._orphans.get(uid)
            if pod is None:
                self._adopted.discard(uid)
                continue
            ns = pod["metadata"].get("namespace", "")
            for _, claim_name in pod_claim_names(pod):
                if not claim_name:
                    continue
                try:
                    claim = await self.client.request(
                        "GET", resource_path("resource.k8s.io", "v1", "resourceclaims", ns, claim_name))
                except APIStatusError as e:
                    if e.code == 404:
                        continue
                    raise NotReady(f"looking up resource claim {ns}/{claim_name}: {e}") from e
                cm = claim["metadata"]
                pc = self.prepared.setdefault(cm["uid"], PreparedClaim(
                    ns, cm["name"], cm["uid"], _drivers_of(claim, skipping="NodeUnprepareResources")))
                pc.pods.add(uid)
            self._adopted.discard(uid)

    async def _terminate(self, pod: Obj) -> None:
        """Graceful deletion as the 1.37 kubelet does it: the claims are unprepared, the pod reaches a terminal
        phase (its containers "exit" on SIGTERM: 0, or `dramock.io/exit-code`), then the kubelet confirms the
        deletion with gracePeriodSeconds=0. A pod held by finalizers stays, terminal, until they go."""
        m = pod["metadata"]
        uid = m["uid"]
        if uid not in self.released:
            await self._release(pod)  # the pod stays Terminating until this succeeds
            self.released.add(uid)
        if _phase(pod) not in TERMINAL:
            self._log_end(pod, _exit_code(pod), "terminated on deletion (SIGTERM)")
            pod = await self._set_terminated(pod, _exit_code(pod))
            if uid in self.pods and newer(pod, self.pods[uid]):
                self.pods[uid] = pod
        if pod["metadata"].get("deletionGracePeriodSeconds") == 0:
            return  # already confirmed; only finalizers keep it
        try:
            await self.client.request(
                "DELETE", resource_path("", "v1", "pods", m.get("namespace"), m["name"]),
                {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                 "preconditions": {"uid": uid}})
        except APIStatusError as e:
            if e.code not in (404, 409):
                raise
        self.running.discard(uid)

    # --- status and events -------------------------------------------------------------------------------------

    async def _set_running(self, pod: Obj) -> Obj:
        now = timefmt.now()
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
        return await self.client.request(
            "PATCH", resource_path("", "v1", "pods", m.get("namespace"), m["name"], "status"), body,
            content_type="application/strategic-merge-patch+json")

    async def _set_terminated(self, pod: Obj, exit_code: int) -> Obj:
        """Post the terminal phase: Succeeded when every container exited 0, else Failed (upstream's getPhase
        for a terminal pod). Containers that never started (a pod deleted while Pending) get upstream's
        ContainerStatusUnknown/137 and the pod fails."""
        now = timefmt.now()
        status = pod.get("status") or {}
        ran = _phase(pod) == "Running"
        previous = {c.get("name"): c for c in status.get("containerStatuses") or []}
        containers = []
        for c in (pod.get("spec") or {}).get("containers") or []:
            prev = previous.get(c["name"]) or {}
            started = ((prev.get("state") or {}).get("running") or {}).get("startedAt") or status.get("startTime")
            if ran:
                cid = prev.get("containerID") or f"dramock://{uuid.uuid4().hex}"
                terminated = {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                              "startedAt": started, "finishedAt": now, "containerID": cid}
            else:
                cid = ""
                terminated = {"exitCode": 137, "reason": "ContainerStatusUnknown",
                              "message": "The container could not be located when the pod was terminated",
                              "startedAt": None, "finishedAt": None}
            containers.append({"name": c["name"], "image": c.get("image", ""), "imageID": "", "containerID": cid,
                               "ready": False, "started": False, "restartCount": 0,
                               "state": {"terminated": terminated}})
        conditions = {c.get("type"): c for c in status.get("conditions") or []}
        for t in ("PodReadyToStartContainers", "ContainersReady", "Ready"):
            conditions[t] = {"type": t, "status": "False", "lastProbeTime": None, "lastTransitionTime": now,
                             **({"reason": "PodCompleted"} if t != "PodReadyToStartContainers" else {})}
        succeeded = ran and exit_code == 0
        body = {"status": {"phase": "Succeeded" if succeeded else "Failed",
                           "conditions": list(conditions.values()), "containerStatuses": containers}}
        m = pod["metadata"]
        return await self.client.request(
            "PATCH", resource_path("", "v1", "pods", m.get("namespace"), m["name"], "status"), body,
            content_type="application/merge-patch+json")

    async def _event(self, pod: Obj, reason: str, message: str, type_: str = "Warning",
                     repeat: bool = False) -> None:
        """Post an event about the pod; a repeat of one already posted bumps its count when `repeat`."""
        m = pod["metadata"]
        seen = self._events.setdefault(m["uid"], {})
        now = timefmt.now()
        ns = m.get("namespace") or "default"
        known = seen.get((reason, message))
        if known is not None:
            if not repeat or not known[0]:
                return
            known[1] += 1
            with contextlib.suppress(APIStatusError):
                await self.client.request("PATCH", resource_path("", "v1", "events", ns, known[0]),
                                          {"count": known[1], "lastTimestamp": now},
                                          content_type="application/merge-patch+json")
            return
        log.info("pod %s/%s: %s: %s", m.get("namespace"), m["name"], reason, message)
        event = {"apiVersion": "v1", "kind": "Event",
                 "metadata": {"generateName": f"{m['name']}.", "namespace": ns},
                 "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": m["name"],
                                    "uid": m["uid"], "resourceVersion": m.get("resourceVersion", "")},
                 "reason": reason, "message": message, "type": type_,
                 "source": {"component": "kubelet", "host": self.node_name},
                 "firstTimestamp": now, "lastTimestamp": now, "count": 1,
                 "reportingComponent": "kubelet", "reportingInstance": self.node_name}
        seen[(reason, message)] = ["", 1]
        try:
            created = await self.client.request("POST", resource_path("", "v1", "events", ns), event)
            seen[(reason, message)][0] = created["metadata"]["name"]
        except APIStatusError as e:
            log.debug("event for pod %s/%s: %s", ns, m["name"], e)
