"""Table columns and rows of the workload kinds and Services, as upstream's printers.go prints them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dramock.schemas import labelselector

Obj = dict[str, Any]
_APPS = "io.k8s.api.apps.v1."
_CORE = "io.k8s.api.core.v1."


def columns(col, name_col, age_col, doc) -> dict[str, list[Obj]]:
    containers = col("Containers", "string", "Names of each container in the template.", priority=1)
    images = col("Images", "string", "Images referenced by each container in the template.", priority=1)
    selector = col("Selector", "string", "The label selector of the pods.", priority=1)
    return {
        "Deployment": [
            name_col(),
            col("Ready", "string", "Number of the pod with ready state"),
            col("Up-to-date", "string", doc(_APPS + "DeploymentStatus", "updatedReplicas")),
            col("Available", "string", doc(_APPS + "DeploymentStatus", "availableReplicas")),
            age_col(), containers, images, selector,
        ],
        "ReplicaSet": [
            name_col(),
            col("Desired", "integer", doc(_APPS + "ReplicaSetSpec", "replicas")),
            col("Current", "integer", doc(_APPS + "ReplicaSetStatus", "replicas")),
            col("Ready", "integer", doc(_APPS + "ReplicaSetStatus", "readyReplicas")),
            age_col(), containers, images, selector,
        ],
        "DaemonSet": [
            name_col(),
            col("Desired", "integer", doc(_APPS + "DaemonSetStatus", "desiredNumberScheduled")),
            col("Current", "integer", doc(_APPS + "DaemonSetStatus", "currentNumberScheduled")),
            col("Ready", "integer", doc(_APPS + "DaemonSetStatus", "numberReady")),
            col("Up-to-date", "integer", doc(_APPS + "DaemonSetStatus", "updatedNumberScheduled")),
            col("Available", "integer", doc(_APPS + "DaemonSetStatus", "numberAvailable")),
            col("Node Selector", "string", doc("io.k8s.api.core.v1.PodSpec", "nodeSelector")),
            age_col(), containers, images, selector,
        ],
        "StatefulSet": [
            name_col(),
            col("Ready", "string", "Number of the pod with ready state"),
            age_col(), containers, images,
        ],
        "ControllerRevision": [
            name_col(),
            col("Controller", "string", "Controller of the object"),
            col("Revision", "string", doc(_APPS + "ControllerRevision", "revision")),
            age_col(),
        ],
        "Service": [
            name_col(),
            col("Type", "string", doc(_CORE + "ServiceSpec", "type")),
            col("Cluster-IP", "string", doc(_CORE + "ServiceSpec", "clusterIP")),
            col("External-IP", "string", doc(_CORE + "ServiceSpec", "externalIPs")),
            col("Port(s)", "string", doc(_CORE + "ServiceSpec", "ports")),
            age_col(),
            col("Selector", "string", doc(_CORE + "ServiceSpec", "selector"), priority=1),
        ],
        "Job": [
            name_col(),
            col("Status", "string", "Status of the job."),
            col("Completions", "string", "The completion status of the job. This is the number of succeeded "
                "pods out of the desired completions."),
            col("Duration", "string", "Time required to complete the job."),
            age_col(), containers, images, selector,
        ],
    }


def _template_cells(o: Obj) -> list[str]:
    cs = (((o.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    return [",".join(c.get("name", "") for c in cs), ",".join(c.get("image", "") for c in cs)]


def _selector(o: Obj) -> str:
    sel = (o.get("spec") or {}).get("selector")
    return labelselector.to_string(sel) if sel else "<none>"


def _job_status(o: Obj) -> str:
    conds = {c.get("type"): c.get("status") for c in (o.get("status") or {}).get("conditions") or []}
    for t in ("Complete", "Failed", "FailureTarget", "SuccessCriteriaMet", "Suspended"):
        if conds.get(t) == "True":
            return t
    if o["metadata"].get("deletionTimestamp"):
        return "Terminating"
    return "Running"


def printers(name, age, human_duration, parse_time) -> dict[str, Any]:
    def st(o: Obj, *k: str) -> int:
        return int((o.get("status") or {}).get(k[0]) or 0)

    def spec_int(o: Obj, key: str) -> int:
        return int((o.get("spec") or {}).get(key) or 0)

    def deployment(o: Obj, now: datetime) -> list:
        return [name(o), f"{st(o, 'readyReplicas')}/{spec_int(o, 'replicas')}", st(o, "updatedReplicas"),
                st(o, "availableReplicas"), age(o, now), *_template_cells(o), _selector(o)]

    def replica_set(o: Obj, now: datetime) -> list:
        return [name(o), spec_int(o, "replicas"), st(o, "replicas"), st(o, "readyReplicas"), age(o, now),
                *_template_cells(o), _selector(o)]

    def daemon_set(o: Obj, now: datetime) -> list:
        ns = (((o.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
        return [name(o), st(o, "desiredNumberScheduled"), st(o, "currentNumberScheduled"), st(o, "numberReady"),
                st(o, "updatedNumberScheduled"), st(o, "numberAvailable"),
                ",".join(f"{k}={v}" for k, v in sorted(ns.items())) or "<none>", age(o, now),
                *_template_cells(o), _selector(o)]

    def stateful_set(o: Obj, now: datetime) -> list:
        return [name(o), f"{st(o, 'readyReplicas')}/{spec_int(o, 'replicas')}", age(o, now),
                *_template_cells(o)]

    def controller_revision(o: Obj, now: datetime) -> list:
        owner = next((r for r in o["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
        ctl = "<none>"
        if owner:
            group = owner.get("apiVersion", "").rpartition("/")[0]
            ctl = f"{owner.get('kind', '').lower()}.{group}/{owner.get('name')}" if group else \
                f"{owner.get('kind', '').lower()}/{owner.get('name')}"
        return [name(o), ctl, str(o.get("revision", 0)), age(o, now)]

    def job(o: Obj, now: datetime) -> list:
        spec, status = o.get("spec") or {}, o.get("status") or {}
        completions = spec.get("completions")
        done = f"{status.get('succeeded', 0)}/{completions}" if completions is not None else \
            f"{status.get('succeeded', 0)}/1 of {spec.get('parallelism', 1)}"
        start, end = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
        duration = human_duration(((end or now) - start).total_seconds()) if start else ""
        return [name(o), _job_status(o), done, duration, age(o, now), *_template_cells(o), _selector(o)]

    def service(o: Obj, now: datetime) -> list:
        spec = o.get("spec") or {}
        typ = spec.get("type", "ClusterIP")
        ingress = ((o.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        external = ",".join(spec.get("externalIPs") or []) or "<none>"
        if typ == "ExternalName":
            external = spec.get("externalName", "")
        elif typ == "LoadBalancer":
            lb = [i.get("ip") or i.get("hostname") for i in ingress]
            external = ",".join([*lb, *(spec.get("externalIPs") or [])]) or "<pending>"
        ports = ",".join(f"{p.get('port')}:{p['nodePort']}/{p.get('protocol', 'TCP')}" if p.get("nodePort")
                         else f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in spec.get("ports") or [])
        selector = ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items())) or "<none>"
        return [name(o), typ, spec.get("clusterIP") or "<none>", external, ports or "<none>", age(o, now),
                selector]

    return {"Service": service, "Deployment": deployment, "ReplicaSet": replica_set, "DaemonSet": daemon_set,
            "StatefulSet": stateful_set, "ControllerRevision": controller_revision, "Job": job}
