"""Defaulting as upstream's SetDefaults_* functions apply it to the v1 types on decode."""

from __future__ import annotations

from typing import Any

from dramock import timefmt

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
        taint["timeAdded"] = timefmt.now()


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


# ---------------------------------------------------------------- workloads (apps/v1, batch/v1)


def pod_template(template: Any) -> None:
    """SetDefaults_PodSpec for a template's pod spec (admission-time pod defaults apply to the pods only)."""
    if not isinstance(template, dict):
        return
    spec = template.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                _container(c, init=key == "initContainers")


def _workload_spec(obj: Obj) -> Obj:
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        pod_template(spec.get("template"))
        return spec
    return {}


def deployment(obj: Obj) -> None:
    spec = _workload_spec(obj)
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            ru = strategy.setdefault("rollingUpdate", {})
            if isinstance(ru, dict):
                ru.setdefault("maxUnavailable", "25%")
                ru.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)


def replica_set(obj: Obj) -> None:
    _workload_spec(obj).setdefault("replicas", 1)


def _update_strategy(spec: Obj, **rolling_update: Any) -> None:
    """updateStrategy defaults to RollingUpdate, whose parameters default to `rolling_update`."""
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            ru = strategy.setdefault("rollingUpdate", {})
            if isinstance(ru, dict):
                for key, value in rolling_update.items():
                    ru.setdefault(key, value)
    spec.setdefault("revisionHistoryLimit", 10)


def daemon_set(obj: Obj) -> None:
    _update_strategy(_workload_spec(obj), maxUnavailable=1, maxSurge=0)


def stateful_set(obj: Obj) -> None:
    spec = _workload_spec(obj)
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    _update_strategy(spec, partition=0)
    spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})


def job(obj: Obj) -> None:
    spec = _workload_spec(obj)
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")


def service(obj: Obj) -> None:
    """SetDefaults_Service: type, sessionAffinity, port protocol and targetPort, traffic policies."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for p in spec.get("ports") or []:
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")
            if p.get("targetPort") in (None, 0, ""):
                p["targetPort"] = p.get("port")
    if spec["type"] != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("ipFamilies", ["IPv4"])
    if spec["type"] in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if spec["type"] == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
