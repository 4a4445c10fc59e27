"""metadata.managedFields kept the way kube-apiserver keeps them, and server-side apply.

Behavioural reference: sigs.k8s.io/structured-merge-diff (typed compare/merge/remove, field sets and
their FieldsV1 encoding, merge.Updater) wrapped the way k8s.io/apimachinery's managedfields package
wraps it (stripped meta fields, "current-operation" updates, skip-non-applied, before-first-apply,
capped update managers, client-side-apply upgrade for the "kubectl" manager, conflict errors).

Field sets are Python sets of paths; a path is a tuple of path elements:
  ("f", name)            a struct field or map key               -> "f:<name>"
  ("k", ((key, v), ...)) a list-map item by its keys, name-sorted -> 'k:{"name":"x"}'
  ("v", v)               a set item by value                      -> 'v:"x"'
Values inside path elements are "frozen" (hashable, type-tagged) JSON values.

The schema comes from the 1.37 definitions: lists are atomic unless x-kubernetes-list-type says
set/map (or, unannotated, patch strategy merge does), structs and maps are granular unless
x-kubernetes-map-type is atomic, and schema-less values are "deduced" (maps granular, lists atomic).

Modules, bottom up: `values` (JSON values), `paths` (path elements), `fieldset` (FieldsV1), `schema`
(the typed view), `typed` (compare/merge/remove), `managed_fields` (entries), `objects` (kinds and zero
objects), `update` (track_update), `conflicts`, `last_applied` and `server_side_apply` (apply).
"""

from .fieldset import fields_to_set, set_to_fields
from .last_applied import LAST_APPLIED
from .managed_fields import STRIPPED
from .paths import path_string
from .server_side_apply import BEFORE_FIRST_APPLY, apply
from .update import MAX_UPDATE_MANAGERS, OLD_UPDATES_MANAGER, track_update

__all__ = [
    "BEFORE_FIRST_APPLY",
    "LAST_APPLIED",
    "MAX_UPDATE_MANAGERS",
    "OLD_UPDATES_MANAGER",
    "STRIPPED",
    "apply",
    "fields_to_set",
    "path_string",
    "set_to_fields",
    "track_update",
]
