"""apps/v1 DaemonSet (upstream's pkg/registry/apps/daemonset)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dramock.registry.apps.common import (
    APPS,
    WorkloadStrategy,
    containers_col,
    default_update_strategy,
    images_col,
    selector,
    selector_col,
    status_int,
    template_cells,
    workload_spec,
)
from dramock.registry.kind import Kind
from dramock.registry.printing import Printer, Row, age, age_col, col, doc, name, name_col
from dramock.schemas.validation import workloads as v

Obj = dict[str, Any]


def default(obj: Obj) -> None:
    default_update_strategy(workload_spec(obj), maxUnavailable=1, maxSurge=0)


class DaemonSetStrategy(WorkloadStrategy):
    defaults = staticmethod(default)
    validation = staticmethod(v.validate_daemon_set)
    update_validation = staticmethod(v.immutable_selector)


def _columns() -> list[Obj]:
    return [
        name_col(),
        col("Desired", "integer", doc(APPS + "DaemonSetStatus", "desiredNumberScheduled")),
        col("Current", "integer", doc(APPS + "DaemonSetStatus", "currentNumberScheduled")),
        col("Ready", "integer", doc(APPS + "DaemonSetStatus", "numberReady")),
        col("Up-to-date", "integer", doc(APPS + "DaemonSetStatus", "updatedNumberScheduled")),
        col("Available", "integer", doc(APPS + "DaemonSetStatus", "numberAvailable")),
        col("Node Selector", "string", doc("io.k8s.api.core.v1.PodSpec", "nodeSelector")),
        age_col(), containers_col(), images_col(), selector_col(),
    ]


def _row(o: Obj, now: datetime) -> Row:
    ns = (((o.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
    return [name(o), status_int(o, "desiredNumberScheduled"), status_int(o, "currentNumberScheduled"),
            status_int(o, "numberReady"), status_int(o, "updatedNumberScheduled"), status_int(o, "numberAvailable"),
            ",".join(f"{k}={v}" for k, v in sorted(ns.items())) or "<none>", age(o, now),
            *template_cells(o), selector(o)]


PRINTER = Printer(_columns, _row)

KIND = Kind("apps", "v1", "DaemonSet", "daemonsets", True, short_names=("ds",), categories=("all",),
            subresources=("status",), tracks_generation=True, strategy=DaemonSetStrategy, printer=PRINTER)
