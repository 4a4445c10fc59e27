"""core/v1 ResourceQuota (upstream's pkg/registry/core/resourcequota; its admission plugin is
dramock/admission/quota.py and its controller dramock/controllers/quota.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dramock.registry.kind import Kind
from dramock.registry.printing import Printer, Row, age, age_col, col, get, name, name_col

Obj = dict[str, Any]


def _columns() -> list[Obj]:
    return [
        name_col(),
        col("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
        col("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may "
            "use independent of contention on the node."),
        age_col(),
    ]


def _row(obj: Obj, now: datetime) -> Row:
    hard = get(obj, "status", "hard", default={})
    used = get(obj, "status", "used", default={})
    requests: list[str] = []
    limits: list[str] = []
    for resource in sorted(hard):
        entry = f"{resource}: {used.get(resource, '0')}/{hard[resource]}"
        pieces = resource.split(".")
        (limits if len(pieces) > 1 and pieces[0] == "limits" else requests).append(entry)
    return [name(obj), ", ".join(requests), ", ".join(limits), age(obj, now)]


PRINTER = Printer(_columns, _row)

KIND = Kind("", "v1", "ResourceQuota", "resourcequotas", True, short_names=("quota",),
            subresources=("status",), return_deleted_object=True, printer=PRINTER)
