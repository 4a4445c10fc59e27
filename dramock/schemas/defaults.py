"""Defaulting as upstream's SetDefaults_* functions apply it to the v1 types on decode."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]


def _claim_requests(devices: Obj | None) -> None:
    for req in (devices or {}).get("requests") or []:
        exact = req.get("exactly")
        if isinstance(exact, dict):
            _device_request(exact)
        for sub in req.get("firstAvailable") or []:
            if isinstance(sub, dict):
                _device_request(sub)


def _device_request(req: Obj) -> None:
    mode = req.setdefault("allocationMode", "ExactCount")
    if mode == "ExactCount":
        req.setdefault("count", 1)
    for tol in req.get("tolerations") or []:
        if isinstance(tol, dict):
            tol.setdefault("operator", "Equal")


def _taint(taint: Any) -> None:
    # "Added automatically during create or update if not set", at the wire's one-second resolution.
    if isinstance(taint, dict) and not taint.get("timeAdded"):
        taint["timeAdded"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def resource_slice(obj: Obj) -> None:
    for device in (obj.get("spec") or {}).get("devices") or []:
        if isinstance(device, dict):
            for taint in device.get("taints") or []:
                _taint(taint)


def device_taint_rule(obj: Obj) -> None:
    _taint((obj.get("spec") or {}).get("taint"))


def resource_pool_status_request(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict) and spec.get("limit") is None:
        spec["limit"] = 100  # ResourcePoolStatusRequestLimitDefault


def resource_claim(obj: Obj) -> None:
    _claim_requests((obj.get("spec") or {}).get("devices"))


def resource_claim_template(obj: Obj) -> None:
    _claim_requests(((obj.get("spec") or {}).get("spec") or {}).get("devices"))


def secret(obj: Obj) -> None:
    obj.setdefault("type", "Opaque")


def _container(c: Obj, init: bool = False) -> None:
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    image = c.get("image") or ""
    tag = image.rsplit("/", 1)[-1]
    if "imagePullPolicy" not in c:
        c["imagePullPolicy"] = "Always" if (":" not in tag or tag.endswith(":latest")) and "@" not in tag \
            else "IfNotPresent"
    c.setdefault("resources", {})
    resources = c["resources"]
    # Limits without requests default the requests, as upstream does.
    if isinstance(resources, dict) and resources.get("limits"):
        req = resources.setdefault("requests", {})
        for k, v in resources["limits"].items():
            req.setdefault(k, v)
    for p in c.get("ports") or []:
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")


def pod(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    if spec.get("serviceAccountName") is None:
        spec["serviceAccountName"] = "default"
        spec.setdefault("serviceAccount", "default")
    for c in spec.get("containers") or []:
        if isinstance(c, dict):
            _container(c)
    for c in spec.get("initContainers") or []:
        if isinstance(c, dict):
            _container(c, init=True)
    tolerations = spec.setdefault("tolerations", [])
    if isinstance(tolerations, list):
        # The DefaultTolerationSeconds admission plugin adds these to every pod.
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
            if not any(isinstance(t, dict) and t.get("key") == key for t in tolerations):
                tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                    "tolerationSeconds": 300})


def node(obj: Obj) -> None:
    status = obj.get("status")
    if isinstance(status, dict):
        cap = status.get("capacity")
        if isinstance(cap, dict) and "allocatable" not in status:
            status["allocatable"] = dict(cap)
