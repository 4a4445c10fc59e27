"""Which pools and devices the node sees: node-local, node-selected, all-nodes and per-device slices; only a
pool's newest generation; incomplete and invalid pools; DeviceTaintRules."""

from __future__ import annotations

import json

from dramock.scheduler.allocator.base import _State
from dramock.scheduler.allocator.model import (
    BUILT_POOLS,
    BUILT_POOLS_MAX,
    SHARED_VIEWS_MAX,
    SIGNATURES_MAX,
    SLICE_SETS,
    SLICE_SETS_MAX,
    _amount,
    _Dev,
    _Pool,
    _View,
)
from dramock.scheduler.types import Obj
from dramock.schemas.nodeselector import node_selector_matches


def _node_matches(node: Obj | None, node_name: str | None, all_nodes: bool | None, selector: Obj | None) -> bool:
    if node_name:
        return node is not None and (node.get("metadata") or {}).get("name") == node_name
    if all_nodes:
        return True
    if selector is not None:
        return node_selector_matches(selector, node)
    return False


def _pool_id(s: Obj) -> tuple[str, str]:
    spec = s.get("spec") or {}
    return spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")


def _pool_order(p: _Pool) -> tuple[str, str]:
    return p.driver, p.name


class SliceSet:
    """The slices without nodeName (AllocationInput.shared_slices), sorted out once per list: their pools, the
    distinct node selectors they carry (whether each matches is all a node's view of them depends on), whether
    any selects devices per node, and the gathered views by node signature (see gather_pools)."""

    def __init__(self, slices: list[Obj]):
        self.slices = slices
        self.pids: set[tuple[str, str]] = set()
        self.selectors: list[Obj] = []
        self.node_specific = False  # devices selected per node (or a stray nodeName): no view is shared
        self.binds_to_node = False
        seen: dict[str, int] = {}
        for s in slices:
            spec = s.get("spec") or {}
            self.pids.add(_pool_id(s))
            if spec.get("perDeviceNodeSelection") or spec.get("nodeName"):
                self.node_specific = True
            sel = spec.get("nodeSelector")
            if sel is not None and not spec.get("allNodes"):
                text = json.dumps(sel, sort_keys=True, separators=(",", ":"))
                if text not in seen:
                    seen[text] = len(self.selectors)
                    self.selectors.append(sel)
            if any(d.get("bindsToNode") for d in spec.get("devices") or []):
                self.binds_to_node = True
        self.views: dict[tuple, tuple] = {}
        self.signatures: dict[int, tuple] = {}  # id(node) -> (node, signature); informers replace nodes

    def signature(self, node: Obj | None) -> tuple[bool, ...]:
        """Whether each of the distinct node selectors matches the node."""
        hit = self.signatures.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        sig = tuple([node_selector_matches(sel, node) for sel in self.selectors])
        if len(self.signatures) >= SIGNATURES_MAX:
            self.signatures.clear()
        self.signatures[id(node)] = (node, sig)
        return sig


def slice_set(slices: list[Obj]) -> SliceSet:
    hit = SLICE_SETS.get(id(slices))
    if hit is None or hit.slices is not slices:
        if len(SLICE_SETS) >= SLICE_SETS_MAX:
            SLICE_SETS.clear()
        hit = SLICE_SETS[id(slices)] = SliceSet(slices)
    return hit


def shared_view_key(shared_slices: list[Obj], node: Obj | None, binding_on: bool) -> tuple | None:
    """For a node without node-local slices: a key such that two such nodes with the same key get the same
    allocation outcome for the same claims and allocated state (None when the node itself may show in it:
    devices selected per node, or bindsToNode with DRADeviceBindingConditions on). Valid while the slices
    do not change."""
    sset = slice_set(shared_slices)
    if sset.node_specific or (binding_on and sset.binds_to_node):
        return None
    return ("shared", sset.signature(node))


class _Pools(_State):
    def slices_of_pool(self, pid: tuple) -> list[Obj]:
        """All slices of a pool, any node and generation (index built on first use)."""
        if self._all_by_pool is None:
            index: dict[tuple, list[Obj]] = {}
            for s in self.inp.slices:
                spec = s.get("spec") or {}
                index.setdefault((spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")), []).append(s)
            self._all_by_pool = index
        return self._all_by_pool.get(pid, [])

    def gather_pools(self) -> None:
        inp = self.inp
        shared = inp.shared_slices
        if shared is None:
            unbound, bound = self._gather(inp.node_slices if inp.node_slices is not None else inp.slices)
            self.view = _View(unbound, bound)
            self.pools = self.view.pools
            return
        local = inp.node_slices or []
        sset = slice_set(shared)
        if sset.node_specific or any(_pool_id(s) in sset.pids for s in local):
            # Devices chosen per node, or a pool with slices of both kinds: gathered together, per node.
            unbound, bound = self._gather(local + shared)
            self.view = _View(unbound, bound)
        else:
            # Which shared slices the node sees depends only on which of their node selectors match it: every
            # node with the same answers shares one gathered view (and what the search derives from it).
            rules = inp.taint_rules if self.taint_rules_on else []
            key = (id(inp.slices), self.partitionable, self.taint_rules_on, tuple(map(id, rules)),
                   sset.signature(self.node))
            hit = sset.views.get(key)
            if hit is None:
                if len(sset.views) >= SHARED_VIEWS_MAX:
                    sset.views.clear()
                hit = sset.views[key] = (inp.slices, rules, _View(*self._gather(shared)))
            view = hit[-1]
            if local:
                unbound, bound = self._gather(local)
                view = _View(sorted(view.unbound + unbound, key=_pool_order),
                             sorted(view.bound + bound, key=_pool_order))
            self.view = view
        self.pools = self.view.pools

    def _gather(self, node_slices: list[Obj]) -> tuple[list[_Pool], list[_Pool]]:
        """The pools of these slices that the node sees, each sorted by driver and name: those without binding
        conditions, and those with (which the search tries last)."""
        by_pool: dict[tuple, list[Obj]] = {}  # node-relevant slices, newest generation
        node, node_name, partitionable = self.node, self.node_name, self.partitionable
        for s in node_slices:
            spec = s.get("spec") or {}
            slice_node = spec.get("nodeName")
            if slice_node:
                if slice_node != node_name or node is None:
                    continue  # the common case: another node's slice
            elif not partitionable and (spec.get("perDeviceNodeSelection") or spec.get("sharedCounters")):
                continue
            elif spec.get("sharedCounters"):
                pass  # always relevant: needed to use the pool
            elif spec.get("allNodes") or spec.get("nodeSelector") is not None:
                if not _node_matches(node, None, spec.get("allNodes"), spec.get("nodeSelector")):
                    continue
            elif spec.get("perDeviceNodeSelection"):
                if not any(_node_matches(node, d.get("nodeName"), d.get("allNodes"), d.get("nodeSelector"))
                           for d in spec.get("devices") or []):
                    continue
            else:
                continue  # some unknown future node selection
            pool_ref = spec.get("pool") or {}
            pid = (spec.get("driver", ""), pool_ref.get("name", ""))
            cur = by_pool.get(pid)
            gen = pool_ref.get("generation", 0)
            if cur is None or gen > cur[0]["spec"]["pool"].get("generation", 0):
                by_pool[pid] = [s]
            elif gen == cur[0]["spec"]["pool"].get("generation", 0):
                cur.append(s)
        rules = self.inp.taint_rules if self.taint_rules_on else []
        pools: list[_Pool] = []
        bound: list[_Pool] = []
        for pid, slices in by_pool.items():
            spec0 = slices[0]["spec"]
            gen = spec0["pool"].get("generation", 0)
            count = spec0["pool"].get("resourceSliceCount", 1)
            pool = _Pool(*pid)
            if len(slices) == count:
                all_gen = slices
            else:
                all_gen = []
                obsolete = False
                for s in self.slices_of_pool(pid):
                    g = (s["spec"].get("pool") or {}).get("generation", 0)
                    if g == gen:
                        all_gen.append(s)
                    elif g > gen:
                        obsolete = True
                if obsolete:
                    continue  # the driver is replacing this generation
                if len(all_gen) != count:
                    pool.incomplete = True
                    pools.append(pool)
                    continue
            by_name = sorted(slices, key=lambda s: (s.get("metadata") or {}).get("name", ""))
            pool = self.built_pool(pool, all_gen, by_name, rules)
            (bound if pool.has_binding else pools).append(pool)
        pools.sort(key=_pool_order)
        bound.sort(key=_pool_order)
        return pools, bound

    def built_pool(self, pool: _Pool, all_gen: list[Obj], slices: list[Obj], rules: list[Obj]) -> _Pool:
        """The pool built from these slices: a pool and its devices depend only on the slice and rule objects
        (informers replace, never change, an object) and the allocator's feature gates, so every node and pod
        shares one build until a slice changes; a pool that selects devices per node is built per call."""
        pool.all_slices = all_gen
        if any(s["spec"].get("perDeviceNodeSelection") for s in slices):
            self.build_pool(pool, slices, rules)
            return pool
        key = (pool.driver, pool.name, self.partitionable, self.taint_rules_on,
               tuple(map(id, all_gen)), tuple(map(id, slices)), tuple(map(id, rules)))
        hit = BUILT_POOLS.get(key)
        if hit is not None:
            return hit[-1]
        self.build_pool(pool, slices, rules)
        if len(BUILT_POOLS) >= BUILT_POOLS_MAX:
            BUILT_POOLS.clear()
        BUILT_POOLS[key] = (tuple(all_gen), tuple(slices), tuple(rules), pool)
        return pool

    def build_pool(self, pool: _Pool, slices: list[Obj], rules: list[Obj]) -> None:
        names: set[str] = set()
        for s in (pool.all_slices if self.partitionable else []):
            for cs in s["spec"].get("sharedCounters") or []:
                if cs.get("name") in pool.counter_sets:
                    pool.invalid = f"duplicate counter set name {cs.get('name')}"
                    return
                pool.counter_sets[cs.get("name")] = {n: _amount(c) for n, c in (cs.get("counters") or {}).items()}
        for s in slices:
            spec = s["spec"]
            if self.partitionable and spec.get("sharedCounters"):
                continue
            per_device = bool(spec.get("perDeviceNodeSelection"))
            for d in spec.get("devices") or []:
                name = d.get("name", "")
                if name in names:
                    pool.invalid = f"duplicate device name {name}"
                    return
                names.add(name)
                if self.partitionable:
                    for cc in d.get("consumesCounters") or []:
                        cs = pool.counter_sets.get(cc.get("counterSet"))
                        if cs is None:
                            pool.invalid = f"counter set {cc.get('counterSet')} not found"
                            return
                        for cn in cc.get("counters") or {}:
                            if cn not in cs:
                                pool.invalid = f"counter {cn} not found in counter set {cc.get('counterSet')}"
                                return
                if per_device and not _node_matches(self.node, d.get("nodeName"), d.get("allNodes"),
                                                    d.get("nodeSelector")):
                    continue
                rule_taints = [r["spec"]["taint"] for r in rules if self._rule_selects(r, pool, name)]
                dev = _Dev(pool, s, d, rule_taints)
                if dev.binding:
                    pool.has_binding = True
                pool.devices.append(dev)

    @staticmethod
    def _rule_selects(rule: Obj, pool: _Pool, device: str) -> bool:
        spec = rule.get("spec") or {}
        if not spec.get("taint"):
            return False
        sel = spec.get("deviceSelector") or {}
        return ((not sel.get("driver") or sel["driver"] == pool.driver)
                and (not sel.get("pool") or sel["pool"] == pool.name)
                and (not sel.get("device") or sel["device"] == device))
