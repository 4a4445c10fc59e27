"""kubectl's last-applied-configuration annotation: the fields client-side apply may hand over to
server-side apply, and the annotation kept in sync on a kubectl apply."""

from __future__ import annotations

import json

from dramock.jsonvalue import clone
from dramock.schemas import defs

from .objects import _meta
from .paths import FieldSet
from .typed import _changes, _field_set, _validate
from .values import Obj, _go_json

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _allowed_from_last_applied(root: defs.Schema, live: Obj, api_version: str) -> FieldSet | None:
    """Fields the client-side-apply annotation sets to exactly their live value; None without one."""
    text = (_meta(live).get("annotations") or {}).get(LAST_APPLIED)
    if not isinstance(text, str) or not text:
        return None
    try:
        last = json.loads(text)
    except ValueError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != api_version:
        return None
    errors: list[str] = []
    _validate(root, last, (), errors)
    if errors:
        return None
    c = _changes(root, last, live, None)
    return _field_set(root, last) - c.modified - c.added - c.removed


def _build_last_applied(config: Obj) -> str:
    """The annotation kubectl server-side apply keeps in sync: the config minus itself, as Go encodes it."""
    c = clone(config)
    annotations = _meta(c).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
    return _go_json(c, sort_keys=True) + "\n"
