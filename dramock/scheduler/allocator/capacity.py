"""Consumable capacity (DRAConsumableCapacity): a request's capacity against a device's, its requestPolicy,
the shares already taken."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dramock.scheduler.allocator.model import _Dev, _Error, _fq, _qty, _Req
from dramock.scheduler.allocator.pools import _Pools
from dramock.scheduler.types import Obj
from dramock.schemas.quantity import Quantity


class _Capacity(_Pools):
    def resolve_capacity(self, dev: _Dev) -> dict[tuple, tuple[str, Obj]]:
        """fq name -> (the device's spelling, DeviceCapacity); <driver>/x wins over x."""
        out: dict[tuple, tuple[str, Obj]] = {}
        prefix = dev.driver + "/"
        for name, cap in dev.caps.items():
            if name.startswith(prefix):
                out[(dev.driver, name[len(prefix):])] = (name, cap)
        for name, cap in dev.caps.items():
            if name.startswith(prefix):
                continue
            out.setdefault(_fq(name, dev.driver), (name, cap))
        return out

    def resolve_requests(self, req: _Req, dev: _Dev) -> dict[tuple, tuple[Fraction, Any]] | None:
        out: dict[tuple, tuple[Fraction, Any]] = {}
        for rname, rval in req.capacity.items():
            if rname in dev.caps:
                key = _fq(rname, dev.driver)
            else:
                domain, sep, ident = rname.partition("/")
                if sep:
                    if domain != dev.driver or ident not in dev.caps:
                        return None
                    key = (domain, ident)
                elif f"{dev.driver}/{rname}" in dev.caps:
                    key = (dev.driver, rname)
                else:
                    return None
            if key in out:
                raise _Error(f'capacity "{key[1]}" requested twice')
            out[key] = (_qty(rval), rval)
        return out

    def _step_round(self, v: Fraction, lo: Fraction, step: Fraction) -> Fraction:
        if not self.fractional:
            v, lo, step = Fraction(_ceil(v)), Fraction(_ceil(lo)), Fraction(_ceil(step))
        if step <= 0:
            return v
        n = _ceil((v - lo) / step)
        return lo + step * n

    def consumed_value(self, request: tuple[Fraction, Any] | None, cap: Obj) -> tuple[Fraction, Any]:
        """calculateConsumedCapacity -> (value, the quantity whose text or format the result takes)."""
        requested, raw = request if request is not None else (None, None)
        policy = cap.get("requestPolicy")
        total = _qty(cap.get("value"))
        if requested is None:
            if policy and policy.get("default") is not None:
                return _qty(policy["default"]), policy["default"]
            return total, cap.get("value")
        if not policy:
            return requested, raw
        rng = policy.get("validRange")
        if rng and rng.get("min") is not None:
            lo = _qty(rng["min"])
            if requested < lo:
                return lo, rng["min"]
            if rng.get("step") is None:
                return requested, raw
            return self._step_round(requested, lo, _qty(rng["step"])), rng["step"]
        if policy.get("validValues") is not None:
            for vv in policy["validValues"]:
                if requested <= _qty(vv):
                    return _qty(vv), vv
            return requested, raw
        return requested, raw

    def violates(self, value: Fraction, policy: Obj | None) -> bool:
        if not policy:
            return False
        if policy.get("default") is not None and value == _qty(policy["default"]):
            return False
        rng = policy.get("validRange")
        if rng:
            if rng.get("max") is not None and value > _qty(rng["max"]):
                return True
            if rng.get("step") is not None:
                lo, step = _qty(rng.get("min")), _qty(rng["step"])
                if not self.fractional:
                    value, lo, step = Fraction(_ceil(value)), Fraction(_ceil(lo)), Fraction(_ceil(step))
                if step and (value - lo) % step != 0:
                    return True
            return False
        if policy.get("validValues"):
            return all(value != _qty(v) for v in policy["validValues"])
        return False

    def capacity_fits(self, req: _Req, dev: _Dev) -> tuple[bool, dict | None]:
        """cmpRequestOverCapacity -> (fits, {status name: (value, hint)} when the device is shared)."""
        if not self.consumable:
            return True, None
        resolved = self.resolve_requests(req, dev)
        if resolved is None:
            return False, None
        caps = self.resolve_capacity(dev)
        consumed: dict[tuple, tuple[str, Fraction, Any]] = {}
        for key, (spelling, cap) in caps.items():
            value, hint = self.consumed_value(resolved.get(key), cap)
            if value < 0:
                raise _Error(f'capacity "{spelling}": capacity value is negative')
            consumed[key] = (spelling, value, hint)
        current = self.allocated_capacity.get(dev.id, {})
        allocating = self.allocating_capacity.get(dev.id, {})
        for key, (_, value, _) in consumed.items():
            cap = caps[key][1]
            if self.violates(value, cap.get("requestPolicy")):
                return False, None
            total = value + current.get(key, 0) + allocating.get(key, 0)
            if total > _qty(cap.get("value")):
                return False, None
        if not dev.allow_multi:
            return True, None
        return True, {k: v for k, v in consumed.items()}


def _ceil(v: Fraction) -> int:
    return -((-v.numerator) // v.denominator)


def _format(v: Fraction, hint: Any) -> str:
    """The consumed quantity as upstream serializes it: the request / policy value as written when the value
    is that one, else in the format of the quantity it derives from (resource.NewQuantity(v, format))."""
    fmt = None
    if hint is not None:
        try:
            q = hint if isinstance(hint, Quantity) else Quantity.parse(str(hint))
            if q.to_fraction() == v:
                return str(q)
            fmt = q.format
        except ValueError:
            pass
    if v.denominator == 1:
        return str(Quantity.from_int(int(v), fmt) if fmt else Quantity.from_int(int(v)))
    milli = v * 1000
    if milli.denominator == 1:
        return f"{int(milli)}m"
    return str(float(v))
