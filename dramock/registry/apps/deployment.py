"""apps/v1 Deployment (upstream's pkg/registry/apps/deployment)."""

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
    spec = workload_spec(obj)
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            ru = strategy.setdefault("rollingUpdate", {})
            if isinstance(ru, dict):
                ru.setdefault("maxUnavailable", "25%")
                ru.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)


class DeploymentStrategy(WorkloadStrategy):
    defaults = staticmethod(default)
    validation = staticmethod(v.validate_deployment)
    update_validation = staticmethod(v.immutable_selector)


def _columns() -> list[Obj]:
    return [
        name_col(),
        col("Ready", "string", "Number of the pod with ready state"),
        col("Up-to-date", "string", doc(APPS + "DeploymentStatus", "updatedReplicas")),
        col("Available", "string", doc(APPS + "DeploymentStatus", "availableReplicas")),
        age_col(), containers_col(), images_col(), selector_col(),
    ]


def _row(o: Obj, now: datetime) -> Row:
    return [name(o), f"{status_int(o, 'readyReplicas')}/{spec_int(o, 'replicas')}", status_int(o, "updatedReplicas"),
            status_int(o, "availableReplicas"), age(o, now), *template_cells(o), selector(o)]


PRINTER = Printer(_columns, _row)

KIND = Kind("apps", "v1", "Deployment", "deployments", True, short_names=("deploy",), categories=("all",),
            subresources=("status", "scale"), tracks_generation=True, strategy=DeploymentStrategy, printer=PRINTER)
