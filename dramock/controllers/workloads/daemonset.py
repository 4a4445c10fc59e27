"""DaemonSet controller (upstream's pkg/controller/daemon): one pod per Node that matches the template's
nodeSelector (and required node affinity) and whose NoSchedule/NoExecute taints the pod tolerates. Pods are
pinned with required node affinity on `metadata.name` and scheduled by the scheduler (so their claims are
allocated as any pod's), carry the DaemonSet's default tolerations, and are replaced one at a time
(maxUnavailable) when the template changes."""

from __future__ import annotations

from dramock.client.informer import Informer
from dramock.client.rest import Client
from dramock.controllers.workloads import revisions
from dramock.controllers.workloads.common import Obj, WorkloadController, is_active, is_available, is_ready
from dramock.jsonvalue import clone

# Upstream's AddOrUpdateDaemonPodTolerations.
DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]


def tolerates(tolerations: list[Obj], taint: Obj) -> bool:
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t.get("key") == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _expr_matches(expr: Obj, value: str | None) -> bool:
    op, values = expr.get("operator"), expr.get("values") or []
    if op == "In":
        return value in values
    if op == "NotIn":
        return value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and values:
        try:
            return int(value) > int(values[0]) if op == "Gt" else int(value) < int(values[0])
        except ValueError:
            return False
    return False


def should_run(template_spec: Obj, node: Obj) -> tuple[bool, bool]:
    """(should run, should continue running), as upstream's NodeShouldRunDaemonPod: an untolerated NoSchedule
    taint keeps new pods off the node but leaves a running one; NoExecute removes it."""
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (template_spec.get("nodeSelector") or {}).items()):
        return False, False
    required = (((template_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    if required and not any(
            all(_expr_matches(e, labels.get(e.get("key"))) for e in term.get("matchExpressions") or [])
            and all(_expr_matches(e, node["metadata"]["name"] if e.get("key") == "metadata.name" else None)
                    for e in term.get("matchFields") or [])
            for term in required):
        return False, False
    tolerations = (template_spec.get("tolerations") or []) + DEFAULT_TOLERATIONS
    taints = (node.get("spec") or {}).get("taints") or []
    keep = all(tolerates(tolerations, t) for t in taints if t.get("effect") == "NoExecute")
    return keep and all(tolerates(tolerations, t) for t in taints if t.get("effect") == "NoSchedule"), keep


def pinned_spec(template_spec: Obj, node_name: str) -> Obj:
    """The template's pod spec with required node affinity for exactly this node (upstream's
    ReplaceDaemonSetPodNodeNameNodeAffinity) and the default tolerations."""
    spec = clone(template_spec)
    affinity = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
    tolerations = spec.setdefault("tolerations", [])
    for t in DEFAULT_TOLERATIONS:
        if not any(x.get("key") == t["key"] and x.get("effect") == t["effect"] for x in tolerations):
            tolerations.append(dict(t))
    return spec


def pod_node(pod: Obj) -> str | None:
    if (pod.get("spec") or {}).get("nodeName"):
        return pod["spec"]["nodeName"]
    terms = ((((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    for term in terms:
        for f in term.get("matchFields") or []:
            if f.get("key") == "metadata.name" and f.get("values"):
                return f["values"][0]
    return None


class DaemonSetController(WorkloadController):
    kind, plural = "DaemonSet", "daemonsets"

    def __init__(self, client: Client, pods: Informer, nodes: Informer, workers: int = 2):
        super().__init__(client, pods, workers)
        self.nodes = nodes
        nodes.add_handler(self._on_node)

    def _on_node(self, _type: str, _node: Obj, _old: Obj | None) -> None:
        for ds in self.objects.list():
            self.enqueue(ds)

    async def sync(self, ds: Obj) -> None:
        if ds["metadata"].get("deletionTimestamp"):
            return
        spec = ds.get("spec") or {}
        template = spec.get("template") or {}
        rev, _ = await revisions.current_revision(self.client, ds, "DaemonSet",
                                                  int(spec.get("revisionHistoryLimit", 10)))
        h = revisions.hash_of(rev)
        owned = await self.owned_pods(ds)
        for p in owned:  # a failed daemon pod is deleted and replaced, as upstream does
            if (p.get("status") or {}).get("phase") == "Failed" and not p["metadata"].get("deletionTimestamp"):
                await self.delete_pod(p)
        pods = [p for p in owned if is_active(p)]
        by_node: dict[str, list[Obj]] = {}
        for p in pods:
            by_node.setdefault(pod_node(p) or "", []).append(p)
        verdicts = {n["metadata"]["name"]: should_run(template.get("spec") or {}, n) for n in self.nodes.list()}
        wanted = {n for n, (run, keep) in verdicts.items() if run or (keep and by_node.get(n))}
        for node in sorted(wanted):
            if by_node.get(node) or not verdicts[node][0]:
                continue
            pod = self.pod_from_template(ds, template, labels={revisions.HASH_LABEL: h})
            pod["spec"] = pinned_spec(template.get("spec") or {}, node)
            created = await self.create_pod(pod)
            if created:
                by_node[node] = [created]
                await self.event(ds, "SuccessfulCreate", f"Created pod: {created['metadata']['name']}",
                                 component="daemonset-controller")
        for node, ps in by_node.items():
            extra = ps if node not in wanted else ps[1:]
            for p in extra:
                await self.delete_pod(p)
                await self.event(ds, "SuccessfulDelete", f"Deleted pod: {p['metadata']['name']}",
                                 component="daemonset-controller")
        current = [ps[0] for n, ps in by_node.items() if n in wanted and ps]
        # Rolling update: replace outdated pods while at most maxUnavailable are unavailable.
        strategy = spec.get("updateStrategy") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        if strategy.get("type", "RollingUpdate") == "RollingUpdate":
            max_unavailable = (strategy.get("rollingUpdate") or {}).get("maxUnavailable", 1)
            if isinstance(max_unavailable, str) and max_unavailable.endswith("%"):
                max_unavailable = max(int(max_unavailable[:-1]) * len(wanted) // 100, 1)
            unavailable = sum(1 for p in current if not is_available(p, min_ready))
            for p in current:
                if unavailable >= int(max_unavailable):
                    break
                if (p["metadata"].get("labels") or {}).get(revisions.HASH_LABEL) != h and is_available(p, min_ready):
                    await self.delete_pod(p)
                    unavailable += 1
        scheduled = [p for p in current if (p.get("spec") or {}).get("nodeName")]
        updated = [p for p in scheduled if (p["metadata"].get("labels") or {}).get(revisions.HASH_LABEL) == h]
        available = sum(1 for p in scheduled if is_available(p, min_ready))
        status = {"currentNumberScheduled": len(scheduled),
                  "numberMisscheduled": sum(len(ps) for n, ps in by_node.items() if n not in wanted),
                  "desiredNumberScheduled": len(wanted),
                  "numberReady": sum(1 for p in scheduled if is_ready(p)),
                  "observedGeneration": ds["metadata"].get("generation", 1),
                  "updatedNumberScheduled": len(updated),
                  "numberAvailable": available,
                  "numberUnavailable": max(len(wanted) - available, 0)}
        await self.write_status(ds, {k: v for k, v in status.items()
                                     if v or k in ("currentNumberScheduled", "numberMisscheduled",
                                                   "desiredNumberScheduled", "numberReady")})
