"""One declarative entry per served kind: the API's vocabulary.

A new kind is one entry here, one strategy in `admission/strategy.py` and (for semantic rules) one
validation module; the HTTP layer reads everything it needs from these entries.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dramock.schemas import defs
from dramock.schemas.featuregates import FeatureGates

Obj = dict[str, Any]

STANDARD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


def _get(*path: str, default: str = "") -> Callable[[Obj], str]:
    """A field-selector getter: the string value at `path`, as upstream's GetAttrs renders it."""

    def getter(obj: Obj) -> str:
        cur: Any = obj
        for p in path:
            if not isinstance(cur, dict):
                return default
            cur = cur.get(p)
        if cur is None:
            return default
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return getter


@dataclass(frozen=True, eq=False)  # one instance per kind: identity is equality
class Kind:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    # Subresources beyond the object itself: "status", "finalize", "binding".
    subresources: tuple[str, ...] = ()
    # Field selectors beyond metadata.name / metadata.namespace: field path -> getter.
    selectable_fields: dict[str, Callable[[Obj], str]] = field(default_factory=dict)
    # Upstream's registry.Store.ReturnDeletedObject: DELETE answers the object instead of a Status.
    return_deleted_object: bool = False
    # Whether metadata.generation is maintained (set to 1 on create, bumped on spec changes).
    tracks_generation: bool = False
    verbs: tuple[str, ...] = STANDARD_VERBS
    # A kind that exists in one version only (an alpha kind) is stored in that version, not converted to v1.
    only_version: bool = False
    # Served only while this feature gate is on (and its version is turned on by --runtime-config).
    gate: str = ""

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """`resourceclaims.resource.k8s.io`, or `pods` for the core group."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def definition(self) -> str:
        name = defs.kind_definition(self.group, self.version, self.kind)
        assert name, f"no 1.37 definition for {self.api_version} {self.kind}"
        return name

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def storage_bucket(self) -> str:
        """Storage key prefix. Events of both groups share one bucket, as upstream stores them once."""
        if self.plural == "events":
            return "events"
        return f"{self.group}/{self.plural}" if self.group else self.plural

    def field_value(self, obj: Obj, path: str) -> str | None:
        """The value of a selectable field, or None when `path` is not selectable for this kind."""
        if path == "metadata.name":
            return obj.get("metadata", {}).get("name", "")
        if path == "metadata.namespace" and self.namespaced:
            return obj.get("metadata", {}).get("namespace", "")
        getter = self.selectable_fields.get(path)
        return getter(obj) if getter else None


_EVENT_FIELDS = {
    "involvedObject.kind": _get("involvedObject", "kind"),
    "involvedObject.namespace": _get("involvedObject", "namespace"),
    "involvedObject.name": _get("involvedObject", "name"),
    "involvedObject.uid": _get("involvedObject", "uid"),
    "involvedObject.apiVersion": _get("involvedObject", "apiVersion"),
    "involvedObject.resourceVersion": _get("involvedObject", "resourceVersion"),
    "involvedObject.fieldPath": _get("involvedObject", "fieldPath"),
    "reason": _get("reason"),
    "reportingComponent": _get("reportingComponent"),
    "source": _get("source", "component"),
    "type": _get("type"),
}

# events.k8s.io/v1 selects on its own names (regarding.*, reportingController), converted to the stored
# core shape as upstream's AddFieldLabelConversionsForEvent does; the core names are not accepted there.
_EVENTS_V1_FIELDS = {
    **{f"regarding.{f}": _EVENT_FIELDS[f"involvedObject.{f}"]
       for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")},
    "reason": _EVENT_FIELDS["reason"],
    "reportingController": _EVENT_FIELDS["reportingComponent"],
    "type": _EVENT_FIELDS["type"],
}

RESOURCE = "resource.k8s.io"
SCHEDULING = "scheduling.k8s.io"

KINDS: tuple[Kind, ...] = (
    # resource.k8s.io/v1
    Kind(RESOURCE, "v1", "DeviceClass", "deviceclasses", False,
         return_deleted_object=True, tracks_generation=True),
    Kind(RESOURCE, "v1", "ResourceSlice", "resourceslices", False,
         selectable_fields={
             "spec.nodeName": _get("spec", "nodeName"),
             "spec.driver": _get("spec", "driver"),
             "spec.pool.name": _get("spec", "pool", "name"),
         },
         return_deleted_object=True, tracks_generation=True),
    Kind(RESOURCE, "v1", "ResourceClaim", "resourceclaims", True, subresources=("status",),
         return_deleted_object=True),
    Kind(RESOURCE, "v1", "ResourceClaimTemplate", "resourceclaimtemplates", True,
         return_deleted_object=True),
    # Unlike the other resource.k8s.io kinds, upstream's v1 DeviceTaintRule REST answers DELETE with a Status.
    Kind(RESOURCE, "v1", "DeviceTaintRule", "devicetaintrules", False, subresources=("status",),
         tracks_generation=True),
    # core v1
    Kind("", "v1", "Namespace", "namespaces", False, short_names=("ns",),
         subresources=("status", "finalize"),
         selectable_fields={"status.phase": _get("status", "phase")},
         return_deleted_object=True,
         # The namespace registry has no DeleteCollection.
         verbs=tuple(v for v in STANDARD_VERBS if v != "deletecollection")),
    Kind("", "v1", "Node", "nodes", False, short_names=("no",), subresources=("status",),
         selectable_fields={"spec.unschedulable": _get("spec", "unschedulable", default="false")}),
    Kind("", "v1", "Pod", "pods", True, short_names=("po",), categories=("all",),
         subresources=("status", "binding", "log", "exec", "attach", "portforward"),
         selectable_fields={
             "spec.nodeName": _get("spec", "nodeName"),
             "spec.restartPolicy": _get("spec", "restartPolicy"),
             "spec.schedulerName": _get("spec", "schedulerName"),
             "spec.serviceAccountName": _get("spec", "serviceAccountName"),
             "spec.hostNetwork": _get("spec", "hostNetwork", default="false"),
             "status.phase": _get("status", "phase"),
             "status.podIP": _get("status", "podIP"),
             "status.nominatedNodeName": _get("status", "nominatedNodeName"),
         },
         return_deleted_object=True, tracks_generation=True),
    Kind("", "v1", "ResourceQuota", "resourcequotas", True, short_names=("quota",),
         subresources=("status",), return_deleted_object=True),
    Kind("", "v1", "Event", "events", True, short_names=("ev",), selectable_fields=_EVENT_FIELDS),
    Kind("", "v1", "ConfigMap", "configmaps", True, short_names=("cm",)),
    Kind("", "v1", "Secret", "secrets", True, selectable_fields={"type": _get("type")}),
    Kind("", "v1", "ServiceAccount", "serviceaccounts", True, short_names=("sa",), subresources=("token",),
         return_deleted_object=True),
    # Upstream's service storage has no DeleteCollection.
    Kind("", "v1", "Service", "services", True, short_names=("svc",), categories=("all",),
         subresources=("status",), return_deleted_object=True,
         verbs=tuple(v for v in STANDARD_VERBS if v != "deletecollection")),
    # Stored once in the core shape (see schemas/convert.py).
    Kind("events.k8s.io", "v1", "Event", "events", True, short_names=("ev",),
         selectable_fields=_EVENTS_V1_FIELDS),
    Kind("coordination.k8s.io", "v1", "Lease", "leases", True),
    # Self reviews: create-only, never stored (apiserver/reviews.py answers them).
    Kind("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", False, verbs=("create",)),
    Kind("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", False,
         verbs=("create",)),
    Kind("authorization.k8s.io", "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", False,
         verbs=("create",)),
    Kind("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", False, verbs=("create",)),
    # RBAC (dramock/auth): enforced on the secure port.
    Kind("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    Kind("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    Kind("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    Kind("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    # Workloads (apps/v1, batch/v1), run by the controller manager's workload controllers.
    Kind("apps", "v1", "Deployment", "deployments", True, short_names=("deploy",), categories=("all",),
         subresources=("status", "scale"), tracks_generation=True),
    Kind("apps", "v1", "ReplicaSet", "replicasets", True, short_names=("rs",), categories=("all",),
         subresources=("status", "scale"), tracks_generation=True),
    Kind("apps", "v1", "DaemonSet", "daemonsets", True, short_names=("ds",), categories=("all",),
         subresources=("status",), tracks_generation=True),
    Kind("apps", "v1", "StatefulSet", "statefulsets", True, short_names=("sts",), categories=("all",),
         subresources=("status", "scale"), tracks_generation=True),
    Kind("apps", "v1", "ControllerRevision", "controllerrevisions", True),
    Kind("batch", "v1", "Job", "jobs", True, categories=("all",), subresources=("status",),
         selectable_fields={"status.successful": _get("status", "succeeded", default="0")},
         tracks_generation=True),
)

# Versions served only when --runtime-config enables them (upstream 1.37 serves resource.k8s.io/v1 alone by
# default), in the order discovery lists them after the preferred v1, and the kinds each one has.
OPTIONAL_VERSIONS: dict[tuple[str, str], tuple[str, ...]] = {
    (RESOURCE, "v1beta2"): ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate",
                            "DeviceTaintRule"),
    (RESOURCE, "v1beta1"): ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"),
    (RESOURCE, "v1alpha3"): ("DeviceTaintRule",),
    (SCHEDULING, "v1beta1"): (),
}

STORED_KINDS = KINDS

# Kinds of a single optional version, served when --runtime-config turns their version on and their gate is on.
ALPHA_KINDS: tuple[Kind, ...] = (
    # KEP-5677 DRAResourcePoolStatus: a one-time report on the pools of a driver, answered by a controller.
    Kind(RESOURCE, "v1alpha3", "ResourcePoolStatusRequest", "resourcepoolstatusrequests", False,
         subresources=("status",), return_deleted_object=True, only_version=True, gate="DRAResourcePoolStatus"),
    # GenericWorkload (KEP-4671): the Workload API and the PodGroups pods name in spec.schedulingGroup
    # (DRAWorkloadResourceClaims, KEP-5729: claims for a PodGroup, see admission/scheduling.py).
    Kind(SCHEDULING, "v1beta1", "Workload", "workloads", True, only_version=True, gate="GenericWorkload"),
    Kind(SCHEDULING, "v1beta1", "PodGroup", "podgroups", True, subresources=("status",), only_version=True,
         gate="GenericWorkload"),
)


class RuntimeConfigError(ValueError):
    pass


def parse_runtime_config(spec: str) -> dict[tuple[str, str], bool]:
    """`resource.k8s.io/v1beta1=true,...` -> {(group, version): enabled}, as kube-apiserver parses it."""
    out: dict[tuple[str, str], bool] = {}
    for part in filter(None, (p.strip() for p in (spec or "").split(","))):
        gv, _, value = part.partition("=")
        value = value or "true"
        if value.lower() not in ("true", "false"):
            raise RuntimeConfigError(f"invalid value of {gv}: {value}, err: strconv.ParseBool")
        group, _, version = gv.rpartition("/")
        if (group, version) not in OPTIONAL_VERSIONS and (group, version) not in {(k.group, k.version)
                                                                                  for k in STORED_KINDS}:
            raise RuntimeConfigError(f"unknown api groups {gv}")
        out[(group, version)] = value.lower() == "true"
    return out


def configure(runtime_config: dict[tuple[str, str], bool], gates: FeatureGates | None = None) -> None:
    """Serve the optional versions the runtime config turns on (once, at server start), with the alpha kinds
    whose gates are on."""
    global KINDS, GROUP_VERSIONS, _BY_GVR
    gates = gates or FeatureGates()
    kinds = list(STORED_KINDS)
    for gv, names in OPTIONAL_VERSIONS.items():
        if runtime_config.get(gv):
            kinds += [dataclasses.replace(k, version=gv[1]) for k in STORED_KINDS
                      if k.group == gv[0] and k.kind in names]
            kinds += [k for k in ALPHA_KINDS if (k.group, k.version) == gv and gates.enabled(k.gate)]
    KINDS = tuple(kinds)
    GROUP_VERSIONS = tuple(dict.fromkeys((k.group, k.version) for k in KINDS))
    _BY_GVR = {(k.group, k.version, k.plural): k for k in KINDS}


# (group, version) pairs in the order discovery lists them; the core group is "".
GROUP_VERSIONS: tuple[tuple[str, str], ...] = tuple(dict.fromkeys((k.group, k.version) for k in KINDS))

_BY_GVR: dict[tuple[str, str, str], Kind] = {(k.group, k.version, k.plural): k for k in KINDS}


def known_group_versions() -> set[tuple[str, str]]:
    """Every group/version the server knows (served or not): the scheme's registered versions."""
    return {(k.group, k.version) for k in STORED_KINDS} | set(OPTIONAL_VERSIONS)


def lookup(group: str, version: str, plural: str) -> Kind | None:
    return _BY_GVR.get((group, version, plural))


def kinds_in(group: str, version: str) -> list[Kind]:
    return [k for k in KINDS if k.group == group and k.version == version]


def groups() -> list[str]:
    """Non-core groups in discovery order."""
    return list(dict.fromkeys(g for g, _ in GROUP_VERSIONS if g))


def versions_of(group: str) -> list[str]:
    return [v for g, v in GROUP_VERSIONS if g == group]


def by_kind(api_version: str, kind: str) -> Kind | None:
    for k in KINDS:
        if k.api_version == api_version and k.kind == kind:
            return k
    return None
