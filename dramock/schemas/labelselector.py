"""metav1.LabelSelector helpers shared by validation, printers, the scale subresource and the controllers:
matching a label set, and the selector's string form (what Scale.status.selector and `kubectl get -o wide`
show, and what a labelSelector query takes)."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def matches(selector: Obj | None, labels: Obj) -> bool:
    sel = selector or {}
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if (op == "In" and labels.get(key) not in values) or (op == "NotIn" and labels.get(key) in values) \
                or (op == "Exists" and key not in labels) or (op == "DoesNotExist" and key in labels):
            return False
    return True


def to_string(selector: Obj | None) -> str:
    """metav1.LabelSelectorAsSelector(...).String(): sorted requirements joined by commas."""
    reqs = [f"{k}={v}" for k, v in ((selector or {}).get("matchLabels") or {}).items()]
    for e in (selector or {}).get("matchExpressions") or []:
        key, op, values = e.get("key", ""), e.get("operator", ""), sorted(e.get("values") or [])
        if op == "In":
            reqs.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            reqs.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            reqs.append(key)
        elif op == "DoesNotExist":
            reqs.append(f"!{key}")
    return ",".join(sorted(reqs))
