"""The one v1 NodeSelector matcher (upstream k8s.io/component-helpers/scheduling/corev1/nodeaffinity).

Used by the scheduler (a pod's required node affinity, a claim's `status.allocation.nodeSelector`) and by the
allocator and its explanations (a ResourceSlice's or device's `nodeSelector`). Semantics, as upstream's:

- the terms are ORed, the requirements inside a term ANDed;
- a selector with no terms matches nothing, and so does a term with neither matchExpressions nor matchFields;
- a term that does not parse (an unknown operator, In/NotIn without values, Exists/DoesNotExist with values,
  Gt/Lt without exactly one integer value; a field requirement other than In/NotIn with exactly one value)
  matches nothing, and the other terms still count (upstream's LazyErrorNodeSelector);
- Gt/Lt compare the label value as a base-10 integer and fail when it is not one;
- matchFields read the node's fields, of which only `metadata.name` exists (an unknown field reads as ""), and
  are not checked against a node without a name;
- no node (None) matches nothing.

What an absent selector (None) means is the caller's to say: "no constraint" for a pod's affinity or a claim's
allocation, "no node" for a slice. Here it matches nothing, as a selector without terms does.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["node_selector_matches", "node_selector_term_matches"]

Obj = dict[str, Any]

_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = range(-(1 << 63), 1 << 63)
_LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})


def _parse_int(text: Any) -> int | None:
    """strconv.ParseInt(text, 10, 64), or None."""
    if not isinstance(text, str) or not _INT.fullmatch(text):
        return None
    value = int(text)
    return value if value in _INT64 else None


def _label_requirement_valid(req: Obj) -> bool:
    """Whether labels.NewRequirement accepts the requirement's operator and values."""
    op, values = req.get("operator"), req.get("values") or []
    if op not in _LABEL_OPERATORS:
        return False
    if op in ("In", "NotIn"):
        return len(values) > 0
    if op in ("Exists", "DoesNotExist"):
        return len(values) == 0
    return len(values) == 1 and _parse_int(values[0]) is not None  # Gt, Lt


def _label_requirement_matches(req: Obj, labels: dict[str, Any]) -> bool:
    key, op, values = req.get("key", ""), req.get("operator"), req.get("values") or []
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if not present:  # Gt, Lt
        return False
    have = _parse_int(labels[key])
    if have is None:
        return False
    want = int(values[0])
    return have > want if op == "Gt" else have < want


def node_selector_term_matches(term: Obj | None, node: Obj | None) -> bool:
    """One NodeSelectorTerm against a node; an empty, unparsable or None term matches nothing."""
    if term is None or node is None:
        return False
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    if not all(_label_requirement_valid(r) for r in exprs):
        return False
    if not all(r.get("operator") in ("In", "NotIn") and len(r.get("values") or []) == 1 for r in fields):
        return False
    md = node.get("metadata") or {}
    labels = md.get("labels") or {}
    if not all(_label_requirement_matches(r, labels) for r in exprs):
        return False
    name = md.get("name") or ""
    if fields and name:
        node_fields = {"metadata.name": name}
        for r in fields:
            equal = node_fields.get(r.get("key", ""), "") == r["values"][0]
            if equal != (r["operator"] == "In"):
                return False
    return True


def node_selector_matches(selector: Obj | None, node: Obj | None) -> bool:
    """A v1 NodeSelector against a node: whether any of its terms matches (see the module docstring)."""
    if selector is None or node is None:
        return False
    return any(node_selector_term_matches(t, node) for t in selector.get("nodeSelectorTerms") or [])
