"""apps/v1 StatefulSet (upstream's pkg/registry/apps/statefulset)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dramock.registry.apps.common import (
    WorkloadStrategy,
    containers_col,
    default_update_strategy,
    images_col,
    spec_int,
    status_int,
    template_cells,
    workload_spec,
)
from dramock.registry.kind import Kind
from dramock.registry.printing import Printer, Row, age, age_col, col, name, name_col
from dramock.schemas.validation import workloads as v

Obj = dict[str, Any]


def default(obj: Obj) -> None:
    spec = workload_spec(obj)
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    default_update_strategy(spec, partition=0)
    spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})


class StatefulSetStrategy(WorkloadStrategy):
    defaults = staticmethod(default)
    validation = staticmethod(v.validate_stateful_set)
    update_validation = staticmethod(v.stateful_set_update)


def _columns() -> list[Obj]:
    return [
        name_col(),
        col("Ready", "string", "Number of the pod with ready state"),
        age_col(), containers_col(), images_col(),
    ]


def _row(o: Obj, now: datetime) -> Row:
    return [name(o), f"{status_int(o, 'readyReplicas')}/{spec_int(o, 'replicas')}", age(o, now), *template_cells(o)]


PRINTER = Printer(_columns, _row)

KIND = Kind("apps", "v1", "StatefulSet", "statefulsets", True, short_names=("sts",), categories=("all",),
            subresources=("status", "scale"), tracks_generation=True, strategy=StatefulSetStrategy, printer=PRINTER)
