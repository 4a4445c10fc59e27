"""The essentials of upstream's pkg/apis/apps/validation and pkg/apis/batch/validation, with their messages:
selectors present and matching the template labels, non-negative counts, the template's restart policy,
Indexed Jobs with completions, and the fields that may not change after creation."""

from __future__ import annotations

from dramock.schemas import labelselector
from dramock.schemas.validation.field import Cause, Obj, cause, forbidden, invalid_value, required, semantic_equal


def _go_map(labels: Obj) -> str:
    return "map[string]string{" + ", ".join(f'"{k}":"{v}"' for k, v in sorted(labels.items())) + "}"


def _non_negative(spec: Obj, key: str) -> list[Cause]:
    value = spec.get(key)
    if isinstance(value, int) and value < 0:
        return [invalid_value(f"spec.{key}", value, "must be greater than or equal to 0")]
    return []


def _template(spec: Obj, restart_policies: tuple[str, ...], check_selector: bool = True) -> list[Cause]:
    errs: list[Cause] = []
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    selector = spec.get("selector")
    if check_selector:
        if selector is None:
            errs.append(required("spec.selector"))
        elif not (selector.get("matchLabels") or selector.get("matchExpressions")):
            errs.append(invalid_value("spec.selector", "", "empty selector is invalid for deployment"))
        elif not labelselector.matches(selector, labels):
            errs.append(cause("FieldValueInvalid", "spec.template.metadata.labels",
                              f"Invalid value: {_go_map(labels)}: `selector` does not match template `labels`"))
    pod_spec = template.get("spec") or {}
    if not pod_spec.get("containers"):
        errs.append(required("spec.template.spec.containers"))
    policy = pod_spec.get("restartPolicy")
    if policy not in restart_policies:
        supported = ", ".join(f'"{p}"' for p in restart_policies)
        if policy:
            errs.append(cause("FieldValueNotSupported", "spec.template.spec.restartPolicy",
                              f'Unsupported value: "{policy}": supported values: {supported}'))
        else:
            errs.append(required("spec.template.spec.restartPolicy", f"valid values: {supported}"))
    return errs


def validate_deployment(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    return _non_negative(spec, "replicas") + _non_negative(spec, "minReadySeconds") + \
        _non_negative(spec, "revisionHistoryLimit") + _template(spec, ("Always",))


def validate_replica_set(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    return _non_negative(spec, "replicas") + _non_negative(spec, "minReadySeconds") + \
        _template(spec, ("Always",))


def validate_daemon_set(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    return _non_negative(spec, "minReadySeconds") + _template(spec, ("Always",))


def validate_stateful_set(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    return _non_negative(spec, "replicas") + _template(spec, ("Always",))


def validate_job(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    errs = []
    for key in ("parallelism", "completions", "backoffLimit", "activeDeadlineSeconds"):
        errs += _non_negative(spec, key)
    if spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
        errs.append(required("spec.completions", "when completion mode is Indexed"))
    return errs + _template(spec, ("OnFailure", "Never"), check_selector=bool(spec.get("manualSelector")))


def immutable_selector(new: Obj, old: Obj) -> list[Cause]:
    ns, os_ = (new.get("spec") or {}).get("selector"), (old.get("spec") or {}).get("selector")
    if not semantic_equal(ns, os_):
        return [cause("FieldValueInvalid", "spec.selector", "Invalid value: v1.LabelSelector{...}: field is immutable")]
    return []


_STS_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit",
                "persistentVolumeClaimRetentionPolicy", "minReadySeconds")


def stateful_set_update(new: Obj, old: Obj) -> list[Cause]:
    ns = {k: v for k, v in (new.get("spec") or {}).items() if k not in _STS_MUTABLE}
    os_ = {k: v for k, v in (old.get("spec") or {}).items() if k not in _STS_MUTABLE}
    if semantic_equal(ns, os_):
        return []
    return [forbidden("spec", "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                              "'template', 'updateStrategy', 'revisionHistoryLimit', "
                              "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")]


def job_update(new: Obj, old: Obj) -> list[Cause]:
    errs = immutable_selector(new, old)
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    for key in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex"):
        if not semantic_equal(ns.get(key), os_.get(key)):
            errs.append(cause("FieldValueInvalid", f"spec.{key}",
                              f"Invalid value: {ns.get(key)!r}: field is immutable"))
    if not semantic_equal(ns.get("template"), os_.get("template")):
        errs.append(cause("FieldValueInvalid", "spec.template", "Invalid value: core.PodTemplateSpec{...}: "
                          "field is immutable"))
    return errs
