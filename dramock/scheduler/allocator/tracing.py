"""Explanation mode (dramock.scheduler.explain): why a device was passed over, in words with the values
involved. Called only when `AllocationInput.tracer` is set and a device was just rejected."""

from __future__ import annotations

import re
from fractions import Fraction

from dramock.scheduler.allocator.capacity import _format
from dramock.scheduler.allocator.constraints import _Constraint
from dramock.scheduler.allocator.counters import _compat_admits
from dramock.scheduler.allocator.matching import _Matching, _tolerates
from dramock.scheduler.allocator.model import _BLOCKING_EFFECTS, _Dev, _kobj, _qty, _Req


class _Tracing(_Matching):
    # Called only when `inp.tracer` is set and a device was just rejected: they say why, in words, with the
    # values involved. The normal path never runs them.

    def trace_unselectable(self, ci: int, req: _Req) -> None:
        for pool in self.pools:
            if pool.incomplete:
                self.trace.note_pool(ci, req.name, pool.pool_id, "PoolIncomplete",
                                     f"pool {pool.pool_id} is incomplete: not all of its "
                                     "resourceSliceCount slices are published (it is being updated)")
            elif pool.invalid:
                self.trace.note_pool(ci, req.name, pool.pool_id, "PoolInvalid",
                                     f"pool {pool.pool_id} is invalid: {pool.invalid}")
            for dev in pool.devices:
                why = self.why_unselectable(ci, req, dev)
                self.trace.note(ci, req.name, dev.id, *(why or ("Usable", "")))

    def why_unselectable(self, ci: int, req: _Req, dev: _Dev) -> tuple[str, str] | None:
        if not self.binding_on and dev.binding:
            return "FeatureDisabled", "the device has bindingConditions and DRADeviceBindingConditions is off"
        if dev.compat and not self.compat_on:
            return "FeatureDisabled", "the device declares compatibilityGroups and DRADeviceCompatibilityGroups is off"
        if not self.partitionable and dev.consumes:
            return "FeatureDisabled", "the device consumes shared counters and DRAPartitionableDevices is off"
        cls = req.class_obj or {}
        cls_name = (cls.get("metadata") or {}).get("name", "")
        for where, selectors in ((f"class {cls_name}", (cls.get("spec") or {}).get("selectors") or []),
                                 (f"request {req.name}", req.selectors)):
            for i, sel in enumerate(selectors):
                expr = (sel.get("cel") or {}).get("expression") or ""
                if self.selectors_match(ci, dev, [sel], cls if where.startswith("class") else None):
                    continue
                seen = _quote_references(expr, dev)
                return "SelectorFalse", (f"{where} selector #{i} `{expr}` is false"
                                         + (f" (it saw {seen})" if seen else ""))
        if self.taints_on:
            for taint in dev.taints:
                if taint.get("effect") in _BLOCKING_EFFECTS and not any(_tolerates(t, taint)
                                                                        for t in req.tolerations):
                    value = f"={taint['value']}" if taint.get("value") else ""
                    return "Tainted", (f"taint {taint.get('key', '')}{value}:{taint.get('effect')} is not "
                                       "tolerated by the request")
        return None

    def why_in_use(self, ci: int, req: _Req, dev: _Dev) -> tuple[str, str]:
        for other, results in enumerate(self.results):
            for r, d, _, _ in results:
                if d is dev:
                    if other == ci and r.name == req.name:
                        return "Usable", ""  # taken by this very request for another of its devices
                    return "ChosenForOtherRequest", (f"already chosen for claim {_kobj(self.claims[other])}, "
                                                     f"request {r.name} of this pod")
        return "ChosenForOtherRequest", "already chosen for another request of this pod"

    def why_taken(self, ci: int, req: _Req, dev: _Dev) -> tuple[str, str]:
        if dev.id in self.allocated:
            holder = self.trace.holder(dev.id)
            return holder if holder else ("Allocated", "allocated to another claim")
        return self.why_in_use(ci, req, dev)

    def why_counters(self, dev: _Dev) -> str:
        avail = self.pool_available(dev.pool_obj)
        used = self.consumed.get(id(dev.pool_obj), {})
        for cc in dev.consumes:
            cs = cc.get("counterSet")
            for n, c in (cc.get("counters") or {}).items():
                need, hint = _qty(c), c.get("value") if isinstance(c, dict) else c
                left = avail.get(cs, {}).get(n, Fraction(0)) - used.get(cs, {}).get(n, Fraction(0))
                if need > left:
                    total = dev.pool_obj.counter_sets.get(cs, {}).get(n, Fraction(0))
                    return (f"counter set {cs}: counter {n} needs {_format(need, hint)}, only "
                            f"{_format(Fraction(max(left, 0)), hint)} of {_format(Fraction(total), hint)} left")
        return "its shared counters are used up"

    def why_compat(self, dev: _Dev) -> str:
        pool = dev.pool_obj
        base = self.compat_base(pool)
        for cc in dev.consumes:
            cs = cc.get("counterSet")
            key = (id(pool), cs)
            state = self.compat_state[key] if key in self.compat_state else base.get(cs)
            groups = frozenset(cc.get("compatibilityGroups") or ())
            if _compat_admits(state, groups):
                continue
            holders = [f"{'/'.join(d.id)} (this pod)" for results in self.results for _, d, _, _ in results
                       if d.pool_obj is pool and any(x.get("counterSet") == cs for x in d.consumes)]
            for s in pool.all_slices:
                for d in s["spec"].get("devices") or []:
                    if (pool.driver, pool.name, d.get("name", "")) in self.allocated_any and any(
                            x.get("counterSet") == cs for x in d.get("consumesCounters") or []):
                        holders.append(f"{pool.driver}/{pool.name}/{d.get('name', '')} (allocated)")
            mine = ", ".join(sorted(groups)) or "none"
            theirs = ", ".join(sorted(state)) if state else "none"
            return (f"counter set {cs}: its compatibility groups [{mine}] conflict with [{theirs}] of "
                    f"{', '.join(holders) or 'the partitions in use'}")
        return "compatibility group conflict"

    def why_constraint(self, ci: int, c: _Constraint, dev: _Dev) -> str:
        kind = "distinctAttribute" if c.distinct else "matchAttribute"
        mine = dev.attribute(c.attribute)
        if mine is None:
            return f"{kind} {c.attribute}: the device has no such attribute"
        for req, other, _, _ in self.results[ci]:
            if not c.applies(req):
                continue
            theirs = other.attribute(c.attribute)
            if c.distinct and theirs == mine:
                return (f"{kind} {c.attribute}: {_show(mine)} is also the value of device {'/'.join(other.id)} "
                        f"(request {req.name})")
            if not c.distinct and theirs != mine:
                return (f"{kind} {c.attribute}: the device has {_show(mine)} but device {'/'.join(other.id)} "
                        f"(request {req.name}) has {_show(theirs)}")
        return f"{kind} {c.attribute}: not satisfied"

    def why_capacity(self, req: _Req, dev: _Dev) -> str:
        resolved = self.resolve_requests(req, dev)
        if resolved is None:
            missing = [n for n in req.capacity if n not in dev.caps and f"{dev.driver}/{n}" not in dev.caps
                       and n.partition("/")[2] not in dev.caps]
            return f"the device has no capacity {', '.join(missing or list(req.capacity))}"
        caps = self.resolve_capacity(dev)
        current = self.allocated_capacity.get(dev.id, {})
        allocating = self.allocating_capacity.get(dev.id, {})
        for key, (spelling, cap) in caps.items():
            request = resolved.get(key)
            value, hint = self.consumed_value(request, cap)
            asked = "" if request is None else _format(request[0], request[1])
            rounded = (f"requests {asked}, rounded to {_format(value, hint)} by the request policy" if request
                       and request[0] != value else f"requests {_format(value, hint)}")
            if self.violates(value, cap.get("requestPolicy")):
                return f"capacity {spelling}: {rounded}, which its requestPolicy does not allow"
            total = _qty(cap.get("value"))
            left = total - current.get(key, 0) - allocating.get(key, 0)
            if value > left:
                return (f"capacity {spelling}: {rounded}, only {_format(max(left, Fraction(0)), cap.get('value'))} "
                        f"of {_format(total, cap.get('value'))} left")
        return "not enough capacity"


_REFERENCE = re.compile(r'device\.(attributes|capacity)\[\s*"([^"]+)"\s*\]\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)'
                        r'|device\.(attributes|capacity)\[\s*"([^"]+)"\s*\]\s*\[\s*"([^"]+)"\s*\]|device\.driver')


def _quote_references(expr: str, dev: _Dev) -> str:
    """The device values an expression reads (device.driver, device.attributes["d"].x, device.capacity[...]),
    as `ref = value` pairs, so that an explanation shows what a false selector saw."""
    seen: list[str] = []
    for m in _REFERENCE.finditer(expr):
        field, domain, ident = (m.group(1), m.group(2), m.group(3)) if m.group(1) else (m.group(4), m.group(5),
                                                                                          m.group(6))
        if field is None:
            text = f'device.driver = "{dev.driver}"'
        else:
            key = ident if domain == dev.driver else f"{domain}/{ident}"
            if field == "attributes":
                value = dev.attribute(f"{domain}/{ident}")
                shown = _show(value) if value is not None else "(not set)"
            else:
                cap = dev.caps.get(key) or dev.caps.get(f"{domain}/{ident}")
                shown = str(cap.get("value")) if cap else "(not set)"
            text = f"{m.group(0)} = {shown}"
        if text not in seen:
            seen.append(text)
    return ", ".join(seen)


def _show(value: tuple | None) -> str:
    if value is None:
        return "(not set)"
    kind, v = value
    if kind in ("string", "version"):
        return f'"{v}"'
    if kind == "bool":
        return "true" if v else "false"
    return str(list(v)) if isinstance(v, tuple) else str(v)
