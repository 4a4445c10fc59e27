"""kube-scheduler's metrics (pkg/scheduler/metrics), held by each Scheduler on the registry it is given."""

from __future__ import annotations

import logging
import time
from typing import Any

log = logging.getLogger("dramock.scheduler")


class SchedulerMetrics:
    """kube-scheduler's metrics on a prometheus_client registry (the default one unless given), which `serve`
    exposes on the API server's /metrics. `create` returns None without prometheus_client, or when the names are
    taken on that registry (a second scheduler in the process runs without)."""

    def __init__(self, registry: Any = None) -> None:
        from prometheus_client import REGISTRY, Gauge, Histogram
        from prometheus_client import Counter as PCounter

        registry = REGISTRY if registry is None else registry
        self.pending_pods = Gauge("scheduler_pending_pods", "Number of pending pods, by the queue type. 'active' "
                                  "means number of pods in activeQ; 'backoff' means number of pods in backoffQ; "
                                  "'unschedulable' means number of pods in unschedulablePods that the scheduler "
                                  "attempted to schedule and failed; 'gated' is the number of unschedulable pods "
                                  "that the scheduler never attempted to schedule because they are gated.",
                                  ["queue"], registry=registry)
        self.schedule_attempts = PCounter("scheduler_schedule_attempts", "Number of attempts to schedule pods, by "
                                          "the result. 'unschedulable' means a pod could not be scheduled, while "
                                          "'error' means an internal scheduler problem.", ["result", "profile"],
                                          registry=registry)
        self.claim_creates = PCounter("scheduler_resourceclaim_creates", "Number of ResourceClaims creation "
                                      "requests within scheduler", ["status"], registry=registry)
        self.binding_conditions_allocations = PCounter(
            "scheduler_dra_bindingconditions_allocations", "Number of allocations using devices with "
            "BindingConditions, counted per driver per scheduling attempt", ["profile", "driver", "status"],
            registry=registry)
        self.binding_conditions_wait = Histogram(
            "scheduler_dra_bindingconditions_wait_duration_seconds", "Time in seconds spent waiting for "
            "BindingConditions to be satisfied during PreBind.", ["profile", "driver", "status"],
            buckets=[0.1 * 2 ** i for i in range(14)], registry=registry)
        self.plugin_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds", "Duration for running a plugin at a specific "
            "extension point.", ["plugin", "extension_point", "status"],
            buckets=[0.00001 * 1.5 ** i for i in range(20)], registry=registry)
        self._plugin_histograms: dict[tuple[str, str, str], Any] = {}  # labels() costs more than the observation

    @classmethod
    def create(cls, registry: Any = None) -> SchedulerMetrics | None:
        try:
            return cls(registry)
        except (ImportError, ValueError) as e:  # no prometheus_client, or the names are taken
            log.info("scheduler metrics disabled: %s", e)
            return None

    def observe(self, plugin: str, extension_point: str, status: str, start: float) -> None:
        """A plugin's execution time at an extension point, from `start` (time.perf_counter()) until now."""
        child = self._plugin_histograms.get((plugin, extension_point, status))
        if child is None:
            child = self._plugin_histograms[plugin, extension_point, status] = self.plugin_duration.labels(
                plugin, extension_point, status)
        child.observe(time.perf_counter() - start)
