"""apps/v1 ReplicaSet (upstream's pkg/registry/apps/replicaset)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dramock.registry.apps.common import (
    APPS,
    WorkloadStrategy,
    containers_col,
    images_col,
    selector,
    selector_col,
    spec_int,
    status_int,
    template_cells,
    workload_spec,
)
from dramock.registry.kind import Kind
from dramock.registry.printing import Printer, Row, age, age_col, col, doc, name, name_col
from dramock.schemas.validation import workloads as v

Obj = dict[str, Any]


def default(obj: Obj) -> None:
    workload_spec(obj).setdefault("replicas", 1)


class ReplicaSetStrategy(WorkloadStrategy):
    defaults = staticmethod(default)
    validation = staticmethod(v.validate_replica_set)
    update_validation = staticmethod(v.immutable_selector)


def _columns() -> list[Obj]:
    return [
        name_col(),
        col("Desired", "integer", doc(APPS + "ReplicaSetSpec", "replicas")),
        col("Current", "integer", doc(APPS + "ReplicaSetStatus", "replicas")),
        col("Ready", "integer", doc(APPS + "ReplicaSetStatus", "readyReplicas")),
        age_col(), containers_col(), images_col(), selector_col(),
    ]


def _row(o: Obj, now: datetime) -> Row:
    return [name(o), spec_int(o, "replicas"), status_int(o, "replicas"), status_int(o, "readyReplicas"),
            age(o, now), *template_cells(o), selector(o)]


PRINTER = Printer(_columns, _row)

KIND = Kind("apps", "v1", "ReplicaSet", "replicasets", True, short_names=("rs",), categories=("all",),
            subresources=("status", "scale"), tracks_generation=True, strategy=ReplicaSetStrategy, printer=PRINTER)
