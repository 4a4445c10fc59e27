"""Per-kind write behaviour, shaped like upstream's pkg/registry/<group>/<resource>/strategy.go.

Each strategy has the same named hooks: defaulting, PrepareForCreate, PrepareForUpdate (main resource
and /status), Validate and ValidateUpdate. The HTTP layer picks the strategy from the kind entry and
never special-cases a kind itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dramock import timefmt
from dramock.jsonvalue import clone
from dramock.schemas import defaults
from dramock.schemas import validation as semantic
from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.gatedfields import drop_disabled_fields
from dramock.schemas.registry import Kind
from dramock.schemas.validation.field import (  # noqa: F401  (re-exported for the apiserver)
    Cause,
    cause,
    forbidden,
    invalid_value,
    required,
    semantic_equal,
)
from dramock.schemas.validation.meta import validate_object_meta, validate_object_meta_update
from dramock.schemas.validation.names import validate_dns1123_label, validate_dns1123_subdomain

Obj = dict[str, Any]

class Strategy:
    """Defaults shared by every kind; subclasses override the hooks upstream overrides."""

    name_check: Callable[[str, str], list[Cause]] = staticmethod(validate_dns1123_subdomain)

    def __init__(self, kind: Kind, gates: FeatureGates):
        self.kind = kind
        self.gates = gates

    @property
    def has_status(self) -> bool:
        return "status" in self.kind.subresources

    # -- defaulting (runs on every decoded body, like the scheme's defaulters) --
    def default(self, obj: Obj) -> None:
        pass

    # -- create --
    def prepare_for_create(self, obj: Obj) -> None:
        if self.has_status:
            obj.pop("status", None)
        if self.kind.tracks_generation:
            obj["metadata"]["generation"] = 1
        drop_disabled_fields(self.kind.kind, obj, None, self.gates)

    def validate(self, obj: Obj) -> list[Cause]:
        return self._meta(obj) + self.validate_semantic(obj)

    def _meta(self, obj: Obj) -> list[Cause]:
        return validate_object_meta(obj, self.kind.namespaced, type(self).name_check)

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        """The kind's own rules for a new object (upstream's Validate<Kind> without ObjectMeta)."""
        return []

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        """The kind's own rules for an update (upstream's Validate<Kind>Update without ObjectMeta)."""
        return self.validate_semantic(new)

    # -- warnings for a valid object (upstream's WarningsOnCreate / WarningsOnUpdate) --
    def warnings_on_create(self, obj: Obj) -> list[str]:
        return []

    def warnings_on_update(self, new: Obj, old: Obj) -> list[str]:
        return self.warnings_on_create(new)

    # -- update of the main resource --
    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        if self.has_status:
            _copy_field(new, old, "status")
        if self.kind.tracks_generation:
            old_gen = old.get("metadata", {}).get("generation", 0)
            changed = not semantic_equal(
                {k: v for k, v in new.items() if k not in ("metadata", "status", "apiVersion", "kind")},
                {k: v for k, v in old.items() if k not in ("metadata", "status", "apiVersion", "kind")})
            new["metadata"]["generation"] = old_gen + 1 if changed else old_gen
        drop_disabled_fields(self.kind.kind, new, old, self.gates)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self._meta(new) + validate_object_meta_update(new, old) + self.validate_semantic_update(new, old)

    def allow_unconditional_update(self) -> bool:
        """Whether a PUT may omit metadata.resourceVersion (upstream's AllowUnconditionalUpdate)."""
        return True

    # -- DRA admin access: only in namespaces labelled for it (upstream's AuthorizedForAdmin) --
    def _admin_access(self, obj: Obj, requests: Any) -> list[Cause]:
        for i, req in enumerate(requests or []):
            if isinstance(req, dict) and ((req.get("exactly") or {}).get("adminAccess") is True):
                # Upstream reports the request's path without `exactly`.
                return self._admin_namespace_check(obj, f"spec.devices.requests[{i}].adminAccess")
        return []

    def _admin_namespace_check(self, obj: Obj, path: str) -> list[Cause]:
        labels = _namespace_labels((obj.get("metadata") or {}).get("namespace") or "") or {}
        if labels.get(ADMIN_ACCESS_LABEL) != "true":
            return [forbidden(path, f"admin access to devices requires the `{ADMIN_ACCESS_LABEL}: true` label on "
                                    "the containing namespace")]
        return []

    # -- update through /status: only status (and managedFields) may change --
    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        for key in set(new) | set(old):
            if key not in ("status", "metadata", "apiVersion", "kind"):
                _copy_field(new, old, key)
        nm, om = new.setdefault("metadata", {}), old.get("metadata", {})
        for f in ("deletionTimestamp", "generation", "selfLink", "labels", "annotations", "finalizers",
                  "ownerReferences"):
            _copy_field(nm, om, f)
        drop_disabled_fields(self.kind.kind, new, old, self.gates)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_object_meta_update(new, old)

    # -- update through /finalize: only kinds that serve it (namespaces) override this --
    def prepare_for_finalize(self, new: Obj, old: Obj) -> None:
        raise NotImplementedError(f"{self.kind.kind} has no finalize subresource")

    # -- deletion --
    def deletion_blocked(self, obj: Obj) -> bool:
        """Whether a delete must wait (deletionTimestamp set) instead of removing the object now."""
        return bool((obj.get("metadata") or {}).get("finalizers"))


def _copy_field(dst: Obj, src: Obj, key: str) -> None:
    if key in src:
        dst[key] = src[key]
    else:
        dst.pop(key, None)


class DeviceClassStrategy(Strategy):
    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return semantic.validate_device_class(obj, gates=self.gates)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return semantic.validate_device_class_update(new, old, gates=self.gates)


class ResourceSliceStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.resource_slice(obj)

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return semantic.validate_resource_slice(obj, gates=self.gates)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return semantic.validate_resource_slice_update(new, old, gates=self.gates)

    def warnings_on_create(self, obj: Obj) -> list[str]:
        driver = (obj.get("spec") or {}).get("driver")
        if isinstance(driver, str) and driver != driver.lower():
            return [f'spec.driver: driver names should be lowercase; "{driver}" contains uppercase characters']
        return []


class ResourceClaimStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.resource_claim(obj)

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        requests = ((obj.get("spec") or {}).get("devices") or {}).get("requests")
        return self._admin_access(obj, requests) + semantic.validate_resource_claim(obj, gates=self.gates)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        # The spec is immutable, so the admin-access check of create need not run again (as upstream).
        return semantic.validate_resource_claim_update(new, old, gates=self.gates)

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_status_update(new, old)
        _drop_deallocated_status_devices(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return (super().validate_status_update(new, old) + self._admin_access_status(new, old)
                + semantic.validate_resource_claim_status_update(new, old, gates=self.gates))

    def _admin_access_status(self, new: Obj, old: Obj) -> list[Cause]:
        """A newly written allocation granting adminAccess needs the namespace label too."""
        def granted(claim: Obj) -> int | None:
            results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
            return next((i for i, r in enumerate(results or []) if isinstance(r, dict) and r.get("adminAccess")),
                        None)
        if granted(old) is not None or (i := granted(new)) is None:
            return []
        return self._admin_namespace_check(new, f"status.allocation.devices.results[{i}].adminAccess")


def _drop_deallocated_status_devices(new: Obj, old: Obj) -> None:
    """status.devices entries of devices that were allocated before and are not any more go away."""
    def allocated(claim: Obj) -> set[tuple[Any, Any, Any]]:
        results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        return {(r.get("driver"), r.get("pool"), r.get("device")) for r in results if isinstance(r, dict)}

    status = new.get("status")
    if not isinstance(status, dict) or not status.get("devices"):
        return
    gone = allocated(old) - allocated(new)
    kept = [d for d in status["devices"]
            if not isinstance(d, dict) or (d.get("driver"), d.get("pool"), d.get("device")) not in gone]
    if kept:
        status["devices"] = kept
    else:
        del status["devices"]


class ResourceClaimTemplateStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.resource_claim_template(obj)

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        requests = (((obj.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests")
        return self._admin_access(obj, requests) + semantic.validate_resource_claim_template(obj, gates=self.gates)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return semantic.validate_resource_claim_template_update(new, old, gates=self.gates)


class DeviceTaintRuleStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.device_taint_rule(obj)
    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        taint = (new.get("spec") or {}).get("taint")
        old_taint = (old.get("spec") or {}).get("taint") or {}
        # timeAdded tracks when the *effect* was added: bumped when the effect changes, unless the
        # client changed it itself (seconds resolution, as the wire format keeps).
        if isinstance(taint, dict) and taint.get("effect") != old_taint.get("effect") \
                and taint.get("timeAdded") == old_taint.get("timeAdded"):
            taint["timeAdded"] = timefmt.now()
        super().prepare_for_update(new, old)

    def allow_unconditional_update(self) -> bool:
        # Historic behaviour of the old versions; v1 (and later) require a resourceVersion.
        return self.kind.version in ("v1beta2", "v1alpha3")

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return semantic.validate_device_taint_rule(obj, gates=self.gates)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return semantic.validate_device_taint_rule_update(new, old, gates=self.gates)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_status_update(new, old) + semantic.validate_device_taint_rule_status_update(
            new, old, gates=self.gates)


class ResourcePoolStatusRequestStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.resource_pool_status_request(obj)

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return semantic.validate_resource_pool_status_request(obj, gates=self.gates)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return semantic.validate_resource_pool_status_request_update(new, old, gates=self.gates)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_status_update(new, old) + \
            semantic.validate_resource_pool_status_request_status_update(new, old, gates=self.gates)


class NamespaceStrategy(Strategy):
    name_check = staticmethod(validate_dns1123_label)

    def default(self, obj: Obj) -> None:
        # The NamespaceLifecycle controller's label, added by the defaulter upstream.
        labels = obj.setdefault("metadata", {}).setdefault("labels", {})
        if obj["metadata"].get("name"):
            labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Active"}
        # Every new namespace carries the finalizer the namespace controller removes on deletion.
        spec = obj.setdefault("spec", {})
        if "kubernetes" not in (spec.get("finalizers") or []):
            spec["finalizers"] = [*(spec.get("finalizers") or []), "kubernetes"]

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        # spec.finalizers change only through /finalize.
        _copy_field(new, old, "spec")

    def deletion_blocked(self, obj: Obj) -> bool:
        # spec.finalizers ("kubernetes") hold the namespace until its contents are gone.
        return super().deletion_blocked(obj) or bool((obj.get("spec") or {}).get("finalizers"))

    def prepare_for_finalize(self, new: Obj, old: Obj) -> None:
        spec = new.get("spec")
        self.prepare_for_status_update(new, old)
        _copy_field(new, old, "status")
        new["spec"] = spec or {}


class NodeStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.node(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        # Nodes may set status on create (kubelets register with their capacity).
        status = obj.pop("status", None)
        super().prepare_for_create(obj)
        if status is not None:
            obj["status"] = status


def pod_qos_class(pod: Obj) -> str:
    requests_seen = limits_seen = False
    guaranteed = True
    containers = list((pod.get("spec") or {}).get("containers") or []) + \
        list((pod.get("spec") or {}).get("initContainers") or [])
    for c in containers:
        res = (c or {}).get("resources") or {}
        req = {k: v for k, v in (res.get("requests") or {}).items() if k in ("cpu", "memory")}
        lim = {k: v for k, v in (res.get("limits") or {}).items() if k in ("cpu", "memory")}
        requests_seen = requests_seen or bool(req)
        limits_seen = limits_seen or bool(lim)
        if set(lim) != {"cpu", "memory"} or any(req.get(k, lim[k]) != lim[k] for k in lim):
            guaranteed = False
    if not requests_seen and not limits_seen:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


class PodStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.pod(obj)

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        errs = _pod_spec_basics(obj)
        if ((obj.get("spec") or {}).get("ephemeralContainers")):
            errs.append(forbidden("spec.ephemeralContainers", "cannot be set on create"))
        return errs + semantic.validate_pod_spec_resource_claims(obj)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _pod_spec_basics(new) + semantic.validate_pod_spec_resource_claims(new) + _pod_spec_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_status_update(new, old) + semantic.validate_pod_status_resource_claims(new)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Pending", "qosClass": pod_qos_class(obj)}

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_status_update(new, old)
        # qosClass is fixed at creation.
        if "qosClass" in (old.get("status") or {}):
            new.setdefault("status", {})["qosClass"] = old["status"]["qosClass"]


class SecretStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.secret(obj)
        # stringData is write-only: merged into data on every write, as upstream's conversion does.
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict):
            import base64

            data = obj.setdefault("data", {})
            for k, v in string_data.items():
                data[k] = base64.b64encode(str(v).encode()).decode()


def _pod_spec_basics(pod: Obj) -> list[Cause]:
    if not (pod.get("spec") or {}).get("containers"):
        return [required("spec.containers")]
    return []


_POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)")


def _pod_spec_update(new: Obj, old: Obj) -> list[Cause]:
    """Upstream's ValidatePodUpdate: only a few spec fields may change after creation."""
    ns, os_ = clone(new.get("spec") or {}), old.get("spec") or {}
    for key in ("containers", "initContainers"):
        old_list = os_.get(key) or []
        for i, c in enumerate(ns.get(key) or []):
            if i < len(old_list) and isinstance(c, dict) and isinstance(old_list[i], dict):
                c["image"] = old_list[i].get("image")
    for key in ("activeDeadlineSeconds", "terminationGracePeriodSeconds"):
        if key in os_:
            ns[key] = os_[key]
        else:
            ns.pop(key, None)
    old_tol, new_tol = os_.get("tolerations") or [], ns.get("tolerations") or []
    if new_tol[:len(old_tol)] == old_tol:  # additions only
        ns["tolerations"] = old_tol
    gates_old, gates_new = os_.get("schedulingGates") or [], ns.get("schedulingGates") or []
    if all(g in gates_old for g in gates_new):  # scheduling gates may only be removed
        ns["schedulingGates"] = gates_old
    if semantic_equal(ns, os_):
        return []
    return [forbidden("spec", _POD_UPDATE_FORBIDDEN)]


_STRATEGIES: dict[str, type[Strategy]] = {
    "deviceclasses": DeviceClassStrategy,
    "resourceslices": ResourceSliceStrategy,
    "devicetaintrules": DeviceTaintRuleStrategy,
    "resourcepoolstatusrequests": ResourcePoolStatusRequestStrategy,
    "resourceclaims": ResourceClaimStrategy,
    "resourceclaimtemplates": ResourceClaimTemplateStrategy,
    "namespaces": NamespaceStrategy,
    "nodes": NodeStrategy,
    "pods": PodStrategy,
    "secrets": SecretStrategy,
}

_cache: dict[Kind, Strategy] = {}
_gates = FeatureGates()
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"


def _no_namespaces(_name: str) -> dict[str, str] | None:
    return None


_namespace_labels: Callable[[str], dict[str, str] | None] = _no_namespaces


def configure(gates: FeatureGates, namespace_labels: Callable[[str], dict[str, str] | None]) -> None:
    """What every strategy sees (once, at server start): the feature gates and a namespace-label lookup
    (upstream's strategies hold a namespace client for the admin-access rule)."""
    global _gates, _namespace_labels
    _gates, _namespace_labels = gates, namespace_labels
    _cache.clear()


def for_kind(kind: Kind) -> Strategy:
    s = _cache.get(kind)
    if s is None:
        from dramock.admission.rbac import STRATEGIES as rbac_strategies
        from dramock.admission.scheduling import STRATEGIES as scheduling_strategies
        from dramock.admission.services import ServiceStrategy  # these import this module
        from dramock.admission.workloads import STRATEGIES as workload_strategies

        _STRATEGIES.update(workload_strategies, services=ServiceStrategy, **rbac_strategies, **scheduling_strategies)
        s = _cache[kind] = _STRATEGIES.get(kind.plural, Strategy)(kind, _gates)
    return s
