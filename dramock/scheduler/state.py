"""The scheduler's cluster view, kept up to date incrementally so that one scheduling attempt does not walk
every claim and every pod of the cluster (kube-scheduler's snapshot and assume cache play this part).

`TrackedDict` tells a listener which keys changed; `HeldDevices` and `NodeUsage` recompute only the entries
whose sources changed since the last attempt (`refresh()`), keeping sums that the allocator and node fit read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from fractions import Fraction
from typing import Any, TypeVar

from dramock.scheduler.allocator import holding
from dramock.scheduler.types import AllocatedDevices, Obj

_MISSING = object()

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TrackedDict(dict[K, V]):
    """A dict that reports every key set or removed (the in-flight and assumed maps of the loop)."""

    def __init__(self, on_change: Callable[[K, V], None]):
        super().__init__()
        self._on_change = on_change

    def __setitem__(self, key: K, value: V) -> None:
        super().__setitem__(key, value)
        self._on_change(key, value)

    def __delitem__(self, key: K) -> None:
        value = super().pop(key)
        self._on_change(key, value)

    def pop(self, key, default=_MISSING):
        if key in self:
            value = super().pop(key)
            self._on_change(key, value)
            return value
        if default is _MISSING:
            raise KeyError(key)
        return default


class HeldDevices:
    """What allocated claims hold, per device and per pool. A claim counts once: its in-flight allocation
    while the scheduler has one in memory, else its assumed (just written) or informer version."""

    def __init__(self, informer_claim: Callable[[str, str], Obj | None], assumed: dict, in_flight: dict):
        self._informer_claim, self._assumed, self._in_flight = informer_claim, assumed, in_flight
        self._dirty: set[tuple] = set()
        self._contrib: dict[tuple, list[tuple]] = {}  # source -> [(device id, exclusive, capacity items)]
        self._in_flight_by_name: dict[tuple[str, str], str] = {}  # (ns, name) -> uid while in flight
        self._exclusive: Counter[tuple] = Counter()
        self._consuming: Counter[tuple] = Counter()
        self.pool_version: Counter[tuple[str, str]] = Counter()
        # live: what the allocator reads (with the pool versions, which let it remember per-pool verdicts)
        self.devices = AllocatedDevices(pool_version=self.pool_version, versions_of=object())
        self.changed_pools: set[tuple[str, str]] = set()  # pools whose version moved since the loop last looked
        self.pool_results: Counter[tuple[str, str]] = Counter()  # results per pool (the spreading score)

    # Change notifications.
    def claim_changed(self, ns: str, name: str) -> None:
        self._dirty.add(("c", ns, name))

    def in_flight_changed(self, uid: str, claim: Obj) -> None:
        m = claim["metadata"]
        key = (m.get("namespace", ""), m["name"])
        if uid in self._in_flight:
            self._in_flight_by_name[key] = uid
        else:
            self._in_flight_by_name.pop(key, None)
        self._dirty.add(("f", uid))
        self._dirty.add(("c", *key))

    def _source(self, src: tuple) -> Obj | None:
        if src[0] == "f":
            return self._in_flight.get(src[1])
        _, ns, name = src
        if (ns, name) in self._in_flight_by_name:
            return None  # counted through its in-flight allocation
        return self._assumed.get((ns, name)) or self._informer_claim(ns, name)

    @staticmethod
    def _contribution(claim: Obj | None) -> list[tuple]:
        if claim is None:
            return []
        alloc = (claim.get("status") or {}).get("allocation")
        return [holding(r) for r in ((alloc or {}).get("devices") or {}).get("results") or []]

    def _apply(self, contribution: list[tuple], sign: int) -> None:
        d = self.devices
        for did, exclusive, caps in contribution:
            pid = did[:2]
            self.pool_version[pid] += 1
            self.changed_pools.add(pid)
            self.pool_results[pid] += sign
            if exclusive is None:
                continue
            self._consuming[did] += sign
            if self._consuming[did] > 0:
                d.consuming.add(did)
            else:
                del self._consuming[did]
                d.consuming.discard(did)
            if exclusive:
                self._exclusive[did] += sign
                if self._exclusive[did] > 0:
                    d.exclusive.add(did)
                else:
                    del self._exclusive[did]
                    d.exclusive.discard(did)
            for k, v in caps:
                agg = d.capacity.setdefault(did, {})
                agg[k] = agg.get(k, Fraction(0)) + sign * v
            if caps and not self._consuming.get(did):
                d.capacity.pop(did, None)

    def refresh(self) -> None:
        dirty, self._dirty = self._dirty, set()
        for src in dirty:
            new = self._contribution(self._source(src))
            old = self._contrib.pop(src, [])
            if old == new:
                if new:
                    self._contrib[src] = new
                continue
            self._apply(old, -1)
            self._apply(new, +1)
            if new:
                self._contrib[src] = new


class NodeUsage:
    """Requests and pod counts per node: informer pods bound there (not finished), else assumed ones."""

    def __init__(self, requests_of: Callable[[Obj], dict[str, Fraction]], assumed: dict):
        self._requests_of, self._assumed = requests_of, assumed
        self._bound: dict[str, Obj] = {}  # uid -> informer pod bound to a node and not finished
        self._dirty: set[str] = set()
        self._contrib: dict[str, tuple[str, dict[str, Fraction]]] = {}
        self.usage: dict[str, tuple[dict[str, Fraction], int]] = {}
        self.version: Counter[str] = Counter()  # per node, bumped whenever its usage changes

    def pod_changed(self, pod: Obj, deleted: bool) -> None:
        uid = pod["metadata"].get("uid", "")
        node = (pod.get("spec") or {}).get("nodeName")
        if deleted or not node or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            self._bound.pop(uid, None)
        else:
            self._bound[uid] = pod
        self._dirty.add(uid)

    def assumed_changed(self, uid: str, _value: Any) -> None:
        self._dirty.add(uid)

    def _add(self, node: str, requests: dict[str, Fraction], sign: int) -> None:
        self.version[node] += 1
        req, n = self.usage.get(node, ({}, 0))
        for k, v in requests.items():
            req[k] = req.get(k, Fraction(0)) + sign * v
        n += sign
        if n:
            self.usage[node] = (req, n)
        else:
            self.usage.pop(node, None)

    def refresh(self) -> dict[str, tuple[dict[str, Fraction], int]]:
        dirty, self._dirty = self._dirty, set()
        for uid in dirty:
            pod = self._bound.get(uid)
            if pod is not None:
                new: tuple[str, dict[str, Fraction]] | None = (pod["spec"]["nodeName"], self._requests_of(pod))
            elif uid in self._assumed:
                assumed_pod, node = self._assumed[uid]
                new = (node, self._requests_of(assumed_pod))
            else:
                new = None
            old = self._contrib.pop(uid, None)
            if old is not None:
                self._add(old[0], old[1], -1)
            if new is not None:
                self._add(new[0], new[1], +1)
                self._contrib[uid] = new
        return self.usage
