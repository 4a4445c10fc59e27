"""coordination.k8s.io/v1 Lease (leader election, node heartbeats)."""

from __future__ import annotations

from typing import Any

from dramock.registry.kind import Kind
from dramock.registry.printing import Printer, age, age_col, col, doc, get, name, name_col

Obj = dict[str, Any]


def _columns() -> list[Obj]:
    return [name_col(), col("Holder", "string", doc("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity")),
            age_col()]


PRINTER = Printer(_columns, lambda o, now: [name(o), get(o, "spec", "holderIdentity", default=""), age(o, now)])

KIND = Kind("coordination.k8s.io", "v1", "Lease", "leases", True, printer=PRINTER)
