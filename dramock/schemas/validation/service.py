"""The essentials of core/v1 Service validation (upstream's ValidateService / ValidateServiceUpdate): the
checks that matter for charts (ports, type) and clusterIP immutability."""

from __future__ import annotations

from dramock.schemas.validation.field import Cause, Obj, cause, invalid_value, required

TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")


def validate_service(obj: Obj) -> list[Cause]:
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


def validate_service_update(new: Obj, old: Obj) -> list[Cause]:
    errs = validate_service(new)
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    if os_.get("clusterIP") and ns.get("clusterIP") != os_.get("clusterIP") and ns.get("type") != "ExternalName":
        errs.append(cause("FieldValueInvalid", "spec.clusterIPs[0]",
                          f"Invalid value: []string{{\"{ns.get('clusterIP')}\"}}: may not change once set"))
    return errs
