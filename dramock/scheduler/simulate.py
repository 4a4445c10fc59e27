"""`dramock simulate`: the scheduler's placement, offline, over a snapshot (what `kubectl get deviceclasses,
resourceslices,resourceclaims,nodes,pods -A -o yaml` exports, plus any more files).

Pending pods are placed one after the other, oldest first (pods of `--add` files after the snapshot's, in file
order), each as the scheduler would: the same filters, the same allocator, the same score. A placement is kept
in memory as the scheduler's reservation is (its claims' allocations are "in flight"), so later pods see the
devices taken. A pod claim from a ResourceClaimTemplate gets its claim created in memory first, as the
ResourceClaim controller would. Pods that fit nowhere get their explanation (dramock.scheduler.explain).
"""

from __future__ import annotations

import copy
from typing import Any

from dramock.scheduler import explain
from dramock.scheduler.explain import Cluster
from dramock.scheduler.snapshot import Snapshot
from dramock.schemas.featuregates import FeatureGates

Obj = dict[str, Any]
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


def simulate(snap: Snapshot, gates: FeatureGates | None = None, added: list[Obj] | None = None) -> Obj:
    """Place every pending pod of `snap` and of `added` (objects added after the snapshot); the snapshot is
    not changed. Returns a SimulationResult (apiVersion dramock.io/v1alpha1)."""
    snap = snap.copy()
    order = {id(p): (0, p["metadata"].get("creationTimestamp") or "", i) for i, p in enumerate(snap.pods)}
    for obj in copy.deepcopy(added or []):
        before = len(snap.pods)
        snap.add(obj)
        for p in snap.pods[before:]:
            order[id(p)] = (1, "", len(order))
    for p in snap.pods:
        md = p.setdefault("metadata", {})
        md.setdefault("uid", f"simulated-pod-{md.get('namespace', '')}-{md.get('name', '')}")
    for c in snap.claims:
        md = c.setdefault("metadata", {})
        md.setdefault("uid", f"simulated-claim-{md.get('namespace', '')}-{md.get('name', '')}")
    cluster = Cluster(snap, gates or FeatureGates())
    results = []
    for pod in sorted((p for p in snap.pods if explain.wanted(p)), key=lambda p: order[id(p)]):
        results.append(_place(cluster, pod))
    return {"kind": "SimulationResult", "apiVersion": explain.API_VERSION, "pods": results}


def _place(cluster: Cluster, pod: Obj) -> Obj:
    md = pod["metadata"]
    entry: Obj = {"namespace": md.get("namespace", ""), "name": md["name"]}
    problem = _create_template_claims(cluster, pod)
    claims, waiting = explain.pod_claims(cluster, pod)
    waiting = problem or waiting
    if waiting is not None:
        entry.update(node=None, reason=waiting)
        return entry
    nodes = sorted(cluster.snap.nodes, key=lambda n: n["metadata"]["name"])
    verdicts = explain.evaluate(cluster, pod, claims, nodes, trace=False)
    fit = explain.best(cluster, verdicts)
    if fit is None:
        expl = explain.explain_pod(cluster, entry["namespace"], entry["name"])
        entry.update(node=None, reason=expl["verdict"], explanation=expl)
        return entry
    # Reserve: the new allocations are in flight, the pod is on the node; allocated claims gain the pod.
    allocations = dict(zip([c["metadata"]["uid"] for c in fit.pending], fit.outcome.allocations or [],
                           strict=True)) if fit.outcome is not None else {}
    entry["node"] = fit.name
    entry["claims"] = []
    pod_claim_of = {st.get("resourceClaimName"): st.get("name")
                    for st in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    pod_claim_of.update({pc.get("resourceClaimName"): pc.get("name")
                         for pc in (pod.get("spec") or {}).get("resourceClaims") or [] if pc.get("resourceClaimName")})
    special = [c for c in fit.pending if c["metadata"]["uid"] not in {x["metadata"]["uid"] for x in claims}]
    for claim in claims + special:  # special: KEP-5004's claim for extended resources, created at PreBind
        uid = claim["metadata"]["uid"]
        reserved = copy.deepcopy(claim)
        status = reserved.setdefault("status", {})
        if uid in allocations:
            status["allocation"] = allocations[uid]
        status.setdefault("reservedFor", []).append({"resource": "pods", "name": md["name"], "uid": md["uid"]})
        cluster.in_flight[uid] = reserved
        entry["claims"].append({"name": claim["metadata"]["name"],
                                "podClaimName": pod_claim_of.get(claim["metadata"]["name"]),
                                "extendedResources": claim in special,
                                "allocation": status.get("allocation"), "new": uid in allocations})
    cluster.placed[md["uid"]] = fit.name
    return entry


def _create_template_claims(cluster: Cluster, pod: Obj) -> str | None:
    """What the ResourceClaim controller does for a pod: one claim per template reference, named in
    pod.status.resourceClaimStatuses (upstream names it <pod>-<claim>-<5 random characters>)."""
    md = pod["metadata"]
    ns = md.get("namespace", "")
    statuses = pod.setdefault("status", {}).setdefault("resourceClaimStatuses", [])
    known = {s.get("name") for s in statuses}
    for pc in (pod.get("spec") or {}).get("resourceClaims") or []:
        tname = pc.get("resourceClaimTemplateName")
        if not tname or pc.get("name") in known:
            continue
        template = cluster.snap.template(ns, tname)
        if template is None:
            return f'resourceclaimtemplate "{tname}" not found (pass it with -f or --add)'
        name = f"{md['name']}-{pc['name']}-sim"
        tmd = (template.get("spec") or {}).get("metadata") or {}
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": name, "namespace": ns, "uid": f"simulated-claim-{ns}-{name}",
                              "labels": dict(tmd.get("labels") or {}),
                              "annotations": {**(tmd.get("annotations") or {}), POD_CLAIM_ANNOTATION: pc["name"]},
                              "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": md["name"],
                                                   "uid": md["uid"], "controller": True,
                                                   "blockOwnerDeletion": True}]},
                 "spec": copy.deepcopy((template.get("spec") or {}).get("spec") or {})}
        cluster.snap.add(claim)
        statuses.append({"name": pc["name"], "resourceClaimName": name})
    return None


def render(result: Obj, verbose: bool = False) -> str:
    """One line per placed pod (node, then each claim's devices), the explanation of each pod that does not fit."""
    lines = []
    for p in result.get("pods") or []:
        who = f"{p['namespace']}/{p['name']}"
        if p.get("node"):
            lines.append(f"{who}: {p['node']}")
            for c in p.get("claims") or []:
                results = ((c.get("allocation") or {}).get("devices") or {}).get("results") or []
                devices = ", ".join(f"{r['request']}={r['driver']}/{r['pool']}/{r['device']}" for r in results)
                lines.append(f"  claim {c['name']}{'' if c.get('new') else ' (already allocated)'}: {devices}")
        else:
            lines.append(f"{who}: does not fit: {p.get('reason')}")
            if p.get("explanation"):
                lines.extend("  " + line for line in explain.render(p["explanation"], verbose).splitlines()[1:])
    if not lines:
        lines.append("no pending pods")
    return "\n".join(lines) + "\n"
