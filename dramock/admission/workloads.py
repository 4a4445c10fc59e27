"""Strategies of the workload kinds (upstream's pkg/registry/apps/* and pkg/registry/batch/job): defaults,
status reset on create, generation, Job selectors generated from the Job's uid, validation."""

from __future__ import annotations

from typing import Any

from dramock.admission.strategy import Cause, Strategy
from dramock.schemas import defaults
from dramock.schemas.validation import workloads as v

Obj = dict[str, Any]
JOB_CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"


class DeploymentStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.deployment(obj)

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return v.validate_deployment(obj)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_deployment(new) + v.immutable_selector(new, old)


class ReplicaSetStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.replica_set(obj)

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return v.validate_replica_set(obj)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_replica_set(new) + v.immutable_selector(new, old)


class DaemonSetStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.daemon_set(obj)

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return v.validate_daemon_set(obj)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_daemon_set(new) + v.immutable_selector(new, old)


class StatefulSetStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.stateful_set(obj)

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return v.validate_stateful_set(obj)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_stateful_set(new) + v.stateful_set_update(new, old)


class JobStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        defaults.job(obj)

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

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return v.validate_job(obj)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_job(new) + v.job_update(new, old)


STRATEGIES: dict[str, type[Strategy]] = {
    "deployments": DeploymentStrategy,
    "replicasets": ReplicaSetStrategy,
    "daemonsets": DaemonSetStrategy,
    "statefulsets": StatefulSetStrategy,
    "jobs": JobStrategy,
}
