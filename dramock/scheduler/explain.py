"""Why a pod is (or is not) where it is: node by node, claim by claim, request by request, device by device.

`explain_pod(snapshot, namespace, name)` runs what the scheduler runs for the pod (the non-DRA filters, the
allocated-claims filter, then the allocator) on every node, with a `Tracer` in the allocator that is told why
each device was passed over. The verdict of a pending pod is upstream's FitError text, built by the same
function the scheduler uses for its FailedScheduling event; for a scheduled pod the explanation is the one of
its node, with its own claims' allocations taken out of the allocated state ("why this device").

The result is a plain dict (kind PodExplanation, apiVersion dramock.io/v1alpha1), served by the API server at
/dramock/explain/namespaces/NS/pods/NAME and printed by `dramock explain` through `render()`.

Device reasons (`reason` of each device entry):
  Chosen, Usable, NotEvaluated                                    the device could be used / was not looked at
  SelectorFalse, Tainted, FeatureDisabled                         the request cannot use it at all
  Allocated, ReservedInFlight, ChosenForOtherRequest               someone holds it
  CountersExhausted, CapacityExceeded, CompatibilityGroupConflict  what is left of it (or its GPU) is not enough
  ConstraintNotSatisfied                                           matchAttribute / distinctAttribute
  PoolIncomplete, PoolInvalid, NodeNotSelected                     its pool / its slice's node selection
Node reasons: the non-DRA filter messages (upstream's, e.g. "node(s) didn't match Pod's node affinity/selector").
"""

from __future__ import annotations

import copy
import json
import time
from collections import Counter
from collections.abc import Set
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dramock.scheduler import allocator
from dramock.scheduler.framework import MSG_NO_NODES, SCHEDULER_NAME, fit_error_message
from dramock.scheduler.plugins import extendedresources as extended
from dramock.scheduler.plugins.dynamicresources import (
    FILTER_TIMEOUT,
    MSG_CANNOT_ALLOCATE,
    MSG_FILTER_TIMEOUT,
    WaitingForClaims,
    allocated_claims_reason,
    pod_claim_refs,
)
from dramock.scheduler.plugins.nodefit import node_fit_reason, pod_requests
from dramock.scheduler.snapshot import Snapshot
from dramock.scheduler.types import AllocationInput, AllocationOutcome
from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.nodeselector import node_selector_matches
from dramock.schemas.quantity import parse_quantity

Obj = dict[str, Any]
API_VERSION = "dramock.io/v1alpha1"
# Reasons that say a device is fine.
GOOD = ("Chosen", "Usable")
# The order of the short output: the choice, then what stood in the way of devices the request could use, then
# devices it could never use, then the usable rest.
REASON_ORDER = ("Chosen", "Allocated", "ReservedInFlight", "ChosenForOtherRequest", "CountersExhausted",
                "CapacityExceeded", "CompatibilityGroupConflict", "ConstraintNotSatisfied", "Tainted",
                "PoolIncomplete", "PoolInvalid", "SelectorFalse", "FeatureDisabled", "NodeNotSelected", "Usable")


class Tracer:
    """What the allocator was told, per (claim index, request name): subject -> (reason, message). A subject
    is a device id (driver, pool, device) or ("pool", "driver/pool")."""

    def __init__(self, holders: dict[tuple, tuple[str, str]]):
        self.notes: dict[tuple[int, str], dict[tuple, tuple[str, str]]] = {}
        self._holders = holders

    def note(self, ci: int, request: str, device: tuple, reason: str, message: str) -> None:
        entries = self.notes.setdefault((ci, request), {})
        prev = entries.get(device)
        # The first hard reason sticks; "usable" and "taken by this pod's own tentative choice" are provisional.
        if prev is None or prev[0] in ("Usable", "ChosenForOtherRequest"):
            entries[device] = (reason, message)

    def note_pool(self, ci: int, request: str, pool_id: str, reason: str, message: str) -> None:
        self.note(ci, request, ("pool", pool_id), reason, message)

    def holder(self, device: tuple) -> tuple[str, str] | None:
        return self._holders.get(device)


def holders(allocated: list[Obj], in_flight: list[Obj]) -> dict[tuple, tuple[str, str]]:
    """Device id -> (reason, message) naming the claim that holds it exclusively."""
    out: dict[tuple, tuple[str, str]] = {}
    for claims, reason, verb in ((allocated, "Allocated", "allocated to"),
                                 (in_flight, "ReservedInFlight", "reserved in flight for")):
        for claim in claims:
            md = claim.get("metadata") or {}
            name = f"{md.get('namespace', '')}/{md.get('name', '')}"
            for r in results_of(claim):
                did, exclusive, _ = allocator.holding(r)
                if exclusive:
                    out.setdefault(did, (reason, f"{verb} claim {name} (request {r.get('request', '')})"))
    return out


def results_of(claim: Obj) -> list[Obj]:
    alloc = (claim.get("status") or {}).get("allocation") or {}
    return (alloc.get("devices") or {}).get("results") or []


def _did(r: Obj) -> tuple:
    return (r.get("driver", ""), r.get("pool", ""), r.get("device", ""))


# ---------------------------------------------------------------- the cluster around one pod


@dataclass
class Cluster:
    """The snapshot plus what a simulation reserved in memory (claims with an allocation not written yet and
    pods placed on nodes), so that explain and simulate see the same state."""

    snap: Snapshot
    gates: FeatureGates = field(default_factory=FeatureGates)
    in_flight: dict[str, Obj] = field(default_factory=dict)  # claim uid -> claim with its reserved allocation
    placed: dict[str, str] = field(default_factory=dict)  # pod uid -> node name

    def claim(self, namespace: str, name: str) -> Obj | None:
        c = self.snap.claim(namespace, name)
        if c is not None:
            return self.in_flight.get(c["metadata"].get("uid", ""), c)
        return None

    def allocated(self, exclude: Set[str] = frozenset()) -> tuple[list[Obj], list[Obj]]:
        """(written allocations, in-flight ones), leaving out the claims whose uid is in `exclude`."""
        written = [c for c in self.snap.claims if results_of(c) and c["metadata"].get("uid") not in self.in_flight
                   and c["metadata"].get("uid") not in exclude]
        flying = [c for uid, c in self.in_flight.items() if uid not in exclude]
        return written, flying

    def node_of(self, pod: Obj) -> str | None:
        return (pod.get("spec") or {}).get("nodeName") or self.placed.get(pod["metadata"].get("uid", ""))

    def usage(self, node: str) -> tuple[dict[str, Fraction], int]:
        """What the pods on the node request (as the scheduler's NodeUsage: finished pods do not count)."""
        total: dict[str, Fraction] = {}
        count = 0
        for p in self.snap.pods:
            if self.node_of(p) != node or (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            count += 1
            for k, v in pod_requests(p).items():
                total[k] = total.get(k, Fraction(0)) + v
        return total, count

    def score(self, node: Obj, held: list[Obj]) -> tuple:
        """The scheduler's Score: fewest allocation results on the node's own pools, then fewest pods, then name."""
        name = node["metadata"]["name"]
        local = {((s.get("spec") or {}).get("driver", ""), ((s.get("spec") or {}).get("pool") or {}).get("name", ""))
                 for s in self.snap.slices if (s.get("spec") or {}).get("nodeName") == name}
        results = sum(1 for c in held for r in results_of(c) if (r.get("driver", ""), r.get("pool", "")) in local)
        return results, self.usage(name)[1], name


def _allocatable(node: Obj) -> dict[str, Fraction]:
    out = {}
    for k, v in ((node.get("status") or {}).get("allocatable") or {}).items():
        try:
            out[k] = parse_quantity(v)
        except (ValueError, TypeError):
            continue
    return out


def pod_claims(cluster: Cluster, pod: Obj) -> tuple[list[Obj], str | None]:
    """The pod's ResourceClaims, or why the scheduler would not look at the pod yet (PreEnqueue / PreFilter)."""
    ns = pod["metadata"].get("namespace", "")
    try:
        refs = pod_claim_refs(pod)
    except WaitingForClaims as e:
        return [], str(e)
    claims = []
    for _, cname, generated in refs:
        if cname is None:
            continue
        claim = cluster.claim(ns, cname)
        if claim is None:
            return [], f'waiting for resourceclaim "{cname}": not found'
        if generated and not any(r.get("uid") == pod["metadata"].get("uid") and r.get("controller")
                                 for r in claim["metadata"].get("ownerReferences") or []):
            return [], f"ResourceClaim {ns}/{cname} was not created for pod {ns}/{pod['metadata']['name']}"
        if claim["metadata"].get("deletionTimestamp"):
            return [], f'resourceclaim "{cname}" is being deleted'
        claims.append(claim)
    ext = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
    if ext.get("resourceClaimName") and cluster.gates.enabled("DRAExtendedResource"):
        claim = cluster.claim(ns, ext["resourceClaimName"])
        if claim is not None and not claim["metadata"].get("deletionTimestamp"):
            claims.append(claim)
    return claims, None


@dataclass
class NodeVerdict:
    name: str
    reason: str | None  # None: the pod fits
    outcome: AllocationOutcome | None = None
    tracer: Tracer | None = None
    pending: list[Obj] = field(default_factory=list)  # the claims the allocator was asked to allocate


def evaluate(cluster: Cluster, pod: Obj, claims: list[Obj], nodes: list[Obj], trace: bool,
             exclude: Set[str] = frozenset()) -> list[NodeVerdict]:
    """Filter every node for the pod as the scheduler does; with `trace`, the allocator explains itself."""
    written, flying = cluster.allocated(exclude)
    alloc_state = allocator.allocated_devices(written, flying)
    owners = holders(written, flying) if trace else {}
    pending = [c for c in claims if not results_of(c) or c["metadata"].get("uid") in exclude]
    allocated = [c for c in claims if c not in pending]
    requests = pod_requests(pod)
    classes = cluster.snap.class_map()
    uid = pod["metadata"].get("uid")
    # KEP-5004: extended resources that no node lists are allocated through DRA, in a special claim.
    ext = extended.extended_requests(pod, classes) if cluster.gates.enabled("DRAExtendedResource") else []
    has_special = any((c["metadata"].get("annotations") or {}).get(extended.EXTENDED_RESOURCE_CLAIM_ANNOTATION)
                      == "true" for c in claims)
    out = []
    for node in nodes:
        name = node["metadata"]["name"]
        used, count = cluster.usage(name)
        if cluster.node_of(pod) == name:  # explaining a pod already there: it does not compete with itself
            count -= 1
            used = {k: v - requests.get(k, Fraction(0)) for k, v in used.items()}
        backed = extended.dra_backed(ext, node) if ext else []
        node_requests = extended.node_requests_without(requests, backed) if backed else requests
        reason = node_fit_reason(pod, node, node_requests, _allocatable(node), used, count)
        if reason is None:
            reason, _ = allocated_claims_reason(node, allocated, uid)
        verdict = NodeVerdict(name, reason)
        to_allocate = pending + ([extended.in_memory_claim(pod, backed)] if backed and not has_special else [])
        if reason is None and to_allocate:
            stripped = [_without_allocation(c) for c in to_allocate]
            verdict.pending = stripped
            verdict.tracer = Tracer(owners) if trace else None
            outcome = allocator.allocate(AllocationInput(
                claims=stripped, node=node, slices=cluster.snap.slices, classes=classes, gates=cluster.gates,
                allocated_devices=alloc_state, taint_rules=cluster.snap.taint_rules, tracer=verdict.tracer,
                deadline=time.monotonic() + FILTER_TIMEOUT))
            verdict.outcome = outcome
            if outcome.timed_out:
                verdict.reason = MSG_FILTER_TIMEOUT
            elif not outcome.fits:
                verdict.reason = outcome.reason or MSG_CANNOT_ALLOCATE
        out.append(verdict)
    return out


def _without_allocation(claim: Obj) -> Obj:
    c = copy.copy(claim)
    c["status"] = {k: v for k, v in (claim.get("status") or {}).items() if k not in ("allocation", "reservedFor")}
    return c


def best(cluster: Cluster, verdicts: list[NodeVerdict]) -> NodeVerdict | None:
    nodes = {n["metadata"]["name"]: n for n in cluster.snap.nodes}
    written, flying = cluster.allocated()
    fits = [v for v in verdicts if v.reason is None]
    if not fits:
        return None
    return min(fits, key=lambda v: cluster.score(nodes[v.name], written + flying))


def wanted(pod: Obj) -> bool:
    """Pods the scheduler would place: not bound, not finished or deleted, for the default scheduler."""
    spec = pod.get("spec") or {}
    return (not spec.get("nodeName") and spec.get("schedulerName", SCHEDULER_NAME) == SCHEDULER_NAME
            and not pod["metadata"].get("deletionTimestamp")
            and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))


# ---------------------------------------------------------------- the explanation


def explain_pod(snap: Snapshot | Cluster, namespace: str, name: str, gates: FeatureGates | None = None) -> Obj:
    """The PodExplanation of one pod (KeyError when the snapshot has no such pod)."""
    cluster = snap if isinstance(snap, Cluster) else Cluster(snap, gates or FeatureGates())
    pod = cluster.snap.pod(namespace, name)
    if pod is None:
        raise KeyError(f"{namespace}/{name}")
    out: Obj = {"kind": "PodExplanation", "apiVersion": API_VERSION,
                "metadata": {"namespace": namespace, "name": name}}
    node_name = cluster.node_of(pod)
    claims, waiting = pod_claims(cluster, pod)
    if waiting is not None:
        out.update(phase="Pending", node=None, verdict=waiting, nodes=[])
        return out
    nodes = sorted(cluster.snap.nodes, key=lambda n: n["metadata"]["name"])
    exclude: set[str] = set()
    if node_name:
        nodes = [n for n in nodes if n["metadata"]["name"] == node_name]
        # "Why this device": the pod's own claims compete as if they were being allocated now.
        exclude = {c["metadata"].get("uid", "") for c in claims}
    elif not wanted(pod):
        out.update(phase=(pod.get("status") or {}).get("phase") or "Pending", node=None, nodes=[],
                   verdict="not scheduled by " + SCHEDULER_NAME if (pod.get("spec") or {}).get("schedulerName")
                   not in (None, SCHEDULER_NAME) else "the pod is finished or being deleted")
        return out
    verdicts = evaluate(cluster, pod, claims, nodes, trace=True, exclude=exclude)
    out["nodes"] = [_node_entry(cluster, v, claims, node_name) for v in verdicts]
    if node_name:
        out.update(phase="Scheduled", node=node_name, verdict=f"scheduled on {node_name}")
        return out
    out["phase"] = "Pending"
    out["node"] = None
    if not nodes:
        out["verdict"] = MSG_NO_NODES
        return out
    fit = best(cluster, verdicts)
    if fit is None:
        out["verdict"] = fit_error_message(len(nodes), Counter(v.reason for v in verdicts if v.reason is not None))
    else:
        out["verdict"] = f"fits on {fit.name} now (the scheduler has not placed it yet)"
        out["fitsOn"] = fit.name
    scheduled = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"]
    if scheduled and scheduled[0].get("message"):
        out["schedulerMessage"] = scheduled[0]["message"]
    return out


def _node_entry(cluster: Cluster, v: NodeVerdict, claims: list[Obj], scheduled_on: str | None) -> Obj:
    entry: Obj = {"name": v.name, "fits": v.reason is None}
    if v.reason is not None:
        entry["reason"] = v.reason
    if scheduled_on:
        entry["fits"] = True
        entry.pop("reason", None)
    if v.tracer is None:
        if v.reason is None and not scheduled_on:
            entry["claims"] = [{"name": c["metadata"]["name"], "allocated": True} for c in claims]
        return entry
    node = cluster.snap.node(v.name)
    entry["claims"] = []
    elsewhere = not_selected(cluster.snap, node)
    if elsewhere:
        entry["notOffered"] = elsewhere
    allocations = v.outcome.allocations if v.outcome is not None and v.outcome.fits else None
    for ci, claim in enumerate(v.pending):
        real = next((c for c in claims if c["metadata"].get("uid") == claim["metadata"].get("uid")), claim)
        chosen = results_of(real) if scheduled_on else ((allocations[ci].get("devices") or {}).get("results") or []
                                                      if allocations else [])
        entry["claims"].append({"name": claim["metadata"]["name"],
                                "requests": _request_entries(claim, ci, v, chosen, bool(scheduled_on))})
    return entry


def _request_names(claim: Obj) -> list[tuple[str, Obj]]:
    """(request name as in results, its spec) per request or subrequest."""
    out: list[tuple[str, Obj]] = []
    for r in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        if r.get("firstAvailable"):
            out.extend((f"{r.get('name', '')}/{s.get('name', '')}", s) for s in r["firstAvailable"])
        else:
            out.append((r.get("name", ""), r.get("exactly") or {}))
    return out


def _request_entries(claim: Obj, ci: int, v: NodeVerdict, chosen: list[Obj], scheduled: bool) -> list[Obj]:
    assert v.tracer is not None
    out: list[Obj] = []
    fits = v.reason is None or scheduled
    for rname, spec in _request_names(claim):
        notes = v.tracer.notes.get((ci, rname), {})
        mine = {_did(r) for r in chosen if r.get("request") == rname}
        devices = []
        for subject, (reason, message) in notes.items():
            if subject in mine:
                reason, message = "Chosen", ("allocated to this claim" if scheduled else "would be allocated")
            elif reason == "Usable":
                message = ("usable, not needed" if fits else "usable on its own, but no combination of devices "
                           "satisfies all of the pod's requests with it")
            label = f"pool {subject[1]}" if subject[0] == "pool" else "/".join(subject)
            devices.append({"device": label, "reason": reason, "message": message})
        for did in sorted(mine - set(notes)):  # held by the claim but not offered on re-evaluation
            devices.append({"device": "/".join(did), "reason": "Chosen", "message": "allocated to this claim"})
        entry: Obj = {"name": rname, "deviceClassName": spec.get("deviceClassName", ""),
                      "wants": ("all" if spec.get("allocationMode") == "All" else str(spec.get("count") or 1)),
                      "chosen": ["/".join(d) for d in sorted(mine)], "devices": devices}
        if not notes:
            entry["note"] = ("not needed: an earlier alternative was chosen" if fits and "/" in rname
                             else "not evaluated: the search stopped at an earlier request")
        out.append(entry)
    return out


def not_selected(snap: Snapshot, node: Obj | None) -> list[Obj]:
    """Devices whose slice (or own) node selection leaves this node out: nodeSelector, allNodes=false and
    perDeviceNodeSelection. Other nodes' node-local slices are not listed (they never are candidates)."""
    out: list[Obj] = []
    if node is None:
        return out
    for s in snap.slices:
        spec = s.get("spec") or {}
        if spec.get("nodeName") or spec.get("allNodes") or spec.get("sharedCounters") and not spec.get("devices"):
            continue
        driver, pool = spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")
        slice_name = (s.get("metadata") or {}).get("name", "")
        if spec.get("nodeSelector") is not None:
            if node_selector_matches(spec["nodeSelector"], node):
                continue
            why = f"slice {slice_name}'s nodeSelector {_selector_text(spec['nodeSelector'])} does not select the node"
            out.extend({"device": f"{driver}/{pool}/{d.get('name', '')}", "reason": "NodeNotSelected",
                        "message": why} for d in spec.get("devices") or [])
        elif spec.get("perDeviceNodeSelection"):
            for d in spec.get("devices") or []:
                if d.get("allNodes"):
                    continue
                if d.get("nodeName"):
                    if d["nodeName"] == node["metadata"]["name"]:
                        continue
                    why = f"the device is on node {d['nodeName']}"
                elif d.get("nodeSelector") is not None:
                    if node_selector_matches(d["nodeSelector"], node):
                        continue
                    why = f"the device's nodeSelector {_selector_text(d['nodeSelector'])} does not select the node"
                else:
                    continue
                out.append({"device": f"{driver}/{pool}/{d.get('name', '')}", "reason": "NodeNotSelected",
                            "message": why})
    return out


def _selector_text(sel: Obj) -> str:
    terms = []
    for t in sel.get("nodeSelectorTerms") or []:
        reqs = []
        for field_, reqlist in (("", t.get("matchExpressions") or []), ("field ", t.get("matchFields") or [])):
            for r in reqlist:
                values = ",".join(r.get("values") or [])
                reqs.append(f"{field_}{r.get('key', '')} {r.get('operator', '')}" + (f" [{values}]" if values else ""))
        terms.append(" && ".join(reqs) or "(empty term)")
    return "{" + " || ".join(terms) + "}"


# ---------------------------------------------------------------- text


def render(expl: Obj, verbose: bool = False, per_reason: int = 2) -> str:
    """The explanation as `dramock explain` prints it: short by default (per request, problems grouped by
    reason with a few devices each), every device with `verbose`."""
    md = expl.get("metadata") or {}
    state = "" if expl.get("phase") == "Scheduled" else f"{expl.get('phase')}: "
    lines = [f"Pod {md.get('namespace')}/{md.get('name')}: {state}{expl.get('verdict')}"]
    if expl.get("schedulerMessage") and expl["schedulerMessage"] != expl.get("verdict"):
        lines.append(f"  the scheduler last said: {expl['schedulerMessage']}")
    for node in expl.get("nodes") or []:
        head = f"node {node['name']}: " + ("fits" if node.get("fits") else node.get("reason", ""))
        lines.append(head)
        for claim in node.get("claims") or []:
            if claim.get("allocated"):
                lines.append(f"  claim {claim['name']}: already allocated, usable here")
                continue
            for req in claim.get("requests") or []:
                devs = req.get("devices") or []
                usable = sum(1 for d in devs if d["reason"] in GOOD)
                chosen = ", ".join(req.get("chosen") or []) or "none"
                lines.append(f"  claim {claim['name']}, request {req['name']} (class {req['deviceClassName']}, "
                             f"wants {req.get('wants', '1')}): {usable} of {len(devs)} devices usable, "
                             f"chosen: {chosen}")
                if req.get("note"):
                    lines.append(f"    {req['note']}")
                lines.extend(_device_lines(devs, verbose, per_reason))
        if node.get("notOffered"):
            lines.append("  devices not offered on this node:")
            lines.extend(_device_lines(node["notOffered"], verbose, per_reason))
    return "\n".join(lines) + "\n"


def _device_lines(devs: list[Obj], verbose: bool, per_reason: int) -> list[str]:
    if verbose:
        return [f"    {d['device']}: {d['reason']}" + (f": {d['message']}" if d.get("message") else "") for d in devs]
    out = []
    groups: dict[str, list[Obj]] = {}
    for d in devs:
        groups.setdefault(d["reason"], []).append(d)
    order = sorted(groups, key=lambda r: (REASON_ORDER.index(r) if r in REASON_ORDER else len(REASON_ORDER), r))
    for reason in order:
        items = groups[reason]
        shown = items if reason == "Chosen" else items[:per_reason]
        for d in shown:
            out.append(f"    {d['device']}: {reason}" + (f": {d['message']}" if d.get("message") else ""))
        if len(items) > len(shown):
            out.append(f"    ... and {len(items) - len(shown)} more {reason} (-v lists every device)")
    return out


def to_json(expl: Obj) -> str:
    return json.dumps(expl, indent=2, sort_keys=False)
