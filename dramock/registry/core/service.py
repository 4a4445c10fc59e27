"""core/v1 Service (upstream's pkg/registry/core/service/strategy.go, essentials): defaults, an empty status
on create, kept addresses on update. Addresses are allocated by admission (admission/serviceip.py) just
before storage; validation is schemas/validation/service.py."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dramock.registry.kind import STANDARD_VERBS, Kind
from dramock.registry.printing import CORE, Printer, Row, age, age_col, col, doc, name, name_col
from dramock.registry.strategy import Strategy
from dramock.schemas.validation.field import Cause
from dramock.schemas.validation.service import validate_service, validate_service_update

Obj = dict[str, Any]


def default(obj: Obj) -> None:
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


class ServiceStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        default(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"loadBalancer": {}}

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return validate_service(obj)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_service_update(new, old)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        # An update that leaves the allocated addresses out keeps them (as upstream's PatchAllocatedValues).
        ns, os_ = new.setdefault("spec", {}), old.get("spec") or {}
        if ns.get("type") != "ExternalName":
            for key in ("clusterIP", "clusterIPs"):
                if not ns.get(key) and os_.get(key):
                    ns[key] = os_[key]
        old_ports = {(p.get("port"), p.get("protocol")): p for p in os_.get("ports") or []}
        for p in ns.get("ports") or []:
            prev = old_ports.get((p.get("port"), p.get("protocol")))
            if prev and prev.get("nodePort") and not p.get("nodePort") and ns.get("type") in ("NodePort",
                                                                                            "LoadBalancer"):
                p["nodePort"] = prev["nodePort"]


def _columns() -> list[Obj]:
    return [
        name_col(),
        col("Type", "string", doc(CORE + "ServiceSpec", "type")),
        col("Cluster-IP", "string", doc(CORE + "ServiceSpec", "clusterIP")),
        col("External-IP", "string", doc(CORE + "ServiceSpec", "externalIPs")),
        col("Port(s)", "string", doc(CORE + "ServiceSpec", "ports")),
        age_col(),
        col("Selector", "string", doc(CORE + "ServiceSpec", "selector"), priority=1),
    ]


def _row(o: Obj, now: datetime) -> Row:
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


PRINTER = Printer(_columns, _row)

# Upstream's service storage has no DeleteCollection.
KIND = Kind("", "v1", "Service", "services", True, short_names=("svc",), categories=("all",),
            subresources=("status",), return_deleted_object=True,
            verbs=tuple(v for v in STANDARD_VERBS if v != "deletecollection"),
            strategy=ServiceStrategy, printer=PRINTER)
