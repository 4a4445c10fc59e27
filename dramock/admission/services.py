"""The core/v1 Service strategy (upstream's pkg/registry/core/service/strategy.go, essentials): defaults,
an empty status on create, the checks of ValidateService that matter for charts (ports, type), and
clusterIP immutability. Addresses are allocated by admission (serviceip.py) just before storage."""

from __future__ import annotations

from typing import Any

from dramock.admission.strategy import Cause, Strategy
from dramock.schemas import defaults
from dramock.schemas.validation.field import cause, invalid_value, required

Obj = dict[str, Any]
TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")


class ServiceStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.service(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"loadBalancer": {}}

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        spec = obj.get("spec") or {}
        errs: list[Cause] = []
        typ = spec.get("type")
        if typ not in TYPES:
            errs.append(cause("FieldValueNotSupported", "spec.type", f'Unsupported value: "{typ}": supported '
                              'values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"'))
        if typ == "ExternalName" and not spec.get("externalName"):
            errs.append(required("spec.externalName"))
        ports = spec.get("ports") or []
        if not ports and typ != "ExternalName" and spec.get("clusterIP") != "None":
            errs.append(required("spec.ports"))
        for i, p in enumerate(ports):
            port = p.get("port")
            if not isinstance(port, int) or not 1 <= port <= 65535:
                errs.append(invalid_value(f"spec.ports[{i}].port", port, "must be between 1 and 65535, inclusive"))
            if len(ports) > 1 and not p.get("name"):
                errs.append(required(f"spec.ports[{i}].name"))
        return errs

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        errs = self.validate_semantic(new)
        ns, os_ = new.get("spec") or {}, old.get("spec") or {}
        if os_.get("clusterIP") and ns.get("clusterIP") != os_.get("clusterIP") and \
                ns.get("type") != "ExternalName":
            errs.append(cause("FieldValueInvalid", "spec.clusterIPs[0]",
                              f"Invalid value: []string{{\"{ns.get('clusterIP')}\"}}: may not change once set"))
        return errs

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
