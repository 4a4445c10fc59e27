"""ObjectMeta validation (apimachinery's ValidateObjectMeta / ValidateObjectMetaUpdate), shared by every kind."""

from __future__ import annotations

from collections.abc import Callable

from dramock.schemas.validation.field import Cause, Obj, forbidden, invalid_value, required, too_long
from dramock.schemas.validation.names import is_qualified_name, validate_labels

# apimachinery's TotalAnnotationSizeLimitB: keys and values together.
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024


def validate_annotations(annotations: dict, path: str) -> list[Cause]:
    errs: list[Cause] = []
    size = 0
    for key, value in annotations.items():
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
