"""Memoized allocator outcomes per node, so that one pod's Filter does not re-run the allocator on the nodes
nothing has changed on since the previous pod asked the same thing.

The allocator is a pure function of its input; for one node the input that can differ between two scheduling
attempts is: the claims' specs, the node object, the cluster-wide objects (slices, classes, taint rules: one
generation counter the loop bumps on any of their events) and the devices held in the pools the node sees.
The key holds exactly those (holdings as per-pool version counters), so a hit returns what the allocator
would return. Only outcomes that carry no
per-call data are stored: fits without shareIDs (consumable capacity hands out a fresh one per result) or
allocationTimestamps (binding conditions), and failures with the generic reason (other reasons name the claim).
A 500-node cluster in which each pod takes one device then costs one allocator run per pod, not 500; so does a
cluster whose devices are all in shared (nodeSelector / allNodes) pools: nodes without slices of their own whose
labels the shared slices' node selectors answer alike share one entry (FilterCache.shared_key).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from dramock.scheduler.types import AllocationOutcome, Obj

GENERIC_REASON = "cannot allocate all claims"
MAX_ENTRIES = 1 << 14


def claims_key(claims: list[Obj]) -> str:
    return json.dumps([c.get("spec") for c in claims], sort_keys=True, separators=(",", ":"))


def pools_of(slices: list[Obj]) -> list[tuple[str, str]]:
    """The pools of these slices, each once, in the order of their first slice."""
    out: dict[tuple[str, str], None] = {}
    for sl in slices:
        spec = sl.get("spec") or {}
        out[(spec.get("driver", ""), (spec.get("pool") or {}).get("name", ""))] = None
    return list(out)


def cacheable(outcome: AllocationOutcome) -> bool:
    if outcome.timed_out:
        return False
    if outcome.allocations is None:
        return outcome.reason == GENERIC_REASON
    for alloc in outcome.allocations:
        if "allocationTimestamp" in alloc:
            return False
        if any("shareID" in r for r in (alloc.get("devices") or {}).get("results") or []):
            return False
    return True


class FilterCache:
    def __init__(self, max_entries: int = MAX_ENTRIES):
        self.entries: OrderedDict[tuple, AllocationOutcome] = OrderedDict()
        self.max_entries = max_entries
        self.hits = self.misses = 0

    @staticmethod
    def key(claims: str, node: Obj, cluster_generation: int, pools: list[tuple[str, str]],
            pool_versions: dict[tuple[str, str], int], shared: int = 0) -> tuple[Any, ...]:
        """`pools`: those of the node's own slices; `pool_versions`: per pool, a counter bumped whenever what
        claims hold there changes; `shared`: a counter bumped whenever what claims hold in any pool of the
        slices without nodeName changes (their versions, in one number)."""
        m = node["metadata"]
        return (claims, m["name"], m.get("resourceVersion"), cluster_generation,
                tuple([(pid, pool_versions.get(pid, 0)) for pid in pools]), shared)

    @staticmethod
    def shared_key(claims: str, view: tuple, cluster_generation: int, shared: int) -> tuple[Any, ...]:
        """For a node without slices of its own: `view` (allocator.pools.shared_view_key) stands for the node,
        whose outcome every node with the same view shares."""
        return (claims, view, cluster_generation, shared)

    def get(self, key: tuple) -> AllocationOutcome | None:
        outcome = self.entries.get(key)
        if outcome is None:
            self.misses += 1
        else:
            self.hits += 1
        return outcome

    def put(self, key: tuple, outcome: AllocationOutcome) -> None:
        if not cacheable(outcome):
            return
        self.entries[key] = outcome
        if len(self.entries) > self.max_entries:
            self.entries.popitem(last=False)
