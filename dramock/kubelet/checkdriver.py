"""`dramock check-driver --driver NAME`: checks a DRA driver against the contract the kubelet and the scheduler
expect, on a running dramock where the driver is registered with a node's kubelet shim.

It talks to the driver the way the kubelet does (its registration socket, then DRAPlugin over gRPC) and to the
API server as any client, creating a namespace, a DeviceClass selecting the driver's devices, a claim and a pod
on the node, and removing them at the end. Each check gets a line: PASS, FAIL with a one-line reason, or SKIP.

    registration        GetInfo: type DRAPlugin, the driver's name, a supported version, an endpoint that
                        answers; the kubelet shim accepted it (its DRADriverRegistered event on the Node)
    slices              the driver's ResourceSlices for the node: complete pools of one generation, named
                        devices, accepted by validation as they are (dry-run update)
    pod-running         a pod using a claim of the driver's devices is scheduled and prepared by the kubelet
    prepare             NodePrepareResources answers every allocated device of the driver (pool, device, request
                        name) with well-formed CDI device IDs (vendor/class=name)
    prepare-idempotent  a second NodePrepareResources answers the same
    status-devices      status.devices entries the driver wrote name allocated devices; a status.devices update
                        for every allocated device passes validation (dry run)
    kubelet-restart     after an injected kubelet shim restart (fault kubelet-restart) the driver registers again,
                        republishes its slices and still answers prepare the same
    driver-restart      with --driver-restart-command: after the command the driver registers again, republishes its
                        slices and answers prepare for the claim it prepared before the same
    unprepare           NodeUnprepareResources succeeds twice for the claim and for an unknown claim; deleting the
                        pod (the kubelet unprepares) completes
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import re
import secrets
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import quoteattr

import aiohttp
import grpc

from dramock import timefmt
from dramock.client.rest import APIStatusError, Client, resource_path
from dramock.kubelet.kubelet import EVENT_DRIVER_REGISTERED, PLUGINS_DIR_ANNOTATION, REGISTRY_DIR_ANNOTATION
from dramock.kubelet.plugins import (
    DRA_PLUGIN_TYPE,
    SUPPORTED_VERSIONS,
    DRAPluginClient,
    PluginError,
    get_info,
    pick_version,
)

log = logging.getLogger("dramock.checkdriver")
Obj = dict[str, Any]

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
# CDI's qualified device name: vendor/class=name (container-device-interface pkg/parser).
CDI_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9]/[A-Za-z0-9][A-Za-z0-9_-]*[A-Za-z0-9]="
                    r"[A-Za-z0-9][A-Za-z0-9_.:-]*$|^[A-Za-z0-9]/[A-Za-z0-9]=[A-Za-z0-9][A-Za-z0-9_.:-]*$")
CLAIMS = ("resource.k8s.io", "v1", "resourceclaims")
SLICES_PATH = resource_path("resource.k8s.io", "v1", "resourceslices")


@dataclass
class Result:
    name: str
    status: str
    detail: str
    seconds: float = 0.0


class CheckFailed(Exception):
    """A check's one-line reason for failing."""


class Skipped(Exception):
    """A check that could not run; the message says why."""


@dataclass
class Options:
    driver: str
    server: str
    node: str = ""
    registry_dir: str = ""
    plugins_dir: str = ""
    timeout: float = 60.0
    driver_restart_command: str = ""
    devices: int = 0  # devices per claim; 0: 2 when the node has two, else 1


class DriverCheck:
    def __init__(self, client: Client, opts: Options):
        self.client, self.opts = client, opts
        self.driver = opts.driver
        self.node = opts.node
        self.plugin: DRAPluginClient | None = None
        self.results: list[Result] = []
        self.suffix = secrets.token_hex(3)
        self.namespace = f"dramock-check-{self.suffix}"
        self.device_class = f"dramock-check-{self.suffix}"
        self.claim: Obj | None = None
        self.pod_running = False
        self.first_answer: Obj | None = None

    # --- plumbing ---

    async def run(self) -> list[Result]:
        steps: list[tuple[str, Callable[[], Awaitable[str]]]] = [
            ("registration", self.check_registration), ("slices", self.check_slices),
            ("pod-running", self.check_pod_running), ("prepare", self.check_prepare),
            ("prepare-idempotent", self.check_prepare_idempotent), ("status-devices", self.check_status_devices),
            ("kubelet-restart", self.check_kubelet_restart), ("driver-restart", self.check_driver_restart),
            ("unprepare", self.check_unprepare)]
        try:
            for name, step in steps:
                start = time.monotonic()
                try:
                    detail = await step()
                    result = Result(name, PASS, detail)
                except CheckFailed as e:
                    result = Result(name, FAIL, str(e))
                except Skipped as e:
                    result = Result(name, SKIP, str(e))
                except (APIStatusError, PluginError, aiohttp.ClientError, grpc.aio.AioRpcError, OSError,
                        asyncio.TimeoutError) as e:
                    result = Result(name, FAIL, f"{type(e).__name__}: {_one_line(e)}")
                result.seconds = time.monotonic() - start
                self.results.append(result)
                log.info("%s: %s %s", name, result.status, result.detail)
        finally:
            await self.cleanup()
        return self.results

    async def wait(self, what: str, probe: Callable[[], Awaitable[Any]], timeout: float | None = None) -> Any:
        deadline = time.monotonic() + (timeout or self.opts.timeout)
        while True:
            value = await probe()
            if value:
                return value
            if time.monotonic() > deadline:
                raise CheckFailed(f"timed out after {timeout or self.opts.timeout:.0f}s waiting for {what}")
            await asyncio.sleep(0.2)

    async def get(self, path: str, params: dict[str, str] | None = None) -> Obj | None:
        try:
            return await self.client.request("GET", path, params=params)
        except APIStatusError as e:
            if e.code == 404:
                return None
            raise

    def needs(self, *conditions: tuple[bool, str]) -> None:
        for ok, why in conditions:
            if not ok:
                raise Skipped(why)

    # --- registration ---

    async def find_node(self) -> Obj:
        nodes = (await self.client.request("GET", resource_path("", "v1", "nodes"))).get("items") or []
        if self.node:
            node = next((n for n in nodes if n["metadata"]["name"] == self.node), None)
            if node is None:
                raise CheckFailed(f"node {self.node} does not exist")
            return node
        sliced = {(s.get("spec") or {}).get("nodeName") for s in await self.slices(any_node=True)}
        for n in nodes:
            if n["metadata"]["name"] in sliced:
                self.node = n["metadata"]["name"]
                return n
        if not nodes:
            raise CheckFailed("the cluster has no nodes")
        self.node = nodes[0]["metadata"]["name"]
        return nodes[0]

    async def registration_events(self) -> set[str]:
        events = await self.client.request("GET", resource_path("", "v1", "events", "default"), params={
            "fieldSelector": f"involvedObject.kind=Node,involvedObject.name={self.node},"
                             f"reason={EVENT_DRIVER_REGISTERED}"})
        return {e["metadata"]["name"] for e in events.get("items") or []
                if f"DRA driver {self.driver} registered" in e.get("message", "")}

    async def check_registration(self) -> str:
        node = await self.find_node()
        ann = node["metadata"].get("annotations") or {}
        registry_dir = self.opts.registry_dir or ann.get(REGISTRY_DIR_ANNOTATION, "")
        plugins_dir = self.opts.plugins_dir or ann.get(PLUGINS_DIR_ANNOTATION, "")
        if not registry_dir:
            raise CheckFailed(f"node {self.node} does not say where its plugin registry is (no "
                              f"{REGISTRY_DIR_ANNOTATION} annotation); pass --plugins-registry-dir")
        # The driver may still be starting (CI often starts it right before the check): wait for its socket.
        why = [""]

        async def found() -> tuple[str, Any] | None:
            try:
                return await self.find_registration(registry_dir)
            except CheckFailed as e:
                why[0] = str(e)
                return None
        try:
            socket_path, info = await self.wait(f"a registration socket of {self.driver}", found)
        except CheckFailed as e:
            raise CheckFailed(f"{why[0]} ({e})")
        problems = []
        if info.type != DRA_PLUGIN_TYPE:
            problems.append(f"GetInfo type is {info.type!r}, want {DRA_PLUGIN_TYPE!r}")
        version = pick_version(list(info.supported_versions))
        if version is None:
            problems.append(f"GetInfo supported_versions {list(info.supported_versions)} has none of "
                            f"{list(SUPPORTED_VERSIONS)}")
        if not info.endpoint:
            problems.append("GetInfo endpoint is empty")
        if problems:
            raise CheckFailed("; ".join(problems))
        endpoint = info.endpoint if os.path.isabs(info.endpoint) else os.path.join(plugins_dir, info.endpoint)
        assert version is not None
        self.plugin = DRAPluginClient(self.driver, endpoint, version, socket_path)
        try:
            channel = self.plugin._channel
            assert channel is not None
            await asyncio.wait_for(channel.channel_ready(), 10)
        except asyncio.TimeoutError:
            raise CheckFailed(f"endpoint {endpoint} does not answer (no gRPC connection in 10s)")
        if not await self.wait("the kubelet shim's registration", self.registration_events, timeout=15):
            raise CheckFailed("the kubelet shim did not register the driver")
        return f"{version} at {endpoint} (offers {', '.join(info.supported_versions)}) on node {self.node}"

    async def find_registration(self, registry_dir: str) -> tuple[str, Any]:
        conventional = os.path.join(registry_dir, f"{self.driver}-reg.sock")
        candidates = [conventional] + sorted(os.path.join(registry_dir, n) for n in _listdir(registry_dir)
                                             if os.path.join(registry_dir, n) != conventional)
        seen = []
        for path in candidates:
            if not os.path.exists(path):
                continue
            try:
                info = await get_info(path, timeout=5)
            except grpc.aio.AioRpcError as e:
                seen.append(f"{os.path.basename(path)}: {e.code().name}")
                continue
            if info.name == self.driver:
                return path, info
            seen.append(f"{os.path.basename(path)}: {info.name}")
        raise CheckFailed(f"no registration socket of {self.driver} in {registry_dir}"
                          + (f" (found {', '.join(seen)})" if seen else ""))

    # --- slices ---

    async def slices(self, any_node: bool = False) -> list[Obj]:
        selector = f"spec.driver={self.driver}" + ("" if any_node else f",spec.nodeName={self.node}")
        listed = await self.client.request("GET", SLICES_PATH, params={"fieldSelector": selector})
        return listed.get("items") or []

    async def check_slices(self) -> str:
        try:
            slices = await self.wait("the driver's ResourceSlices", self.slices)
        except CheckFailed as e:
            raise CheckFailed(f"no ResourceSlice of {self.driver} with spec.nodeName={self.node} ({e})")
        pools: dict[str, list[Obj]] = {}
        for s in slices:
            pools.setdefault(s["spec"]["pool"]["name"], []).append(s)
        problems, devices = [], 0
        for pool, members in sorted(pools.items()):
            generation = max(int(s["spec"]["pool"]["generation"]) for s in members)
            current = [s for s in members if int(s["spec"]["pool"]["generation"]) == generation]
            want = {int(s["spec"]["pool"]["resourceSliceCount"]) for s in current}
            if want != {len(current)}:
                problems.append(f"pool {pool} generation {generation}: {len(current)} slice(s), "
                                f"resourceSliceCount says {sorted(want)}")
            names = [d["name"] for s in current for d in s["spec"].get("devices") or []]
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                problems.append(f"pool {pool}: device names published twice: {', '.join(dupes[:5])}")
            devices += len(names)
        for s in slices:
            path = f"{SLICES_PATH}/{s['metadata']['name']}"
            try:
                await self.client.request("PUT", path, s, params={"dryRun": "All"})
            except APIStatusError as e:
                problems.append(f"slice {s['metadata']['name']} does not pass validation: {_one_line(e)}")
        if not devices:
            problems.append(f"no devices in the {len(slices)} slice(s) of node {self.node}")
        if problems:
            raise CheckFailed("; ".join(problems))
        return f"{len(slices)} slice(s), {len(pools)} pool(s), {devices} device(s) on {self.node}"

    # --- a claim and a pod ---

    async def check_pod_running(self) -> str:
        self.needs((self.plugin is not None, "registration failed"))
        devices = self.opts.devices or (2 if await self._node_devices() >= 2 else 1)
        api = self.client.request
        await api("POST", resource_path("", "v1", "namespaces"),
                  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}})
        await api("POST", resource_path("resource.k8s.io", "v1", "deviceclasses"), {
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": self.device_class},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{self.driver}"'}}]}})
        await api("POST", resource_path(*CLAIMS, self.namespace), {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "check"},
            "spec": {"devices": {"requests": [{"name": "devices", "exactly": {
                "deviceClassName": self.device_class, "allocationMode": "ExactCount", "count": devices}}]}}})
        await api("POST", resource_path("", "v1", "pods", self.namespace), {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "check"},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": self.node},
                     "resourceClaims": [{"name": "devices", "resourceClaimName": "check"}],
                     "containers": [{"name": "check", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"claims": [{"name": "devices"}]}}]}})

        async def running() -> bool:
            pod = await self.get(resource_path("", "v1", "pods", self.namespace, "check"))
            return pod is not None and (pod.get("status") or {}).get("phase") == "Running"
        try:
            await self.wait("the pod to run", running)
        except CheckFailed as e:
            raise CheckFailed(f"{e}; last events: {await self._last_events()}")
        self.pod_running = True
        self.claim = await self.get(resource_path(*CLAIMS, self.namespace, "check"))
        assert self.claim is not None
        return f"{len(self.allocated())} device(s) allocated and prepared by the kubelet shim"

    async def _node_devices(self) -> int:
        return sum(len(s["spec"].get("devices") or []) for s in await self.slices())

    async def _last_events(self) -> str:
        events = await self.client.request("GET", resource_path("", "v1", "events", self.namespace))
        msgs = [f"{e.get('reason')}: {e.get('message')}" for e in events.get("items") or []
                if e.get("type") == "Warning"]
        return " | ".join(msgs[-2:]) or "none"

    def allocated(self) -> list[Obj]:
        results = ((((self.claim or {}).get("status") or {}).get("allocation") or {}).get("devices") or {}) \
            .get("results") or []
        return [r for r in results if r.get("driver") == self.driver]

    def wire(self) -> list[Obj]:
        assert self.claim is not None
        m = self.claim["metadata"]
        return [{"namespace": m["namespace"], "name": m["name"], "uid": m["uid"]}]

    async def prepare(self) -> Obj:
        assert self.plugin is not None and self.claim is not None
        answer = await self.plugin.node_prepare_resources(self.wire(), timeout=self.opts.timeout)
        uid = self.claim["metadata"]["uid"]
        if uid not in answer:
            raise CheckFailed(f"the answer has no entry for claim uid {uid} (has {sorted(answer)})")
        if answer[uid]["error"]:
            raise CheckFailed(f"the driver reported an error: {answer[uid]['error']}")
        return answer[uid]

    # --- prepare ---

    async def check_prepare(self) -> str:
        self.needs((self.pod_running, "no prepared claim (pod-running failed)"))
        self.first_answer = answer = await self.prepare()
        devices = answer["devices"]
        problems = []
        for r in self.allocated():
            ref = f"{r['pool']}/{r['device']}"
            match = [d for d in devices if d["poolName"] == r["pool"] and d["deviceName"] == r["device"]]
            if not match:
                problems.append(f"allocated device {ref} is missing from the answer")
                continue
            d = match[0]
            if r["request"] not in d["requestNames"]:
                problems.append(f"device {ref}: request_names {d['requestNames']} lack request {r['request']!r} "
                                "(containers would not get it)")
            if not d["cdiDeviceIDs"]:
                problems.append(f"device {ref}: empty CDI device ID list")
            bad = [i for i in d["cdiDeviceIDs"] if not CDI_ID.match(i)]
            if bad:
                problems.append(f"device {ref}: CDI device IDs not of the form vendor/class=name: {bad}")
        allocated = {(r["pool"], r["device"]) for r in self.allocated()}
        extra = [f"{d['poolName']}/{d['deviceName']}" for d in devices if (d["poolName"], d["deviceName"])
                 not in allocated]
        if extra:
            problems.append(f"devices that were not allocated: {', '.join(extra)}")
        if problems:
            raise CheckFailed("; ".join(problems))
        ids = sorted({i for d in devices for i in d["cdiDeviceIDs"]})
        return f"{len(devices)} device(s): {', '.join(ids)}"

    async def check_prepare_idempotent(self) -> str:
        self.needs((self.first_answer is not None, "prepare did not answer"))
        again = await self.prepare()
        if _devices(again) != _devices(self.first_answer or {}):
            raise CheckFailed(f"a second NodePrepareResources answered {_devices(again)}, the first "
                              f"{_devices(self.first_answer or {})}")
        return "the same devices and CDI IDs again"

    # --- status.devices ---

    async def check_status_devices(self) -> str:
        self.needs((self.pod_running, "no allocated claim (pod-running failed)"))
        claim = await self.get(resource_path(*CLAIMS, self.namespace, "check"))
        assert claim is not None
        allocated = {(r["pool"], r["device"]) for r in self.allocated()}
        written = [d for d in (claim.get("status") or {}).get("devices") or [] if d.get("driver") == self.driver]
        strays = [f"{d.get('pool')}/{d.get('device')}" for d in written if (d.get("pool"), d.get("device"))
                  not in allocated]
        if strays:
            raise CheckFailed(f"status.devices names devices that are not allocated: {', '.join(strays)}")
        status = claim.setdefault("status", {})
        others = [d for d in status.get("devices") or [] if d.get("driver") != self.driver]
        status["devices"] = others + [
            {"driver": self.driver, "pool": pool, "device": device,
             "conditions": [{"type": "Ready", "status": "True", "reason": "Checked", "message": "dramock check",
                             "lastTransitionTime": timefmt.now()}],
             "data": {"checkedBy": "dramock"}}
            for pool, device in sorted(allocated)]
        path = resource_path(*CLAIMS, self.namespace, "check", "status")
        try:
            await self.client.request("PUT", path, claim, params={"dryRun": "All"})
        except APIStatusError as e:
            raise CheckFailed(f"a status.devices update for the allocated devices was refused: {_one_line(e)}")
        return (f"the driver wrote {len(written)} entr{'y' if len(written) == 1 else 'ies'}; an update for "
                f"{len(allocated)} allocated device(s) passes validation")

    # --- restarts ---

    async def _reregistered(self, before: set[str], cause: str) -> None:
        async def new_event() -> bool:
            return bool(await self.registration_events() - before)
        try:
            await self.wait(f"the driver to register again after {cause}", new_event)
        except CheckFailed as e:
            raise CheckFailed(f"{e} (no new {EVENT_DRIVER_REGISTERED} event on node {self.node})")

    async def _republished(self, had_slices: bool, cause: str) -> None:
        if had_slices:
            async def back() -> bool:
                return bool(await self.slices())
            try:
                await self.wait(f"its ResourceSlices after {cause}", back)
            except CheckFailed as e:
                raise CheckFailed(f"{e}: the driver did not republish them")

    async def _same_answer(self, cause: str) -> None:
        if self.first_answer is None:
            return
        # The endpoint may be a new socket now: reconnect as the kubelet does on re-registration.
        assert self.plugin is not None
        await self.plugin.close()
        self.plugin = DRAPluginClient(self.driver, self.plugin.endpoint, self.plugin.version,
                                      self.plugin.registration_socket)
        answer = await self.wait(f"the driver to answer after {cause}", self._try_prepare)
        if _devices(answer) != _devices(self.first_answer):
            raise CheckFailed(f"after {cause} NodePrepareResources answered {_devices(answer)}, before "
                              f"{_devices(self.first_answer)}")

    async def _try_prepare(self) -> Obj | None:
        try:
            return await self.prepare()
        except PluginError:
            return None

    async def check_kubelet_restart(self) -> str:
        self.needs((self.plugin is not None, "registration failed"))
        before = await self.registration_events()
        had_slices = bool(await self.slices())
        try:
            await self.client.request("POST", "/dramock/faults", {"rule": f"kubelet-restart:node={self.node}"})
        except APIStatusError as e:
            raise Skipped(f"the server cannot restart a kubelet shim (POST /dramock/faults: {e.code})")
        await self._reregistered(before, "a kubelet shim restart")
        await self._republished(had_slices, "the kubelet shim restart")
        await self._same_answer("the kubelet shim restart")
        return "registered again" + (", republished its slices" if had_slices else "") + \
            (", prepare answers the same" if self.first_answer is not None else "")

    async def check_driver_restart(self) -> str:
        self.needs((self.plugin is not None, "registration failed"),
                   (bool(self.opts.driver_restart_command), "pass --driver-restart-command to restart the driver"))
        before = await self.registration_events()
        had_slices = bool(await self.slices())
        proc = await asyncio.create_subprocess_shell(self.opts.driver_restart_command,
                                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out, _ = await proc.communicate()
        if proc.returncode != 0:
            raise CheckFailed(f"--driver-restart-command exited with {proc.returncode}: "
                              f"{out.decode(errors='replace').strip()[-300:]}")
        await self._reregistered(before, "the driver restart")
        await self._republished(had_slices, "the driver restart")
        await self._same_answer("the driver restart")
        return "registered again" + (", republished its slices" if had_slices else "") + \
            (", prepare of the claim prepared before answers the same" if self.first_answer is not None else "")

    # --- unprepare ---

    async def check_unprepare(self) -> str:
        self.needs((self.plugin is not None and self.claim is not None, "no prepared claim (pod-running failed)"))
        assert self.plugin is not None and self.claim is not None
        uid = self.claim["metadata"]["uid"]
        for attempt in ("first", "second"):
            answer = await self.plugin.node_unprepare_resources(self.wire(), timeout=self.opts.timeout)
            if uid not in answer:
                raise CheckFailed(f"the {attempt} NodeUnprepareResources has no entry for claim uid {uid}")
            if answer[uid]["error"]:
                raise CheckFailed(f"the {attempt} NodeUnprepareResources failed: {answer[uid]['error']}")
        unknown = {"namespace": self.namespace, "name": "dramock-check-unknown", "uid": str(uuid.uuid4())}
        answer = await self.plugin.node_unprepare_resources([unknown], timeout=self.opts.timeout)
        if (answer.get(unknown["uid"]) or {}).get("error"):
            raise CheckFailed(f"NodeUnprepareResources of an unknown claim failed: {answer[unknown['uid']]['error']}"
                              " (it must succeed: nothing to undo)")
        await self.client.request("DELETE", resource_path("", "v1", "pods", self.namespace, "check"))

        async def gone() -> bool:
            return await self.get(resource_path("", "v1", "pods", self.namespace, "check")) is None
        try:
            await self.wait("the pod's deletion (the kubelet unprepares first)", gone)
        except CheckFailed as e:
            raise CheckFailed(f"{e}; last events: {await self._last_events()}")
        return "twice for the claim, once for an unknown claim, and by the kubelet on pod deletion"

    # --- cleanup ---

    async def cleanup(self) -> None:
        with contextlib.suppress(APIStatusError, aiohttp.ClientError, OSError):
            await self.client.request("DELETE", resource_path("", "v1", "namespaces", name=self.namespace))
        with contextlib.suppress(APIStatusError, aiohttp.ClientError, OSError):
            await self.client.request("DELETE", resource_path("resource.k8s.io", "v1", "deviceclasses",
                                                              name=self.device_class))
        with contextlib.suppress(APIStatusError, aiohttp.ClientError, OSError):
            await self.client.request("DELETE", "/dramock/faults")  # the kubelet-restart rule, if unspent
        if self.plugin is not None:
            await self.plugin.close()


def _devices(answer: Obj) -> list[tuple]:
    return sorted((d["poolName"], d["deviceName"], tuple(sorted(d["requestNames"])), tuple(d["cdiDeviceIDs"]))
                  for d in answer.get("devices") or [])


def _listdir(path: str) -> list[str]:
    try:
        return [n for n in os.listdir(path) if not n.startswith(".")]
    except OSError:
        return []


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())[:400]


# --- reporting ---------------------------------------------------------------------------------------------------


def table(results: list[Result]) -> str:
    width = max(len(r.name) for r in results) if results else 5
    lines = [f"{'CHECK'.ljust(width)}  RESULT  DETAIL"]
    lines += [f"{r.name.ljust(width)}  {r.status.ljust(6)}  {r.detail}" for r in results]
    return "\n".join(lines)


def junit_xml(results: list[Result], driver: str) -> str:
    failures = sum(r.status == FAIL for r in results)
    skipped = sum(r.status == SKIP for r in results)
    total = sum(r.seconds for r in results)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuites><testsuite name="dramock check-driver" tests="{len(results)}" failures="{failures}" '
           f'errors="0" skipped="{skipped}" time="{total:.3f}">']
    for r in results:
        head = f'<testcase classname={quoteattr("check-driver." + driver)} name={quoteattr(r.name)} ' \
               f'time="{r.seconds:.3f}"'
        if r.status == FAIL:
            out.append(f"{head}><failure message={quoteattr(r.detail)}/></testcase>")
        elif r.status == SKIP:
            out.append(f"{head}><skipped message={quoteattr(r.detail)}/></testcase>")
        else:
            out.append(f"{head}/>")
    out.append("</testsuite></testsuites>")
    return "\n".join(out) + "\n"


def add_check_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--driver", required=True, help="the DRA driver's name (as in GetInfo and its ResourceSlices)")
    p.add_argument("--server", default="", help="server URL (default: from --kubeconfig, else http://127.0.0.1:8080)")
    p.add_argument("--kubeconfig", default="", help="kubeconfig naming the server")
    p.add_argument("--node", default="", help="the node the driver runs on (default: the first with its slices)")
    p.add_argument("--plugins-registry-dir", default="",
                   help="the node's plugin registry (default: from the node's dramock.io annotation)")
    p.add_argument("--plugins-dir", default="", help="base of relative endpoints (default: from the node)")
    p.add_argument("--driver-restart-command", default="",
                   help="shell command that restarts the driver (enables the driver-restart check)")
    p.add_argument("--devices", type=int, default=0, help="devices per test claim (default 2 if the node has 2)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for each step (default 60)")
    p.add_argument("--junit-xml", default="", metavar="FILE", help="also write the results as JUnit XML")
    p.add_argument("-v", "--v", type=int, default=0, dest="verbosity", help="log verbosity; 4+ = debug")


def run_from_args(args: argparse.Namespace) -> int:
    from dramock.kubelet.kubelet import server_url

    logging.basicConfig(level=logging.DEBUG if args.verbosity >= 4 else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    server = server_url(args.server, args.kubeconfig) if (args.server or args.kubeconfig) \
        else "http://127.0.0.1:8080"
    opts = Options(driver=args.driver, server=server, node=args.node, registry_dir=args.plugins_registry_dir,
                   plugins_dir=args.plugins_dir, timeout=args.timeout,
                   driver_restart_command=args.driver_restart_command, devices=args.devices)

    async def main() -> list[Result]:
        client = Client(server, "dramock-check-driver")
        try:
            return await DriverCheck(client, opts).run()
        finally:
            await client.close()

    results = asyncio.run(main())
    print(table(results))
    failed = [r for r in results if r.status == FAIL]
    print(f"\n{args.driver}: {len(results) - len(failed)} of {len(results)} checks passed or skipped, "
          f"{len(failed)} failed")
    if args.junit_xml:
        with open(args.junit_xml, "w", encoding="utf-8") as f:
            f.write(junit_xml(results, args.driver))
    sys.stdout.flush()
    return 1 if failed else 0
