"""scheduling.k8s.io/v1beta1 Workload and PodGroup validation: the parts dramock acts on (upstream's
pkg/apis/scheduling/validation, 1.37).

- the scheduling policy: exactly one of `basic` and `gang` (gang `minCount` positive), fixed after creation;
- DRAWorkloadResourceClaims (KEP-5729): `spec.resourceClaims` of a PodGroup and
  `spec.podGroupTemplates[*].resourceClaims` of a Workload: at most 4 entries, each with a unique DNS-label
  name and exactly one of `resourceClaimName` / `resourceClaimTemplateName` (DNS subdomains); immutable;
- a PodGroup's `status.resourceClaimStatuses`: each names an entry of `spec.resourceClaims`, once, with a
  DNS-subdomain claim name;
- a PodGroup's `spec.workloadRef`: both names required (DNS subdomain / DNS label).

Not checked: topology constraints, disruption modes, priorities and composite groups (dramock does not act
on them; the structural schema still checks their types).
"""

from __future__ import annotations

from dramock.schemas.validation.field import (
    Cause,
    Obj,
    _dict,
    _list,
    _str,
    child,
    duplicate,
    index,
    invalid_raw,
    invalid_value,
    required,
    semantic_equal,
    too_many,
)
from dramock.schemas.validation.names import (
    is_dns1123_subdomain,
    validate_dns1123_label,
    validate_dns1123_subdomain,
)
from dramock.schemas.validation.pod import validate_claim_reference, validate_unique_label_name

# MaxPodGroupResourceClaims: claims of one PodGroup or PodGroupTemplate.
MAX_POD_GROUP_RESOURCE_CLAIMS = 4
MAX_POD_GROUP_TEMPLATES = 8
IMMUTABLE = "field is immutable"


def validate_pod_group_resource_claims(claims: object, path: str) -> list[Cause]:
    """A list of PodGroupResourceClaims (a PodGroup's spec or a Workload's template)."""
    items = _list(claims)
    errs: list[Cause] = []
    if len(items) > MAX_POD_GROUP_RESOURCE_CLAIMS:
        errs.append(too_many(path, len(items), MAX_POD_GROUP_RESOURCE_CLAIMS))
    names: set[str] = set()
    for i, raw in enumerate(items):
        errs += validate_claim_reference(_dict(raw), names, index(path, i), "scheduling.PodGroupResourceClaim")
    return errs


def _validate_policy(policy: object, path: str) -> list[Cause]:
    if policy is None:
        return [required(path)]
    p = _dict(policy)
    set_ = [k for k in ("basic", "gang") if p.get(k) is not None]
    if len(set_) != 1:
        return [invalid_raw(path, "{" + ", ".join(set_) + "}", "must specify exactly one of: `basic`, `gang`")]
    if set_ == ["gang"]:
        min_count = _dict(p["gang"]).get("minCount")
        if not isinstance(min_count, int) or min_count <= 0:
            return [invalid_value(child(path, "gang", "minCount"), min_count, "must be greater than zero")]
    return []


def validate_pod_group(obj: Obj) -> list[Cause]:
    spec = _dict(obj.get("spec"))
    errs = _validate_policy(spec.get("schedulingPolicy"), "spec.schedulingPolicy")
    ref = spec.get("workloadRef")
    if ref is not None:
        ref = _dict(ref)
        for key, check in (("workloadName", validate_dns1123_subdomain), ("templateName", validate_dns1123_label)):
            value = _str(ref.get(key))
            errs += check(value, f"spec.workloadRef.{key}") if value else [required(f"spec.workloadRef.{key}")]
    errs += validate_pod_group_resource_claims(spec.get("resourceClaims"), "spec.resourceClaims")
    return errs


def _immutable(new: object, old: object, path: str) -> list[Cause]:
    if semantic_equal(new, old):
        return []
    return [invalid_raw(path, "...", IMMUTABLE)]


def validate_pod_group_update(new: Obj, old: Obj) -> list[Cause]:
    errs = validate_pod_group(new)
    ns, os_ = _dict(new.get("spec")), _dict(old.get("spec"))
    # The policy is chosen at creation (gang minCount stays mutable); the other DRA-relevant fields are fixed.
    np, op = _dict(ns.get("schedulingPolicy")), _dict(os_.get("schedulingPolicy"))
    if ("gang" in np) != ("gang" in op) or ("basic" in np) != ("basic" in op):
        errs += [invalid_raw("spec.schedulingPolicy", "...", IMMUTABLE)]
    errs += _immutable(ns.get("workloadRef"), os_.get("workloadRef"), "spec.workloadRef")
    errs += _immutable(ns.get("resourceClaims"), os_.get("resourceClaims"), "spec.resourceClaims")
    return errs


def validate_pod_group_status_update(new: Obj, old: Obj) -> list[Cause]:
    spec_claims = {_str(_dict(c).get("name")) for c in _list(_dict(new.get("spec")).get("resourceClaims"))}
    errs: list[Cause] = []
    seen: set[str] = set()
    path = "status.resourceClaimStatuses"
    for i, raw in enumerate(_list(_dict(new.get("status")).get("resourceClaimStatuses"))):
        status = _dict(raw)
        p = index(path, i)
        name = _str(status.get("name"))
        if name not in spec_claims:
            errs.append(invalid_value(child(p, "name"), name,
                                      "must match the name of an entry in `spec.resourceClaims`"))
        if name in seen:
            errs.append(duplicate(child(p, "name"), name))
        seen.add(name)
        claim_name = status.get("resourceClaimName")
        if claim_name is not None:
            errs += [invalid_value(child(p, "resourceClaimName"), _str(claim_name), m)
                     for m in is_dns1123_subdomain(_str(claim_name))]
    return errs


def validate_workload(obj: Obj) -> list[Cause]:
    spec = _dict(obj.get("spec"))
    templates = _list(spec.get("podGroupTemplates"))
    errs: list[Cause] = []
    if spec.get("podGroupTemplates") is None and spec.get("compositePodGroupTemplates") is None:
        errs.append(required("spec.podGroupTemplates"))
    if len(templates) > MAX_POD_GROUP_TEMPLATES:
        errs.append(too_many("spec.podGroupTemplates", len(templates), MAX_POD_GROUP_TEMPLATES))
    names: set[str] = set()
    for i, raw in enumerate(templates):
        t = _dict(raw)
        p = index("spec.podGroupTemplates", i)
        errs += validate_unique_label_name(_str(t.get("name")), names, child(p, "name"))
        errs += _validate_policy(t.get("schedulingPolicy"), child(p, "schedulingPolicy"))
        errs += validate_pod_group_resource_claims(t.get("resourceClaims"), child(p, "resourceClaims"))
    return errs


def validate_workload_update(new: Obj, old: Obj) -> list[Cause]:
    errs = validate_workload(new)
    nt = {_str(_dict(t).get("name")): _dict(t) for t in _list(_dict(new.get("spec")).get("podGroupTemplates"))}
    ot = {_str(_dict(t).get("name")): _dict(t) for t in _list(_dict(old.get("spec")).get("podGroupTemplates"))}
    if sorted(nt) != sorted(ot):
        errs.append(invalid_raw("spec.podGroupTemplates", "...", IMMUTABLE))
        return errs
    for i, t in enumerate(_list(_dict(new.get("spec")).get("podGroupTemplates"))):
        name = _str(_dict(t).get("name"))
        errs += _immutable(_dict(t).get("resourceClaims"), ot[name].get("resourceClaims"),
                           child(index("spec.podGroupTemplates", i), "resourceClaims"))
    errs += _immutable(_dict(new.get("spec")).get("controllerRef"), _dict(old.get("spec")).get("controllerRef"),
                       "spec.controllerRef")
    return errs
