"""Per-kind write behaviour, shaped like upstream's pkg/registry/<group>/<resource>/strategy.go.

Each strategy has the same named hooks: defaulting, PrepareForCreate, PrepareForUpdate (main resource
and /status), Validate and ValidateUpdate. The HTTP layer picks the strategy from the kind entry and
never special-cases a kind itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from dramock.schemas import defaults
from dramock.schemas.registry import Kind

Obj = dict[str, Any]
Cause = dict[str, str]

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def cause(reason: str, field: str, message: str) -> Cause:
    return {"reason": reason, "message": message, "field": field}


def invalid_value(field: str, value: Any, detail: str) -> Cause:
    import json

    rendered = json.dumps(value) if not isinstance(value, str) else f'"{value}"'
    return cause("FieldValueInvalid", field, f"Invalid value: {rendered}: {detail}")


def required(field: str, detail: str = "") -> Cause:
    return cause("FieldValueRequired", field, "Required value" + (f": {detail}" if detail else ""))


def forbidden(field: str, detail: str) -> Cause:
    return cause("FieldValueForbidden", field, f"Forbidden: {detail}")


def _dns_subdomain_errors(value: str, field: str) -> list[Cause]:
    if len(value) > 253:
        return [invalid_value(field, value, "must be no more than 253 characters")]
    if not DNS1123_SUBDOMAIN.match(value):
        return [invalid_value(field, value, "a lowercase RFC 1123 subdomain must consist of lower case "
                              "alphanumeric characters, '-' or '.', and must start and end with an "
                              "alphanumeric character (e.g. 'example.com', regex used for validation is "
                              "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")]
    return []


def _dns_label_errors(value: str, field: str) -> list[Cause]:
    if len(value) > 63:
        return [invalid_value(field, value, "must be no more than 63 characters")]
    if not DNS1123_LABEL.match(value):
        return [invalid_value(field, value, "a lowercase RFC 1123 label must consist of lower case "
                              "alphanumeric characters or '-', and must start and end with an "
                              "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                              "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")]
    return []


def _qualified_name_errors(key: str, field: str) -> list[Cause]:
    prefix, _, name = key.rpartition("/")
    errs: list[Cause] = []
    if prefix and _dns_subdomain_errors(prefix, field):
        errs.append(invalid_value(field, key, "prefix part a lowercase RFC 1123 subdomain must consist of "
                                  "lower case alphanumeric characters, '-' or '.', and must start and end "
                                  "with an alphanumeric character"))
    if not name or len(name) > 63 or not _LABEL_NAME.match(name):
        errs.append(invalid_value(field, key, "name part must consist of alphanumeric characters, '-', '_' "
                                  "or '.', and must start and end with an alphanumeric character (e.g. "
                                  "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                                  "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"))
    return errs


def _pruned(value: Any) -> Any:
    """`value` without null, {} and [] members (Go's decoding makes them indistinguishable from absent)."""
    if isinstance(value, dict):
        out = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def semantic_equal(a: Any, b: Any) -> bool:
    """Upstream's apiequality.Semantic.DeepEqual on wire-shaped values: empty and absent are equal."""
    return a == b or _pruned(a) == _pruned(b)


def validate_object_meta(obj: Obj, namespaced: bool, name_check: Callable[[str, str], list[Cause]]
                         ) -> list[Cause]:
    meta = obj.get("metadata") or {}
    errs: list[Cause] = []
    name = meta.get("name") or ""
    if not name:
        errs.append(required("metadata.name", "name or generateName is required"))
    else:
        errs.extend(name_check(name, "metadata.name"))
    if namespaced and not meta.get("namespace"):
        errs.append(required("metadata.namespace"))
    if not namespaced and meta.get("namespace"):
        errs.append(forbidden("metadata.namespace", "not allowed on this type"))
    for key, value in (meta.get("labels") or {}).items():
        errs.extend(_qualified_name_errors(key, "metadata.labels"))
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            errs.append(invalid_value("metadata.labels", value, "a valid label must be an empty string or "
                                      "consist of alphanumeric characters, '-', '_' or '.', and must start "
                                      "and end with an alphanumeric character (e.g. 'MyValue',  or "
                                      "'my_value',  or '12345', regex used for validation is "
                                      "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"))
    for key in (meta.get("annotations") or {}):
        errs.extend(_qualified_name_errors(key.lower(), "metadata.annotations"))
    return errs


def validate_object_meta_update(new: Obj, old: Obj) -> list[Cause]:
    errs: list[Cause] = []
    nm, om = new.get("metadata") or {}, old.get("metadata") or {}
    for f in ("name", "namespace", "uid", "creationTimestamp"):
        if nm.get(f) != om.get(f):
            errs.append(invalid_value(f"metadata.{f}", nm.get(f), "field is immutable"))
    return errs


class Strategy:
    """Defaults shared by every kind; subclasses override the hooks upstream overrides."""

    name_check: Callable[[str, str], list[Cause]] = staticmethod(_dns_subdomain_errors)

    def __init__(self, kind: Kind):
        self.kind = kind

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

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self.validate(new) + validate_object_meta_update(new, old)

    # -- update through /status: only status (and managedFields) may change --
    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        for key in set(new) | set(old):
            if key not in ("status", "metadata", "apiVersion", "kind"):
                _copy_field(new, old, key)
        nm, om = new.setdefault("metadata", {}), old.get("metadata", {})
        for f in ("deletionTimestamp", "generation", "selfLink", "labels", "annotations", "finalizers",
                  "ownerReferences"):
            _copy_field(nm, om, f)

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


class ResourceClaimStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.resource_claim(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        errs = super().validate_update(new, old)
        if not semantic_equal(new.get("spec"), old.get("spec")):
            errs.append(invalid_value("spec", new.get("spec"), "field is immutable"))
        return errs


class ResourceClaimTemplateStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.resource_claim_template(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        errs = super().validate_update(new, old)
        if not semantic_equal(new.get("spec"), old.get("spec")):
            errs.append(invalid_value("spec", new.get("spec"), "field is immutable"))
        return errs


class NamespaceStrategy(Strategy):
    name_check = staticmethod(_dns_label_errors)

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
    "resourceclaims": ResourceClaimStrategy,
    "resourceclaimtemplates": ResourceClaimTemplateStrategy,
    "namespaces": NamespaceStrategy,
    "nodes": NodeStrategy,
    "pods": PodStrategy,
    "secrets": SecretStrategy,
}

_cache: dict[Kind, Strategy] = {}


def for_kind(kind: Kind) -> Strategy:
    s = _cache.get(kind)
    if s is None:
        s = _cache[kind] = _STRATEGIES.get(kind.plural, Strategy)(kind)
    return s
