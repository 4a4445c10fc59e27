"""core/v1 Secret (upstream's pkg/registry/core/secret)."""

from __future__ import annotations

import base64
from typing import Any

from dramock.registry.kind import Kind, selectable
from dramock.registry.printing import CORE, Printer, age, age_col, col, doc, name, name_col
from dramock.registry.strategy import Strategy

Obj = dict[str, Any]


class SecretStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        obj.setdefault("type", "Opaque")
        # stringData is write-only: merged into data on every write, as upstream's conversion does.
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict):
            data = obj.setdefault("data", {})
            for k, v in string_data.items():
                data[k] = base64.b64encode(str(v).encode()).decode()


def _columns() -> list[Obj]:
    return [
        name_col(),
        col("Type", "string", doc(CORE + "Secret", "type")),
        col("Data", "string", doc(CORE + "Secret", "data")),
        age_col(),
    ]


PRINTER = Printer(_columns, lambda o, now: [name(o), o.get("type") or "", len(o.get("data") or {}), age(o, now)])

KIND = Kind("", "v1", "Secret", "secrets", True, selectable_fields={"type": selectable("type")},
            strategy=SecretStrategy, printer=PRINTER)
