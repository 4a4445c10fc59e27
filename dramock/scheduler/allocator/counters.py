"""Shared counters (DRAPartitionableDevices) and compatibility groups (DRADeviceCompatibilityGroups) of a
pool, as allocated, in-flight and tentatively chosen devices consume them."""

from __future__ import annotations

from typing import Any

from dramock.scheduler.allocator.capacity import _Capacity
from dramock.scheduler.allocator.model import Amount, _amount, _Dev, _Error, _Pool, _qty

_ZERO = 0
_NONE: dict[str, Amount] = {}


def counter_uses(dev: _Dev) -> list[tuple[str, str, Amount]]:
    """(counter set, counter, amount) of each counter the device consumes, parsed once per built device."""
    uses = dev.uses
    if uses is None:
        uses = dev.uses = [(cc.get("counterSet"), n, _amount(c))
                           for cc in dev.consumes for n, c in (cc.get("counters") or {}).items()]
    return uses


class _Counters(_Capacity):
    def pool_available(self, pool: _Pool) -> dict[str, dict[str, Amount]]:
        avail = self.available.get(id(pool))
        if avail is None:
            avail = {cs: dict(counters) for cs, counters in pool.counter_sets.items()}
            consumers = pool.consumers
            if consumers is None:
                consumers = self._consumers(pool)
            if consumers is not None:
                allocated = self.allocated_any
                for did, uses in consumers:
                    if did not in allocated:
                        continue
                    for cs, n, v in uses:
                        target = avail.get(cs)
                        if target is not None and n in target:
                            target[n] -= v
            else:  # a quantity that does not parse: in the order the error would show
                for s in pool.all_slices:
                    for d in s["spec"].get("devices") or []:
                        if (pool.driver, pool.name, d.get("name", "")) not in self.allocated_any:
                            continue
                        for cc in d.get("consumesCounters") or []:
                            target = avail.get(cc.get("counterSet"))
                            if target is None:
                                continue
                            for n, c in (cc.get("counters") or {}).items():
                                if n in target:
                                    target[n] -= _qty(c)
            self.available[id(pool)] = avail
        return avail

    @staticmethod
    def _consumers(pool: _Pool) -> list[tuple[tuple, list[tuple[str, str, Amount]]]] | None:
        """The pool's counter consumers, parsed once per built pool (None if a quantity does not parse)."""
        out = []
        try:
            for s in pool.all_slices:
                for d in s["spec"].get("devices") or []:
                    uses = [(cc.get("counterSet"), n, _amount(c))
                            for cc in d.get("consumesCounters") or [] for n, c in (cc.get("counters") or {}).items()]
                    if uses:
                        out.append(((pool.driver, pool.name, d.get("name", "")), uses))
        except _Error:
            return None
        pool.consumers = out
        return out

    def take_counters(self, dev: _Dev) -> bool:
        pool = dev.pool_obj
        avail = self.pool_available(pool)
        used = self.consumed.setdefault(id(pool), {})
        uses = counter_uses(dev)
        for cs, n, v in uses:
            u = used.setdefault(cs, {})
            u[n] = u.get(n, _ZERO) + v
        for cs, n, _ in uses:
            if used[cs][n] > avail.get(cs, _NONE).get(n, _ZERO):
                self.give_counters(dev)
                return False
        return True

    def give_counters(self, dev: _Dev) -> None:
        used = self.consumed[id(dev.pool_obj)]
        for cs, n, v in counter_uses(dev):
            used[cs][n] -= v

    def pool_dead(self, pool: _Pool) -> bool:
        """Whether no device of the pool can go to a request without adminAccess in this allocation, whatever
        the search has taken so far: each is held (allocated or in flight), or consumes counters it is not
        already counted in and that the pool lacks even before anything is taken tentatively (tentative takes
        only add to what is used: every amount of the pool is >= 0). try_device refuses such a device without a
        trace or a change, so the search may pass the pool over. Once per pool and allocation."""
        dead = self.dead.get(id(pool))
        if dead is None:
            dead = self.dead[id(pool)] = self._pool_dead_memo(pool)
        return dead

    def _pool_dead_memo(self, pool: _Pool) -> bool:
        """_pool_dead depends on the pool (a built pool is shared by every allocation) and on which of its
        devices are held: remembered on the pool by exactly that, or by the pool's version in the loop's series
        of holdings when the input has one (bumped whenever what is held in the pool changes)."""
        consumers = pool.consumers if pool.consumers is not None else self._consumers(pool)
        if consumers is None:
            return False  # a quantity that does not parse: left to try_device, which tells it when it should
        key: tuple
        if self.pool_version is not None:
            key = (self.partitionable, self.consumable, self.versions_of,
                   self.pool_version.get((pool.driver, pool.name), 0))
        else:
            allocated, allocated_any = self.allocated, self.allocated_any
            key = (self.partitionable, self.consumable,
                   tuple([(dev.id in allocated, dev.id in allocated_any) for dev in pool.devices]),
                   tuple([did in allocated_any for did, _ in consumers]))
        memo = pool.dead_memo
        dead = memo.get(key)
        if dead is None:
            try:
                dead = self._pool_dead(pool)
            except _Error:
                dead = False
            if len(memo) >= 64:
                memo.clear()
            memo[key] = dead
        return dead

    def _pool_dead(self, pool: _Pool) -> bool:
        allocated, allocated_any = self.allocated, self.allocated_any
        if not self.partitionable:
            return all(dev.id in allocated or dev.consumes for dev in pool.devices)
        if any(v < 0 for dev in pool.devices for _, _, v in counter_uses(dev)):
            return False
        avail = None
        for dev in pool.devices:
            if dev.id in allocated:
                continue
            if not dev.consumes or (self.consumable and dev.allow_multi) or dev.id in allocated_any:
                return False
            if avail is None:
                avail = self.pool_available(pool)
            need: dict[tuple[str, str], Amount] = {}
            for cs, n, v in counter_uses(dev):
                need[(cs, n)] = need.get((cs, n), 0) + v
            if all(v <= avail.get(cs, _NONE).get(n, _ZERO) for (cs, n), v in need.items()):
                return False
        return True

    def compat_base(self, pool: _Pool) -> dict[str, Any]:
        base = self.compat_baseline.get(id(pool))
        if base is None:
            base = {}
            for s in pool.all_slices:
                for d in s["spec"].get("devices") or []:
                    if (pool.driver, pool.name, d.get("name", "")) not in self.allocated_any:
                        continue
                    for cc in d.get("consumesCounters") or []:
                        cs = cc.get("counterSet")
                        base[cs] = _compat_add(base.get(cs), frozenset(cc.get("compatibilityGroups") or ()))
            self.compat_baseline[id(pool)] = base
        return base

    def take_compat(self, dev: _Dev) -> list[tuple] | None:
        """Admit the device on each counter set it consumes from; returns the undo list or None."""
        base = self.compat_base(dev.pool_obj)
        undo: list[tuple] = []
        for cc in dev.consumes:
            cs = cc.get("counterSet")
            key = (id(dev.pool_obj), cs)
            state = self.compat_state[key] if key in self.compat_state else base.get(cs)
            groups = frozenset(cc.get("compatibilityGroups") or ())
            if not _compat_admits(state, groups):
                for k, old, had in reversed(undo):
                    self._restore_compat(k, old, had)
                return None
            undo.append((key, self.compat_state.get(key), key in self.compat_state))
            self.compat_state[key] = _compat_add(state, groups)
        return undo

    def _restore_compat(self, key: tuple, old: Any, had: bool) -> None:
        if had:
            self.compat_state[key] = old
        else:
            self.compat_state.pop(key, None)


def _compat_admits(state: Any, groups: frozenset) -> bool:
    """state None: no member yet; frozenset(): all members declared no groups; else the intersection."""
    if state is None:
        return True
    if not groups:
        return not state
    if not state:
        return False
    return bool(state & groups)


def _compat_add(state: Any, groups: frozenset) -> Any:
    if state is None:
        return groups
    if not state or not groups:
        return state
    return state & groups
