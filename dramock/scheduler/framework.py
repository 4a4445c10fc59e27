"""What the scheduling framework's parts share: the scheduler name, the allocator's signature, the outcomes of
a scheduling attempt (Unschedulable with upstream's FitError message, BindError) and how many nodes to examine."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from dramock.scheduler.types import AllocationInput, AllocationOutcome

Obj = dict[str, Any]
Allocate = Callable[[AllocationInput], AllocationOutcome]

SCHEDULER_NAME = "default-scheduler"
GROUP, VERSION = "resource.k8s.io", "v1"

MSG_NO_NODES = "no nodes available to schedule pods"


class Unschedulable(Exception):
    """No node fits the pod. `unavailable`: its allocated claims that some node rejected for their allocation
    (PostFilter may deallocate one so that the next attempt can allocate it elsewhere)."""

    def __init__(self, message: str, unavailable: list[Obj] | None = None):
        super().__init__(message)
        self.unavailable = unavailable or []


class BindError(Exception):
    pass


def fit_error_message(num_nodes: int, reasons: Counter[str]) -> str:
    """Upstream's FitError.Error(): `0/N nodes are available: <count reason>, ....`"""
    if num_nodes == 0:
        return MSG_NO_NODES
    parts = sorted(f"{n} {r}" for r, n in reasons.items())
    return f"0/{num_nodes} nodes are available: {', '.join(parts)}."


def feasible_nodes_to_find(num_nodes: int, percentage: int = 0) -> int:
    """kube-scheduler's numFeasibleNodesToFind with the default adaptive percentageOfNodesToScore: every node
    below 100, else 50% minus 1% per 125 nodes (at least 5%), and never fewer than 100."""
    if num_nodes < 100:
        return num_nodes
    if percentage <= 0:
        percentage = max(50 - num_nodes // 125, 5)
    return max(num_nodes * percentage // 100, 100)
