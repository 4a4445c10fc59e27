"""Per-kind write behaviour, shaped like upstream's pkg/registry/<group>/<resource>/strategy.go.

Each strategy has the same named hooks: defaulting, PrepareForCreate, PrepareForUpdate (main resource
and /status), Validate and ValidateUpdate. The HTTP layer picks the strategy from the kind entry and
never special-cases a kind itself.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from dramock.schemas import defaults
from dramock.schemas import validation as semantic
from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.gatedfields import drop_disabled_fields
from dramock.schemas.registry import Kind
from dramock.schemas.validation.field import (  # noqa: F401  (re-exported for the apiserver)
    Cause,
    cause,
    dns_label_errors,
    dns_subdomain_errors,
    forbidden,
    invalid_value,
    required,
    semantic_equal,
    validate_object_meta,
    validate_object_meta_update,
)

Obj = dict[str, Any]

class Strategy:
    """Defaults shared by every kind; subclasses override the hooks upstream overrides."""

    name_check: Callable[[str, str], list[Cause]] = staticmethod(dns_subdomain_errors)

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
        return validate_object_meta(obj, self.kind.namespaced, type(self).name_check)

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
        return self.validate(new) + validate_object_meta_update(new, old)

    def allow_unconditional_update(self) -> bool:
        """Whether a PUT may omit metadata.resourceVersion (upstream's AllowUnconditionalUpdate)."""
        return True

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
    def validate(self, obj: Obj) -> list[Cause]:
        return super().validate(obj) + semantic.validate_device_class(obj, gates=self.gates)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_update(new, old) + semantic.validate_device_class_update(new, old, gates=self.gates)


class ResourceSliceStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.resource_slice(obj)
    def validate(self, obj: Obj) -> list[Cause]:
        return super().validate(obj) + semantic.validate_resource_slice(obj, gates=self.gates)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_update(new, old) + semantic.validate_resource_slice_update(new, old,
                                                                                           gates=self.gates)


class ResourceClaimStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.resource_claim(obj)

    def validate(self, obj: Obj) -> list[Cause]:
        return super().validate(obj) + semantic.validate_resource_claim(obj, gates=self.gates)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        # The spec is immutable, so only the update rules apply (as upstream, no re-validation of it).
        return validate_object_meta_update(new, old) + semantic.validate_resource_claim_update(
            new, old, gates=self.gates)

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_status_update(new, old)
        _drop_deallocated_status_devices(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_status_update(new, old) + semantic.validate_resource_claim_status_update(
            new, old, gates=self.gates)


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

    def validate(self, obj: Obj) -> list[Cause]:
        return super().validate(obj) + semantic.validate_resource_claim_template(obj, gates=self.gates)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_object_meta_update(new, old) + semantic.validate_resource_claim_template_update(
            new, old, gates=self.gates)


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
            taint["timeAdded"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        super().prepare_for_update(new, old)

    def allow_unconditional_update(self) -> bool:
        # Historic behaviour of the old versions; v1 (and later) require a resourceVersion.
        return self.kind.version in ("v1beta2", "v1alpha3")

    def validate(self, obj: Obj) -> list[Cause]:
        return super().validate(obj) + semantic.validate_device_taint_rule(obj, gates=self.gates)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_update(new, old) + semantic.validate_device_taint_rule_update(
            new, old, gates=self.gates)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_status_update(new, old) + semantic.validate_device_taint_rule_status_update(
            new, old, gates=self.gates)


class NamespaceStrategy(Strategy):
    name_check = staticmethod(dns_label_errors)

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

    def validate(self, obj: Obj) -> list[Cause]:
        return super().validate(obj) + semantic.validate_pod_spec_resource_claims(obj)

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


_STRATEGIES: dict[str, type[Strategy]] = {
    "deviceclasses": DeviceClassStrategy,
    "resourceslices": ResourceSliceStrategy,
    "devicetaintrules": DeviceTaintRuleStrategy,
    "resourceclaims": ResourceClaimStrategy,
    "resourceclaimtemplates": ResourceClaimTemplateStrategy,
    "namespaces": NamespaceStrategy,
    "nodes": NodeStrategy,
    "pods": PodStrategy,
    "secrets": SecretStrategy,
}

_cache: dict[Kind, Strategy] = {}
_gates = FeatureGates()


def configure(gates: FeatureGates) -> None:
    """The feature gates every strategy sees (once, at server start)."""
    global _gates
    _gates = gates
    _cache.clear()


def for_kind(kind: Kind) -> Strategy:
    s = _cache.get(kind)
    if s is None:
        s = _cache[kind] = _STRATEGIES.get(kind.plural, Strategy)(kind, _gates)
    return s
