"""ResourceQuota's generic machinery: resource lists, scopes, the `Evaluator` shape and the object-count
evaluator, and usage over a namespace. A kind with its own usage rules (pods, resource claims) defines its
`Evaluator` in its module; `registry.kinds.QUOTA_EVALUATORS` lists them by group-resource.

Pure functions over wire-shaped objects, shared by the admission plugin (dramock/admission/quota.py)
and the quota controller (dramock/controllers/quota.py), as upstream's pkg/quota/v1/evaluator is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dramock.schemas.quantity import Quantity, parse_or_none
from dramock.schemas.validation.core import is_extended_resource_name

Obj = dict[str, Any]
ResourceList = dict[str, Quantity]

IMPLICIT_EXTENDED_PREFIX = "deviceclass.resource.kubernetes.io/"  # ResourceDeviceClassPrefix
REQUESTS_PREFIX = "requests."
LIMITS_PREFIX = "limits."
# Legacy object-count names upstream still accepts beside count/<resource>.
_LEGACY_COUNT = {"services": "services", "configmaps": "configmaps", "secrets": "secrets",
                 "persistentvolumeclaims": "persistentvolumeclaims",
                 "replicationcontrollers": "replicationcontrollers", "resourcequotas": "resourcequotas"}

ZERO = Quantity.from_int(0)


@dataclass
class Lookup:
    """What evaluators may need besides the object: a device class by name, a pod by namespace/name."""

    device_class: Callable[[str], Obj | None]
    pod: Callable[[str, str], Obj | None]

    def extended_resource_of(self, class_name: str) -> str | None:
        cls = self.device_class(class_name)
        ext = ((cls or {}).get("spec") or {}).get("extendedResourceName")
        return ext if isinstance(ext, str) and ext else None


# ---------------------------------------------------------------- resource lists


def parse_list(raw: Any) -> ResourceList:
    out: ResourceList = {}
    for k, v in (raw or {}).items() if isinstance(raw, dict) else ():
        q = parse_or_none(v)
        if q is not None:
            out[k] = q
    return out


def format_list(rl: ResourceList) -> dict[str, str]:
    return {k: str(rl[k]) for k in sorted(rl)}


def add(a: ResourceList, b: ResourceList) -> ResourceList:
    out = dict(a)
    for k, v in b.items():
        out[k] = out[k].add(v) if k in out else v
    return out


def put_add(rl: ResourceList, key: str, q: Quantity) -> None:
    rl[key] = rl[key].add(q) if key in rl else q


def max_of(a: Quantity | None, b: Quantity) -> Quantity:
    return b if a is None or b.cmp(a) > 0 else a


def mask(rl: ResourceList, names: Iterable[str]) -> ResourceList:
    keep = set(names)
    return {k: v for k, v in rl.items() if k in keep}


def equal_lists(a: ResourceList, b: ResourceList) -> bool:
    return a.keys() == b.keys() and all(a[k].cmp(b[k]) == 0 for k in a)


def pretty(rl: ResourceList) -> str:
    return ",".join(f"{k}={rl[k]}" for k in sorted(rl))


def quota_extended_resource_name(name: str) -> bool:
    """Whether quota counts `name` as an extended resource: helper.IsExtendedResourceName, and also the
    implicit DRA names (`deviceclass.resource.kubernetes.io/<class>`), which the pod and claim evaluators
    both charge."""
    return is_extended_resource_name(name) or is_implicit_extended_resource_name(name)


def is_implicit_extended_resource_name(name: str) -> bool:
    """`deviceclass.resource.kubernetes.io/<class>`: a DRA device class requested as an extended resource."""
    return name.startswith(IMPLICIT_EXTENDED_PREFIX)


# ---------------------------------------------------------------- scopes


def scope_selectors(quota: Obj) -> list[Obj]:
    spec = quota.get("spec") or {}
    out = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or []]
    out += list(((spec.get("scopeSelector") or {}).get("matchExpressions")) or [])
    return out


# ---------------------------------------------------------------- evaluators


@dataclass
class Evaluator:
    """One group-resource's quota evaluator (upstream's quota.Evaluator, reduced to what is used here)."""

    group_resource: str  # "pods", "resourceclaims.resource.k8s.io"
    matching: Callable[[Iterable[str]], list[str]]
    usage: Callable[[Obj, Lookup], ResourceList]
    scope: Callable[[Obj, Obj], bool] | None = None  # None: a scoped quota never matches (MatchesNoScopeFunc)
    constraints: Callable[[Iterable[str], Obj], str | None] | None = None
    handles_update: Callable[[str], bool] = staticmethod(lambda subresource: False)

    def matches(self, quota: Obj, obj: Obj, hard: ResourceList) -> bool:
        if not self.matching(hard):
            return False
        for sel in scope_selectors(quota):
            if self.scope is None or not self.scope(sel, obj):
                return False
        return True


def count_name(group_resource: str) -> str:
    return "count/" + group_resource


def _object_count_evaluator(group_resource: str) -> Evaluator:
    names = [count_name(group_resource)]
    if group_resource in _LEGACY_COUNT:
        names.append(_LEGACY_COUNT[group_resource])

    def usage(_obj: Obj, _lookup: Lookup) -> ResourceList:
        return {n: Quantity.from_int(1) for n in names}

    return Evaluator(group_resource, lambda items: [n for n in items if n in names], usage)


def evaluator_for(group_resource: str, evaluators: Mapping[str, Evaluator]) -> Evaluator:
    """The kind's own evaluator (`evaluators`: the registered ones by group-resource), else an object count."""
    return evaluators.get(group_resource) or _object_count_evaluator(group_resource)


def group_resources_in(names: Iterable[str], evaluators: Mapping[str, Evaluator]) -> set[str]:
    """The group-resources whose usage a quota's hard names need (for the controller's listing)."""
    out: set[str] = set()
    names = list(names)
    for gr, ev in evaluators.items():
        if ev.matching(names):
            out.add(gr)
    for n in names:
        if n.startswith("count/"):
            out.add(n[len("count/"):])
        elif n in _LEGACY_COUNT:
            out.add(_LEGACY_COUNT[n])
    return out


def calculate_usage(quota: Obj, objects: Callable[[str], list[Obj]], lookup: Lookup,
                    evaluators: Mapping[str, Evaluator]) -> ResourceList:
    """Usage of everything in the quota's namespace for the quota's spec.hard (upstream CalculateUsage):
    every matched resource present, zero when nothing uses it."""
    hard = parse_list((quota.get("spec") or {}).get("hard"))
    used: ResourceList = {}
    for gr in sorted(group_resources_in(hard, evaluators)):
        ev = evaluator_for(gr, evaluators)
        names = ev.matching(hard)
        if not names:
            continue
        for n in names:
            used.setdefault(n, Quantity.from_int(0))
        selectors = scope_selectors(quota)
        for obj in objects(gr):
            if selectors and (ev.scope is None or not all(ev.scope(s, obj) for s in selectors)):
                continue
            used = add(used, mask(ev.usage(obj, lookup), names))
    return mask(used, hard)
