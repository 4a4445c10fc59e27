"""Whether a device matches a request: feature gates, the class's and the request's CEL selectors, and the
device's taints against the request's tolerations."""

from __future__ import annotations

from dramock import cel
from dramock.scheduler.allocator.counters import _Counters
from dramock.scheduler.allocator.model import _BLOCKING_EFFECTS, _Dev, _Error, _kobj, _Req
from dramock.scheduler.types import Obj


def _tolerates(tol: Obj, taint: Obj) -> bool:
    """resourceclaim.ToleratesTaint."""
    effect = tol.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = tol.get("key") or ""
    if key and key != taint.get("key"):
        return False
    op = tol.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return (tol.get("value") or "") == (taint.get("value") or "")
    return False


class _Matching(_Counters):
    def selectable(self, ci: int, req: _Req, dev: _Dev) -> bool:
        if not self.binding_on and dev.binding:
            return False
        if dev.compat and not self.compat_on:
            return False  # KEP-5963: gate off, devices declaring groups are ignored
        if not self.partitionable and dev.consumes:
            return False
        cls = req.class_obj or {}
        if not self.selectors_match(ci, dev, (cls.get("spec") or {}).get("selectors") or [], cls):
            return False
        if not self.selectors_match(ci, dev, req.selectors, None):
            return False
        if self.taints_on:
            for taint in dev.taints:
                if taint.get("effect") not in _BLOCKING_EFFECTS:
                    continue
                if not any(_tolerates(t, taint) for t in req.tolerations):
                    return False
        return True

    def selection_key(self, req: _Req) -> tuple:
        """Everything `selectable` depends on besides the device."""
        def exprs(selectors: list[Obj]) -> tuple[str, ...]:
            return tuple((s.get("cel") or {}).get("expression") or "" for s in selectors)
        cls = req.class_obj or {}
        return (self.binding_on, self.compat_on, self.partitionable, self.taints_on,
                exprs((cls.get("spec") or {}).get("selectors") or []), exprs(req.selectors),
                repr(req.tolerations) if self.taints_on else "")

    def selectors_match(self, ci: int, dev: _Dev, selectors: list[Obj], cls: Obj | None) -> bool:
        for i, sel in enumerate(selectors):
            expr = (sel.get("cel") or {}).get("expression") or ""
            try:
                compiled = cel.compile(expr, cost_limit=None)
            except cel.CELCompileError as e:
                raise _Error(f"{self._selector_owner(ci, cls)}: selector #{i}: CEL compile error: {e.message}") \
                    from None
            try:
                if dev.key is None:
                    if not compiled.evaluate(dev.env()):
                        return False
                elif not cel.evaluate_cached(compiled, dev.key, dev.env()):
                    return False
            except cel.CELRuntimeError as e:
                raise _Error(f"{self._selector_owner(ci, cls)}: selector #{i}: CEL runtime error: {e.message}") \
                    from None
        return True

    def _selector_owner(self, ci: int, cls: Obj | None) -> str:
        return f"class {(cls.get('metadata') or {}).get('name', '')}" if cls is not None \
            else f"claim {_kobj(self.claims[ci])}"
