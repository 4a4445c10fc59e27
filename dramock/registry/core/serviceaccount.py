"""core/v1 ServiceAccount (its token subresource is apiserver/authfilter.py's token_request)."""

from __future__ import annotations

from typing import Any

from dramock.registry.kind import Kind
from dramock.registry.printing import CORE, Printer, age, age_col, col, doc, name, name_col

Obj = dict[str, Any]


def _columns() -> list[Obj]:
    return [name_col(), col("Secrets", "string", doc(CORE + "ServiceAccount", "secrets")), age_col()]


PRINTER = Printer(_columns, lambda o, now: [name(o), len(o.get("secrets") or []), age(o, now)])

KIND = Kind("", "v1", "ServiceAccount", "serviceaccounts", True, short_names=("sa",), subresources=("token",),
            return_deleted_object=True, printer=PRINTER)
