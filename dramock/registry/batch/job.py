"""batch/v1 Job (upstream's pkg/registry/batch/job): defaults, the selector generated from the Job's uid,
its table."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dramock.registry.apps.common import (
    WorkloadStrategy,
    containers_col,
    images_col,
    selector,
    selector_col,
    template_cells,
    workload_spec,
)
from dramock.registry.kind import Kind, selectable
from dramock.registry.printing import Printer, Row, age, age_col, col, human_duration, name, name_col, parse_time
from dramock.schemas.validation import workloads as v

Obj = dict[str, Any]
JOB_CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"


def default(obj: Obj) -> None:
    spec = workload_spec(obj)
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")


class JobStrategy(WorkloadStrategy):
    defaults = staticmethod(default)
    validation = staticmethod(v.validate_job)
    update_validation = staticmethod(v.job_update)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        spec, m = obj.setdefault("spec", {}), obj["metadata"]
        if not spec.get("manualSelector"):
            # Upstream's generateSelector: the Job's uid selects its pods, whose labels carry it.
            labels = spec.setdefault("template", {}).setdefault("metadata", {}).setdefault("labels", {})
            for key in (JOB_CONTROLLER_UID, "controller-uid"):
                labels.setdefault(key, m["uid"])
            for key in (JOB_NAME, "job-name"):
                labels.setdefault(key, m.get("name", ""))
            spec["selector"] = {"matchLabels": {JOB_CONTROLLER_UID: m["uid"]}}


def _columns() -> list[Obj]:
    return [
        name_col(),
        col("Status", "string", "Status of the job."),
        col("Completions", "string", "The completion status of the job. This is the number of succeeded "
            "pods out of the desired completions."),
        col("Duration", "string", "Time required to complete the job."),
        age_col(), containers_col(), images_col(), selector_col(),
    ]


def _job_status(o: Obj) -> str:
    conds = {c.get("type"): c.get("status") for c in (o.get("status") or {}).get("conditions") or []}
    for t in ("Complete", "Failed", "FailureTarget", "SuccessCriteriaMet", "Suspended"):
        if conds.get(t) == "True":
            return t
    if o["metadata"].get("deletionTimestamp"):
        return "Terminating"
    return "Running"


def _row(o: Obj, now: datetime) -> Row:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    completions = spec.get("completions")
    done = f"{status.get('succeeded', 0)}/{completions}" if completions is not None else \
        f"{status.get('succeeded', 0)}/1 of {spec.get('parallelism', 1)}"
    start, end = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
    duration = human_duration(((end or now) - start).total_seconds()) if start else ""
    return [name(o), _job_status(o), done, duration, age(o, now), *template_cells(o), selector(o)]


PRINTER = Printer(_columns, _row)

KIND = Kind("batch", "v1", "Job", "jobs", True, categories=("all",), subresources=("status",),
            selectable_fields={"status.successful": selectable("status", "succeeded", default="0")},
            tracks_generation=True, strategy=JobStrategy, printer=PRINTER)
