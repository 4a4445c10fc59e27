"""Metadata validation shared by every kind: ObjectMeta (apimachinery's ValidateObjectMeta /
ValidateObjectMetaUpdate), a template's metadata (corevalidation.ValidateTemplateObjectMeta) and status
conditions (metav1validation.ValidateConditions)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from dramock.schemas.validation.field import (
    Cause,
    Obj,
    _dict,
    child,
    duplicate,
    forbidden,
    index,
    invalid_value,
    not_supported,
    required,
    too_long,
)
from dramock.schemas.validation.names import (
    full_match,
    is_qualified_name,
    regex_error,
    validate_label_name,
    validate_labels,
)

# apimachinery's TotalAnnotationSizeLimitB: keys and values together.
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024


def validate_annotations(annotations: Any, path: str) -> list[Cause]:
    errs: list[Cause] = []
    size = 0
    for key, value in (annotations or {}).items():
        # A qualified name, except that case does not matter.
        errs.extend(invalid_value(path, key, m) for m in is_qualified_name(key.lower()))
        size += len(key.encode()) + len(str(value).encode())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


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
    errs.extend(validate_labels(meta.get("labels") or {}, "metadata.labels"))
    errs.extend(validate_annotations(meta.get("annotations") or {}, "metadata.annotations"))
    return errs


def validate_object_meta_update(new: Obj, old: Obj) -> list[Cause]:
    errs: list[Cause] = []
    nm, om = new.get("metadata") or {}, old.get("metadata") or {}
    for f in ("name", "namespace", "uid", "creationTimestamp"):
        if nm.get(f) != om.get(f):
            errs.append(invalid_value(f"metadata.{f}", nm.get(f), "field is immutable"))
    return errs


# ObjectMeta fields in Go struct order, with the name validateFieldAllowList reports (lower-cased first rune).
_TEMPLATE_META_FIELDS = [
    ("name", "name"), ("generateName", "generateName"), ("namespace", "namespace"), ("selfLink", "selfLink"),
    ("uid", "uID"), ("resourceVersion", "resourceVersion"), ("generation", "generation"),
    ("creationTimestamp", "creationTimestamp"), ("deletionTimestamp", "deletionTimestamp"),
    ("deletionGracePeriodSeconds", "deletionGracePeriodSeconds"), ("ownerReferences", "ownerReferences"),
    ("finalizers", "finalizers"), ("managedFields", "managedFields"),
]


def validate_template_object_meta(meta: Any, path: str) -> list[Cause]:
    """corevalidation.ValidateTemplateObjectMeta: only labels and annotations may be set."""
    meta = _dict(meta)
    errs = validate_annotations(meta.get("annotations"), child(path, "annotations"))
    errs += validate_labels(meta.get("labels"), child(path, "labels"))
    for json_name, go_name in _TEMPLATE_META_FIELDS:
        value = meta.get(json_name)
        if value is None or value == "" or value == 0 and not isinstance(value, bool):
            continue
        errs.append(forbidden(child(path, go_name), "cannot be set for a template"))
    return errs


_CONDITION_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_CONDITION_REASON_RE = re.compile(f"^{_CONDITION_REASON_FMT}$")


def validate_conditions(conditions: Any, path: str) -> list[Cause]:
    """metav1validation.ValidateConditions."""
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, cond in enumerate(conditions or []):
        cond = cond or {}
        p = index(path, i)
        ctype = cond.get("type") or ""
        if ctype in seen:
            errs.append(duplicate(child(p, "type"), ctype))
        else:
            seen.add(ctype)
        errs.extend(validate_label_name(ctype, child(p, "type")))
        status = cond.get("status") or ""
        if status not in ("False", "True", "Unknown"):
            errs.append(not_supported(child(p, "status"), status, ["False", "True", "Unknown"]))
        gen = cond.get("observedGeneration") or 0
        if isinstance(gen, int) and gen < 0:
            errs.append(invalid_value(child(p, "observedGeneration"), gen, "must be greater than or equal to zero"))
        if not cond.get("lastTransitionTime"):
            errs.append(required(child(p, "lastTransitionTime"), "must be set"))
        reason = cond.get("reason") or ""
        if not reason:
            errs.append(required(child(p, "reason"), "must be set"))
        else:
            if not full_match(_CONDITION_REASON_RE, reason):
                errs.append(invalid_value(child(p, "reason"), reason, regex_error(
                    "a condition reason must start with alphabetic character, optionally followed by a string of "
                    "alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'",
                    _CONDITION_REASON_FMT, "my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB")))
            if len(reason) > 1024:
                errs.append(too_long(child(p, "reason"), 1024))
        if len(cond.get("message") or "") > 32 * 1024:
            errs.append(too_long(child(p, "message"), 32 * 1024))
    return errs
