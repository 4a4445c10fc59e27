"""core/v1 ConfigMap."""

from __future__ import annotations

from typing import Any

from dramock.registry.kind import Kind
from dramock.registry.printing import CORE, Printer, age, age_col, col, doc, name, name_col

Obj = dict[str, Any]


def _columns() -> list[Obj]:
    return [name_col(), col("Data", "string", doc(CORE + "ConfigMap", "data")), age_col()]


PRINTER = Printer(_columns, lambda o, now: [name(o), len(o.get("data") or {}) + len(o.get("binaryData") or {}),
                                            age(o, now)])

KIND = Kind("", "v1", "ConfigMap", "configmaps", True, short_names=("cm",), printer=PRINTER)
