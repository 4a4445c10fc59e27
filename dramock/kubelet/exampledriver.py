"""The example DRA driver (`gpu.example.com`): the reference a driver author reads.

    python -m dramock.kubelet.exampledriver --server URL --node-name NODE [--driver gpu.example.com] [--devices 4]
        [--partitions N] [--shared-devices N] [--model M] [--memory-gi G] [--config FILE] [--cdi-dir DIR]

What it does, in the order a real driver does it:

1. Registration: serves `pluginregistration.Registration` on `<registry-dir>/<driver>-reg.sock` and DRAPlugin v1
   and v1beta1 on `<plugins-dir>/<driver>/dra.sock`. Every NotifyRegistrationStatus(registered=true) (a kubelet
   start or restart; the kubelet deletes the node's slices when it starts) makes it (re)publish.
2. ResourceSlices: one pool named after the node. Devices (see `DeviceConfig`):
   - plain GPUs `gpu-<i>`: attributes model, index, uuid, driverVersion, `resource.kubernetes.io/pcieRoot`,
     capacity memory;
   - with `partitions` > 0 the GPUs are partitionable (MIG-style): one counter set per GPU (`gpu-<i>-counters`:
     memory, compute) in its own slice, the whole GPU and its partitions `gpu-<i>-part-<j>` consume from it,
     with compatibility groups (`whole`, `partition`; alpha DRADeviceCompatibilityGroups, dropped when off);
   - `shared-<i>`: multi-allocatable devices (allowMultipleAllocations, memory with a requestPolicy).
   The pool generation is bumped whenever the published slices change or went missing; slices that are no
   longer wanted are deleted. With `--config FILE` (JSON or YAML, DeviceConfig keys) the file is re-read when
   it changes, and the driver resyncs its slices every `--resync-seconds`.
3. NodePrepareResources: GETs each claim and refuses one that is missing, whose UID differs from the request
   or that is not allocated (as upstream's kubelet-plugin library does); writes a CDI spec file (CDI 0.6.0)
   `<cdi-dir>/<driver>-<claimUID>.json` and answers with CDI IDs `<driver>/gpu=<device>`; writes the claim's
   `status.devices` (a Ready condition and the CDI IDs as data) through the /status subresource.
4. NodeUnprepareResources: removes the CDI spec file and its `status.devices` entries; idempotent.
5. Attach (DRADeviceBindingConditions, KEP-5007), what a fabric driver's controller does: `fabric-<i>` devices
   (`DeviceConfig.fabric`) carry `bindsToNode`, `bindingConditions: [Attached]` and
   `bindingFailureConditions: [AttachFailed]`. For every claim the scheduler allocated and reserved with such a
   device of this driver (from any pool, a hand-made fabric pool included) whose allocation is pinned to this
   node, the driver "attaches" it after `attach_delay_seconds` by setting `Attached=True` in the claim's
   `status.devices`, or sets `AttachFailed=True` for the first `attach_failures` attempts of each claim. The
   claim annotations `<driver>/attach-delay` (seconds or a Go duration) and `<driver>/attach-failures`
   override both per claim.

Failure injection (for tests of the kubelet's retries): a claim annotated `<driver>/fail-prepare: MESSAGE` or
`<driver>/fail-unprepare: MESSAGE` makes the matching call fail for that claim with MESSAGE.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import json
import logging
import os
import signal
import sys
import uuid
from dataclasses import asdict, dataclass, fields
from typing import Any

import aiohttp
import grpc

from dramock import configure_logging, timefmt
from dramock.client.rest import APIStatusError, Client, resource_path
from dramock.client.retry import retry_on_conflict
from dramock.kubelet import sockets
from dramock.kubelet.kubelet import DEFAULT_ROOT_DIR
from dramock.kubelet.proto import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
    pluginregistration_v1_pb2,
    pluginregistration_v1_pb2_grpc,
)

log = logging.getLogger("dramock.kubelet.exampledriver")
Obj = dict[str, Any]

DEFAULT_DRIVER = "gpu.example.com"
CDI_VERSION = "0.6.0"
SLICES_PATH = resource_path("resource.k8s.io", "v1", "resourceslices")
MAX_DEVICES_PER_SLICE = 128
MAX_ADVANCED_DEVICES_PER_SLICE = 64  # devices consuming counters (upstream limit)
DEFAULT_RESYNC_SECONDS = 10.0
ATTACHED = "Attached"  # the binding condition of fabric devices
ATTACH_FAILED = "AttachFailed"  # their binding failure condition


# --- devices and slices ------------------------------------------------------------------------------------


@dataclass
class DeviceConfig:
    """What the driver publishes. Keys of a `--config` file are these field names."""

    gpus: int = 4
    model: str = "dramock-gpu"
    memory_gi: int = 80
    partitions: int = 0  # > 0: partitionable GPUs with this many partitions each (counters, MIG-style)
    shared: int = 0  # multi-allocatable devices (allowMultipleAllocations, consumable memory)
    fabric: int = 0  # fabric-attached devices with binding conditions (the driver attaches them)
    attach_delay_seconds: float = 1.0  # how long an attach takes
    attach_failures: int = 0  # the first N attaches of every claim fail (AttachFailed=True)
    driver_version: str = "1.0.0"

    @classmethod
    def from_dict(cls, data: Obj, base: DeviceConfig | None = None) -> DeviceConfig:
        known = {f.name for f in fields(cls)}
        aliases = {"devices": "gpus", "memoryGi": "memory_gi", "sharedDevices": "shared",
                   "driverVersion": "driver_version", "fabricDevices": "fabric",
                   "attachDelaySeconds": "attach_delay_seconds", "attachFailures": "attach_failures"}
        values = asdict(base) if base is not None else {}
        for k, v in (data or {}).items():
            k = aliases.get(k, k)
            if k not in known:
                raise ValueError(f"unknown device config key {k!r} (known: {sorted(known)})")
            values[k] = v
        return cls(**values)


def load_config(path: str, base: DeviceConfig | None = None) -> DeviceConfig:
    import yaml

    with open(path, encoding="utf-8") as f:
        return DeviceConfig.from_dict(yaml.safe_load(f) or {}, base)


def _uuid(node: str, name: str) -> str:
    return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_URL, f"dramock://{node}/{name}"))


def _attrs(cfg: DeviceConfig, node: str, name: str, index: int, **extra: Obj) -> Obj:
    return {"model": {"string": cfg.model}, "index": {"int": index}, "uuid": {"string": _uuid(node, name)},
            "driverVersion": {"version": cfg.driver_version},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{index // 4:02x}"}, **extra}


def build_devices(cfg: DeviceConfig, node: str) -> tuple[list[Obj], list[Obj]]:
    """(sharedCounters, devices) of the pool."""
    counters: list[Obj] = []
    devices: list[Obj] = []
    mem = f"{cfg.memory_gi}Gi"
    for i in range(cfg.gpus):
        name = f"gpu-{i}"
        dev: Obj = {"name": name, "attributes": _attrs(cfg, node, name, i),
                    "capacity": {"memory": {"value": mem}}}
        if cfg.partitions <= 0:
            devices.append(dev)
            continue
        counter_set = f"{name}-counters"
        counters.append({"name": counter_set, "counters": {"memory": {"value": mem},
                                                           "compute": {"value": str(cfg.partitions)}}})
        dev["consumesCounters"] = [{"counterSet": counter_set, "counters": {"memory": {"value": mem},
                                                                            "compute": {"value": str(cfg.partitions)}},
                                    "compatibilityGroups": ["whole"]}]
        dev["attributes"]["partitionable"] = {"bool": True}
        devices.append(dev)
        part_mem = f"{max(1, cfg.memory_gi // cfg.partitions)}Gi"
        for j in range(cfg.partitions):
            pname = f"{name}-part-{j}"
            devices.append({
                "name": pname,
                "attributes": _attrs(cfg, node, pname, i, parentUUID={"string": _uuid(node, name)},
                                     profile={"string": f"1c.{part_mem.lower()}"}),
                "capacity": {"memory": {"value": part_mem}},
                "consumesCounters": [{"counterSet": counter_set,
                                      "counters": {"memory": {"value": part_mem}, "compute": {"value": "1"}},
                                      "compatibilityGroups": ["partition"]}]})
    for i in range(cfg.shared):
        name = f"shared-{i}"
        devices.append({"name": name, "allowMultipleAllocations": True,
                        "attributes": _attrs(cfg, node, name, cfg.gpus + i, shared={"bool": True}),
                        "capacity": {"memory": {"value": mem, "requestPolicy": {
                            "default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}}}})
    for i in range(cfg.fabric):
        devices.append(fabric_device(f"fabric-{i}", _attrs(cfg, node, f"fabric-{i}", cfg.gpus + cfg.shared + i),
                                     mem))
    return counters, devices


def fabric_device(name: str, attributes: Obj, memory: str) -> Obj:
    """A device that must be attached before its pod may be bound (KEP-5007)."""
    return {"name": name, "attributes": {**attributes, "fabric": {"bool": True}},
            "capacity": {"memory": {"value": memory}}, "bindsToNode": True,
            "bindingConditions": [ATTACHED], "bindingFailureConditions": [ATTACH_FAILED]}


def build_slices(driver: str, node: str, cfg: DeviceConfig) -> list[Obj]:
    """The pool's slices without pool generation/count (the publisher fills them in)."""
    counters, devices = build_devices(cfg, node)
    base = f"{node}-{driver.replace('.', '-')}"[:240]
    out: list[Obj] = []
    if counters:
        out.append({"name": f"{base}-counters", "spec": {"sharedCounters": counters}})
    per_slice = MAX_ADVANCED_DEVICES_PER_SLICE if counters else MAX_DEVICES_PER_SLICE
    for k in range(0, max(len(devices), 1), per_slice):
        chunk = devices[k:k + per_slice]
        if not chunk and out:
            break
        out.append({"name": base if k == 0 else f"{base}-{k // per_slice}", "spec": {"devices": chunk}})
    return [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": s["name"]},
             "spec": {"driver": driver, "nodeName": node, **s["spec"]}} for s in out]


def resource_slice(driver: str, node: str, devices: int) -> Obj:
    """The single slice of `devices` plain GPUs (generation 1), as a test or a seed file wants it."""
    s = build_slices(driver, node, DeviceConfig(gpus=devices))[0]
    s["spec"]["pool"] = {"name": node, "generation": 1, "resourceSliceCount": 1}
    return s


class SlicePublisher:
    """Keeps the pool's slices on the server equal to the desired ones (a tiny resourceslice controller).

    The generation is bumped when the desired slices change, or when what is on the server is not what this
    publisher last wrote (deleted by a restarting kubelet, edited by someone else)."""

    def __init__(self, client: Client, driver: str, node: str):
        self.client, self.driver, self.node = client, driver, node
        self.generation = 0
        self._desired: list[Obj] | None = None
        self._written: dict[str, str] = {}  # slice name -> resourceVersion we wrote

    async def _existing(self) -> dict[str, Obj]:
        listed = await self.client.request("GET", SLICES_PATH, params={
            "fieldSelector": f"spec.nodeName={self.node},spec.driver={self.driver}"})
        return {s["metadata"]["name"]: s for s in listed.get("items", [])
                if (s.get("spec") or {}).get("pool", {}).get("name") == self.node}

    async def sync(self, desired: list[Obj]) -> bool:
        """Publish `desired` (from build_slices); returns whether anything was written."""
        existing = await self._existing()
        current = {name: s["metadata"]["resourceVersion"] for name, s in existing.items()}
        if desired == self._desired and current == self._written:
            return False
        gens = [int(s["spec"]["pool"].get("generation") or 0) for s in existing.values()]
        self.generation = max([self.generation, *gens]) + 1
        written: dict[str, str] = {}
        for s in desired:
            body = copy.deepcopy(s)
            body["spec"]["pool"] = {"name": self.node, "generation": self.generation,
                                    "resourceSliceCount": len(desired)}
            out = await self._put(body, existing.get(body["metadata"]["name"]))
            written[out["metadata"]["name"]] = out["metadata"]["resourceVersion"]
        for name in existing.keys() - written.keys():
            with contextlib.suppress(APIStatusError):
                await self.client.request("DELETE", f"{SLICES_PATH}/{name}")
        self._desired, self._written = copy.deepcopy(desired), written
        log.info("driver %s on %s: published %d slice(s), pool generation %d", self.driver, self.node,
                 len(desired), self.generation)
        return True

    async def _put(self, body: Obj, current: Obj | None) -> Obj:
        path = f"{SLICES_PATH}/{body['metadata']['name']}"
        if current is None:
            try:
                return await self.client.request("POST", SLICES_PATH, body)
            except APIStatusError as e:
                if e.code != 409:
                    raise
                current = await self.client.request("GET", path)
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        return await self.client.request("PUT", path, body)


# --- gRPC ----------------------------------------------------------------------------------------------------


class _Registration(pluginregistration_v1_pb2_grpc.RegistrationServicer):
    def __init__(self, driver: str, endpoint: str):
        self.driver, self.endpoint = driver, endpoint
        self.registered = asyncio.Event()
        self.kick = asyncio.Event()  # set on every successful registration: (re)publish

    async def GetInfo(self, request, context):
        return pluginregistration_v1_pb2.PluginInfo(type="DRAPlugin", name=self.driver, endpoint=self.endpoint,
                                                    supported_versions=["v1.DRAPlugin", "v1beta1.DRAPlugin"])

    async def NotifyRegistrationStatus(self, request, context):
        if request.plugin_registered:
            self.registered.set()
            self.kick.set()
        else:
            log.error("kubelet refused the registration of %s: %s", self.driver, request.error)
        return pluginregistration_v1_pb2.RegistrationStatusResponse()



class ExampleDriver:
    """The node-local half of the driver: prepare/unprepare (CDI files, claim device status)."""

    def __init__(self, client: Client, driver: str, node: str, cdi_dir: str):
        self.client, self.driver, self.node, self.cdi_dir = client, driver, node, cdi_dir

    def cdi_kind(self) -> str:
        return f"{self.driver}/gpu"

    def cdi_path(self, claim_uid: str) -> str:
        return os.path.join(self.cdi_dir, f"{self.driver}-{claim_uid}.json")

    async def _get_claim(self, namespace: str, name: str) -> Obj | None:
        try:
            return await self.client.request("GET", resource_path("resource.k8s.io", "v1", "resourceclaims",
                                                                  namespace, name))
        except APIStatusError as e:
            if e.code == 404:
                return None
            raise

    async def prepare(self, namespace: str, name: str, claim_uid: str) -> tuple[list[Obj], str]:
        """(devices as {request_names, pool_name, device_name, share_id, cdi_device_ids}, error)."""
        ref = f"{namespace}/{name}"
        try:
            claim = await self._get_claim(namespace, name)
        except APIStatusError as e:
            return [], f"get resource claim {ref}: {e}"
        if claim is None:
            return [], f"resource claim {ref} not found"
        if claim["metadata"]["uid"] != claim_uid:
            return [], (f"resource claim {ref}: UID mismatch: the kubelet asked for {claim_uid}, "
                        f"the API server has {claim['metadata']['uid']}")
        allocation = (claim.get("status") or {}).get("allocation")
        if not allocation:
            return [], f"resource claim {ref} is not allocated"
        fail = (claim["metadata"].get("annotations") or {}).get(f"{self.driver}/fail-prepare")
        if fail:
            return [], f"injected failure: {fail}"
        results = [r for r in ((allocation.get("devices") or {}).get("results") or [])
                   if r.get("driver") == self.driver]
        kind = self.cdi_kind()
        devices = [{"request_names": [r["request"]], "pool_name": r["pool"], "device_name": r["device"],
                    "share_id": r.get("shareID", ""), "cdi_device_ids": [f"{kind}={r['device']}"]}
                   for r in results]
        self._write_cdi_spec(claim_uid, [r["device"] for r in results])
        await self._write_device_status(claim, results)
        return devices, ""

    async def unprepare(self, namespace: str, name: str, claim_uid: str) -> str:
        claim = None
        with contextlib.suppress(APIStatusError):
            claim = await self._get_claim(namespace, name)
        if claim is not None and claim["metadata"]["uid"] != claim_uid:
            claim = None  # a new claim of the same name: not ours to touch
        if claim is not None:
            fail = (claim["metadata"].get("annotations") or {}).get(f"{self.driver}/fail-unprepare")
            if fail:
                return f"injected failure: {fail}"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.cdi_path(claim_uid))
        if claim is not None:
            await self._write_device_status(claim, [])
        return ""

    def _write_cdi_spec(self, claim_uid: str, devices: list[str]) -> None:
        spec = {"cdiVersion": CDI_VERSION, "kind": self.cdi_kind(),
                "devices": [{"name": d, "containerEdits": {"env": [f"GPU_DEVICE_{n}={d}"]}}
                            for n, d in enumerate(devices)]}
        os.makedirs(self.cdi_dir, exist_ok=True)
        path = self.cdi_path(claim_uid)
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(spec, f, indent=2)
        os.replace(tmp, path)

    async def _write_device_status(self, claim: Obj, results: list[Obj]) -> None:
        """Replace this driver's entries of status.devices (best effort; a conflict is retried)."""
        now = timefmt.now()
        ours = []
        for r in results:
            # Conditions set before (the attach's binding conditions) stay beside Ready.
            kept = [c for d in (claim.get("status") or {}).get("devices") or []
                    if (d.get("driver"), d.get("pool"), d.get("device")) == (self.driver, r["pool"], r["device"])
                    for c in d.get("conditions") or [] if c.get("type") != "Ready"]
            entry: Obj = {"driver": self.driver, "pool": r["pool"], "device": r["device"],
                          "conditions": kept + [{"type": "Ready", "status": "True", "reason": "Prepared",
                                                 "message": f"prepared on node {self.node}",
                                                 "lastTransitionTime": now}],
                          "data": {"cdiDeviceIDs": [f"{self.cdi_kind()}={r['device']}"],
                                   "uuid": _uuid(r["pool"], r["device"])}}
            if r.get("shareID"):
                entry["shareID"] = r["shareID"]
            ours.append(entry)
        m = claim["metadata"]
        path = resource_path("resource.k8s.io", "v1", "resourceclaims", m.get("namespace"), m["name"], "status")
        current: Obj | None = claim

        async def attempt() -> None:
            nonlocal current
            if current is None:  # after a conflict: the claim afresh
                fresh = await self._get_claim(m.get("namespace", ""), m["name"])
                if fresh is None or fresh["metadata"]["uid"] != m["uid"]:
                    return
                current = fresh
            status = current.setdefault("status", {})
            others = [d for d in status.get("devices") or [] if d.get("driver") != self.driver]
            if not ours and len(others) == len(status.get("devices") or []):
                return
            status["devices"] = others + ours
            if not status["devices"]:
                del status["devices"]
            try:
                await self.client.request("PUT", path, current)
            except APIStatusError as e:
                if e.code == 409:
                    current = None
                    raise
                log.warning("claim %s/%s: writing status.devices: %s", m.get("namespace"), m["name"], e)

        with contextlib.suppress(APIStatusError):  # best effort: conflicts until the attempts are spent
            await retry_on_conflict(attempt)


class Attacher:
    """The attach half of a fabric driver (KEP-5007): sets the binding conditions of devices allocated with this
    driver and pinned to this node, after a delay, or a failure condition for the first attempts of a claim."""

    def __init__(self, client: Client, driver: str, node: str, config: DeviceConfig):
        self.client, self.driver, self.node, self.config = client, driver, node, config
        self.attempts: dict[str, int] = {}  # claim uid -> attaches tried
        self._pending: dict[tuple[str, str], asyncio.Task] = {}  # (claim uid, allocationTimestamp) -> attach

    async def run(self, stop: asyncio.Event) -> None:
        from dramock.client.informer import Informer

        informer = Informer(self.client, resource_path("resource.k8s.io", "v1", "resourceclaims"))
        informer.add_handler(lambda _t, claim, _old: self.observe(claim))
        try:
            await informer.run(stop)
        finally:
            for t in self._pending.values():
                t.cancel()
            await asyncio.gather(*self._pending.values(), return_exceptions=True)

    def _waiting_results(self, claim: Obj) -> list[Obj]:
        """This driver's results with binding conditions that nobody reported on yet, when the scheduler waits
        for them on this node."""
        status = claim.get("status") or {}
        allocation = status.get("allocation") or {}
        if not status.get("reservedFor") or not _pinned_to(allocation.get("nodeSelector"), self.node):
            return []
        reported = {(d.get("pool"), d.get("device")) for d in status.get("devices") or []
                    if d.get("driver") == self.driver and any(
                        c.get("type") in (ATTACHED, ATTACH_FAILED) for c in d.get("conditions") or [])}
        return [r for r in (allocation.get("devices") or {}).get("results") or []
                if r.get("driver") == self.driver and r.get("bindingConditions")
                and (r["pool"], r["device"]) not in reported]

    def observe(self, claim: Obj) -> None:
        if not self._waiting_results(claim):
            return
        key = (claim["metadata"]["uid"], claim["status"]["allocation"].get("allocationTimestamp", ""))
        if key in self._pending:
            return
        task = asyncio.create_task(self._attach(claim, key))
        self._pending[key] = task
        task.add_done_callback(lambda _t: self._pending.pop(key, None))

    def _setting(self, claim: Obj, name: str, default: float) -> float:
        value = (claim["metadata"].get("annotations") or {}).get(f"{self.driver}/{name}")
        if value is None:
            return default
        try:
            from dramock.scheduler.bindingconditions import parse_duration

            return parse_duration(value)
        except ValueError:
            log.warning("claim %s: annotation %s/%s=%r is not a number", claim["metadata"]["name"], self.driver,
                        name, value)
            return default

    async def _attach(self, claim: Obj, key: tuple[str, str]) -> None:
        m = claim["metadata"]
        await asyncio.sleep(self._setting(claim, "attach-delay", self.config.attach_delay_seconds))
        path = resource_path("resource.k8s.io", "v1", "resourceclaims", m.get("namespace"), m["name"])

        async def write_once() -> None:
            try:
                current = await self.client.request("GET", path)
            except APIStatusError:
                return
            allocation = (current.get("status") or {}).get("allocation") or {}
            if current["metadata"]["uid"] != key[0] or allocation.get("allocationTimestamp", "") != key[1]:
                return  # deallocated or allocated anew meanwhile
            results = self._waiting_results(current)
            if not results:
                return
            uid = key[0]
            self.attempts[uid] = attempt = self.attempts.get(uid, 0) + 1
            failures = int(self._setting(current, "attach-failures", self.config.attach_failures))
            failed = attempt <= failures
            now = timefmt.now()
            status = current["status"]
            devices = list(status.get("devices") or [])
            for r in results:
                if failed:
                    conds = [{"type": t, "status": "True", "reason": "AttachFailed", "lastTransitionTime": now,
                              "message": f"simulated attach failure {attempt} of {failures} on node {self.node}"}
                             for t in r.get("bindingFailureConditions") or [ATTACH_FAILED]]
                else:
                    conds = [{"type": t, "status": "True", "reason": "Attached", "lastTransitionTime": now,
                              "message": f"attached to node {self.node}"} for t in r["bindingConditions"]]
                entry = next((d for d in devices if (d.get("driver"), d.get("pool"), d.get("device")) ==
                              (self.driver, r["pool"], r["device"])), None)
                if entry is None:
                    entry = {"driver": self.driver, "pool": r["pool"], "device": r["device"]}
                    if r.get("shareID"):
                        entry["shareID"] = r["shareID"]
                    devices.append(entry)
                types = {c["type"] for c in conds}
                entry["conditions"] = [c for c in entry.get("conditions") or [] if c.get("type") not in types] + conds
            status["devices"] = devices
            try:
                await self.client.request("PUT", path + "/status", current)
            except APIStatusError as e:
                self.attempts[uid] -= 1
                if e.code == 409:
                    raise
                log.warning("claim %s/%s: writing the attach result: %s", m.get("namespace"), m["name"], e)
                return
            log.info("driver %s on %s: %s %s/%s", self.driver, self.node, "failed to attach" if failed else "attached",
                     m.get("namespace"), m["name"])

        with contextlib.suppress(APIStatusError):  # conflicts until the attempts are spent: given up, as before
            await retry_on_conflict(write_once)


def _pinned_to(selector: Obj | None, node: str) -> bool:
    """Whether an allocation's node selector names exactly this node (node-local pools and bindsToNode)."""
    for term in (selector or {}).get("nodeSelectorTerms") or []:
        for f in term.get("matchFields") or []:
            if f.get("key") == "metadata.name" and f.get("operator") == "In" and f.get("values") == [node]:
                return True
    return False


def _dra_servicer(pb2: Any, base: type, drv: ExampleDriver) -> Any:
    class DRAPlugin(base):
        async def NodePrepareResources(self, request, context):
            resp = pb2.NodePrepareResourcesResponse()
            for c in request.claims:
                devices, error = await drv.prepare(c.namespace, c.name, c.uid)
                out = resp.claims[c.uid]
                out.SetInParent()
                if error:
                    log.warning("NodePrepareResources %s/%s: %s", c.namespace, c.name, error)
                    out.error = error
                    continue
                for d in devices:
                    out.devices.append(pb2.Device(**d))
            return resp

        async def NodeUnprepareResources(self, request, context):
            resp = pb2.NodeUnprepareResourcesResponse()
            for c in request.claims:
                out = resp.claims[c.uid]
                out.SetInParent()
                error = await drv.unprepare(c.namespace, c.name, c.uid)
                if error:
                    log.warning("NodeUnprepareResources %s/%s: %s", c.namespace, c.name, error)
                    out.error = error
            return resp

    return DRAPlugin()


async def _wait_any(events: list[asyncio.Event], timeout: float) -> None:
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()


async def run_driver(server: str, node_name: str, driver: str = DEFAULT_DRIVER, devices: int = 4,
                     root_dir: str = DEFAULT_ROOT_DIR, registry_dir: str = "", plugins_dir: str = "",
                     stop: asyncio.Event | None = None, config: DeviceConfig | None = None,
                     config_file: str = "", cdi_dir: str = "",
                     resync_seconds: float = DEFAULT_RESYNC_SECONDS) -> None:
    """Run the example driver for one node until `stop` is set (or SIGINT/SIGTERM when None).

    `config` (default: `devices` plain GPUs) says what to publish; `config_file` overrides it and is re-read
    when it changes. CDI spec files go to `cdi_dir` (default `<root_dir>/cdi`)."""
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
    cfg = config or DeviceConfig(gpus=devices)
    registry_dir = registry_dir or sockets.registry_dir(root_dir)
    plugins_dir = plugins_dir or sockets.plugins_dir(root_dir)
    cdi_dir = cdi_dir or os.path.join(root_dir, "cdi")
    reg_sock = sockets.registration_socket(registry_dir, driver)
    dra_sock = sockets.plugin_socket(plugins_dir, driver)
    for p in (reg_sock, dra_sock):
        sockets.check_socket_path(p)
    os.makedirs(registry_dir, exist_ok=True)
    os.makedirs(os.path.dirname(dra_sock), exist_ok=True)
    for p in (reg_sock, dra_sock):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(p)
    client = Client(server, f"dramock-exampledriver/{node_name}")
    drv = ExampleDriver(client, driver, node_name, cdi_dir)
    dra_server = grpc.aio.server()
    dra_v1_pb2_grpc.add_DRAPluginServicer_to_server(
        _dra_servicer(dra_v1_pb2, dra_v1_pb2_grpc.DRAPluginServicer, drv), dra_server)
    dra_v1beta1_pb2_grpc.add_DRAPluginServicer_to_server(
        _dra_servicer(dra_v1beta1_pb2, dra_v1beta1_pb2_grpc.DRAPluginServicer, drv), dra_server)
    registration = _Registration(driver, dra_sock)
    reg_server = grpc.aio.server()
    pluginregistration_v1_pb2_grpc.add_RegistrationServicer_to_server(registration, reg_server)
    publisher = SlicePublisher(client, driver, node_name)
    attacher = Attacher(client, driver, node_name, cfg)
    attach_task = asyncio.create_task(attacher.run(stop))
    config_mtime: int | None = None
    # A failed publish is retried with backoff (5 ms doubling up to the resync period), as upstream's
    # resourceslice controller requeues with a rate limiter, not only at the next resync.
    retry_delay = 0.0
    try:
        _bind(dra_server, dra_sock)
        _bind(reg_server, reg_sock)
        await dra_server.start()
        await reg_server.start()
        while not stop.is_set():
            await _wait_any([stop, registration.kick], retry_delay or resync_seconds)
            registration.kick.clear()
            if stop.is_set():
                break
            if config_file:
                try:
                    mtime = os.stat(config_file).st_mtime_ns
                    if mtime != config_mtime:
                        cfg = load_config(config_file, config or DeviceConfig(gpus=devices))
                        attacher.config = cfg
                        config_mtime = mtime
                except (OSError, ValueError, TypeError) as e:
                    log.error("device config %s: %s", config_file, e)
            # Publish only once a kubelet took the registration: the kubelet wipes this node's slices at start.
            if not registration.registered.is_set():
                continue
            try:
                await publisher.sync(build_slices(driver, node_name, cfg))
                retry_delay = 0.0
            except Exception as e:  # noqa: BLE001 - keep serving; retried with backoff
                retry_delay = min(max(retry_delay * 2, 0.005), resync_seconds)
                log.warning("driver %s on %s: publishing slices: %s (retrying in %.3fs)", driver, node_name, e,
                            retry_delay)
    finally:
        attach_task.cancel()
        await asyncio.gather(attach_task, return_exceptions=True)
        await reg_server.stop(1)
        await dra_server.stop(1)
        for p in (reg_sock, dra_sock):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p)
        await client.close()


def _bind(server: grpc.aio.Server, path: str) -> None:
    try:
        server.add_insecure_port(f"unix:{path}")
    except RuntimeError as e:  # grpc says only "Failed to bind to address"
        raise sockets.SocketPathError(f"cannot bind unix socket {path} ({len(os.fsencode(path))} bytes): {e}") from e


def device_class(driver: str) -> Obj:
    """The DeviceClass a driver's Helm chart would install: every device of this driver."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": driver},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}}


async def install_device_class(server: str, driver: str = DEFAULT_DRIVER) -> None:
    """Create the driver's DeviceClass unless it exists (an admin's own class of that name wins)."""
    client = Client(server, "dramock-exampledriver/install")
    try:
        await client.request("POST", resource_path("resource.k8s.io", "v1", "deviceclasses"), device_class(driver))
    except APIStatusError as e:
        if e.code != 409:
            raise
    finally:
        await client.close()


def add_driver_flags(p: argparse.ArgumentParser) -> None:
    """The example driver's flags, shared by `dramock example-driver` and `python -m dramock.kubelet.exampledriver`."""
    p.add_argument("--kubeconfig", default="", help="kubeconfig naming the server")
    p.add_argument("--server", default="", help="server URL (instead of --kubeconfig)")
    p.add_argument("--node-name", required=True)
    p.add_argument("--driver", default=DEFAULT_DRIVER)
    p.add_argument("--devices", type=int, default=8, help="number of GPUs")
    p.add_argument("--model", default=DeviceConfig.model)
    p.add_argument("--memory-gi", type=int, default=DeviceConfig.memory_gi, help="memory per GPU in GiB")
    p.add_argument("--partitions", type=int, default=0,
                   help="make each GPU partitionable into this many partitions (shared counters)")
    p.add_argument("--shared-devices", type=int, default=0,
                   help="number of multi-allocatable devices (allowMultipleAllocations)")
    p.add_argument("--fabric-devices", type=int, default=0,
                   help="number of fabric-attached devices with binding conditions (the driver attaches them)")
    p.add_argument("--attach-delay", type=float, default=DeviceConfig.attach_delay_seconds, metavar="SECONDS",
                   help="how long attaching a device with binding conditions takes")
    p.add_argument("--attach-failures", type=int, default=0,
                   help="the first N attaches of every claim fail (the binding failure condition turns True)")
    p.add_argument("--config", default="", help="device config file (JSON/YAML, DeviceConfig keys); re-read "
                   "when it changes")
    p.add_argument("--resync-seconds", type=float, default=DEFAULT_RESYNC_SECONDS)
    p.add_argument("--root-dir", default=DEFAULT_ROOT_DIR)
    p.add_argument("--plugins-registry-dir", default="")
    p.add_argument("--plugins-dir", default="")
    p.add_argument("--cdi-dir", default="", help="where CDI spec files go (default <root-dir>/cdi)")
    p.add_argument("--install-device-class", action="store_true",
                   help="create the DeviceClass named after the driver (selecting its devices) unless it exists")
    p.add_argument("-v", "--v", type=int, default=0, dest="verbosity", help="log verbosity; 4+ = debug")


async def _install_when_reachable(server: str, driver: str) -> None:
    """The server may still be starting (compose starts the driver as soon as its kubelet runs)."""
    for _ in range(600):
        try:
            return await install_device_class(server, driver)
        except (aiohttp.ClientError, OSError):
            await asyncio.sleep(0.1)
    await install_device_class(server, driver)


async def run_from_args(server: str, args: argparse.Namespace) -> None:
    if args.install_device_class:
        await _install_when_reachable(server, args.driver)
    cfg = DeviceConfig(gpus=args.devices, model=args.model, memory_gi=args.memory_gi, partitions=args.partitions,
                       shared=args.shared_devices, fabric=args.fabric_devices, attach_delay_seconds=args.attach_delay,
                       attach_failures=args.attach_failures)
    await run_driver(server, args.node_name, args.driver, args.devices, args.root_dir, args.plugins_registry_dir,
                     args.plugins_dir, config=cfg, config_file=args.config, cdi_dir=args.cdi_dir,
                     resync_seconds=args.resync_seconds)


def main(argv: list[str] | None = None) -> int:
    from dramock.kubelet.kubelet import server_url

    p = argparse.ArgumentParser(prog="python -m dramock.kubelet.exampledriver", description=__doc__.splitlines()[0])
    add_driver_flags(p)
    args = p.parse_args(argv)
    if not args.kubeconfig and not args.server:
        p.error("one of --kubeconfig or --server is required")
    configure_logging(args.verbosity)
    asyncio.run(run_from_args(server_url(args.server, args.kubeconfig), args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
