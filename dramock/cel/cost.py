"""The worst-case cost estimator, as cel-go's checker.Cost with the DRA size limits: the estimated cost of a
checked AST (compared with the cost limit at compile time) and each comprehension's per-iteration cost,
which the evaluator charges at run time."""

from __future__ import annotations

from dramock.cel.dra import (
    ATTRIBUTE_VALUE_MAX,
    ATTRIBUTE_VALUES_PER_DEVICE,
    ATTRIBUTES_PER_DEVICE,
    DOMAIN_MAX,
    DRIVER_NAME_MAX,
    ID_MAX,
)
from dramock.cel.nodes import (
    Call,
    Ident,
    Index,
    Let,
    ListLit,
    Lit,
    Loop,
    MapLit,
    Node,
    OptMap,
    Select,
    StructLit,
    logic_chain,
)
from dramock.cel.static_types import StaticType


class _Sz:
    """Worst-case size of a value: string length / list length / map entries, with element sizes."""

    __slots__ = ("elem", "fields", "key", "n", "val")

    def __init__(self, n: int, elem: _Sz | None = None, key: _Sz | None = None, val: _Sz | None = None,
                 fields: dict | None = None):
        self.n, self.elem, self.key, self.val, self.fields = n, elem, key, val, fields


_UNKNOWN_SIZE = 1 << 40  # cel-go: an unknown size is "unbounded" (which makes loops over it too costly)
_SZ_UNK = _Sz(_UNKNOWN_SIZE)
_SZ_UNK.elem = _SZ_UNK.key = _SZ_UNK.val = _SZ_UNK
_SZ_ONE = _Sz(1)
_SZ_ATTR_VALUE = _Sz(ATTRIBUTE_VALUE_MAX, elem=_Sz(ATTRIBUTE_VALUE_MAX))
_SZ_INNER_ATTRS = _Sz(ATTRIBUTES_PER_DEVICE, key=_Sz(ID_MAX), val=_SZ_ATTR_VALUE)
_SZ_INNER_CAPS = _Sz(ATTRIBUTES_PER_DEVICE, key=_Sz(ID_MAX), val=_SZ_ONE)
_SZ_DEVICE = _Sz(4, fields={
    "driver": _Sz(DRIVER_NAME_MAX),
    "attributes": _Sz(ATTRIBUTES_PER_DEVICE, key=_Sz(DOMAIN_MAX), val=_SZ_INNER_ATTRS),
    "capacity": _Sz(ATTRIBUTES_PER_DEVICE, key=_Sz(DOMAIN_MAX), val=_SZ_INNER_CAPS),
    "allowMultipleAllocations": _SZ_ONE,
})


def _tc(n: int) -> int:
    """String traversal cost: ceil(0.1 * size)."""
    return (n + 9) // 10


def _bigger(a: _Sz, b: _Sz) -> _Sz:
    return a if a.n >= b.n else b


def _stringish(t: StaticType) -> bool:
    return t.kind in ("string", "bytes")


class CostEstimator:
    """Worst-case cost as cel-go's checker.Cost with the DRA size estimates. Every method returns
    (cost, local cost, size); the local cost leaves out the iterations of nested comprehensions (they are
    charged by themselves at run time) and becomes Loop.iter_cost."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, _Sz]] = []

    def est(self, n: Node) -> tuple[int, int, _Sz]:
        return getattr(self, "e_" + type(n).__name__)(n)

    def e_Lit(self, n: Lit) -> tuple[int, int, _Sz]:
        v = n.value
        return 0, 0, (_Sz(len(v)) if type(v) is str or type(v) is bytes else _SZ_ONE)

    def e_Ident(self, n: Ident) -> tuple[int, int, _Sz]:
        for scope in reversed(self.scopes):
            if n.name in scope:
                return 1, 1, scope[n.name]
        return 1, 1, (_SZ_DEVICE if n.name == "device" else _SZ_ONE)

    def e_Select(self, n: Select) -> tuple[int, int, _Sz]:
        c, lc, sz = self.est(n.operand)
        if n.test:
            return c, lc, _SZ_ONE
        if sz.fields is not None:
            fsz = sz.fields.get(n.field, _SZ_UNK)
        else:
            fsz = sz.val or _SZ_UNK
        return c + 1, lc + 1, fsz

    def e_Index(self, n: Index) -> tuple[int, int, _Sz]:
        c1, l1, s1 = self.est(n.operand)
        c2, l2, _ = self.est(n.index)
        return c1 + c2 + 1, l1 + l2 + 1, (s1.val or s1.elem or _SZ_UNK)

    def e_ListLit(self, n: ListLit) -> tuple[int, int, _Sz]:
        c = lc = 10
        elem: _Sz | None = None
        for e in n.elems:
            ec, el, es = self.est(e)
            c, lc = c + ec, lc + el
            elem = es if elem is None else _bigger(elem, es)
        return c, lc, _Sz(len(n.elems), elem=elem or _SZ_ONE)

    def e_MapLit(self, n: MapLit) -> tuple[int, int, _Sz]:
        c = lc = 30
        key: _Sz | None = None
        val: _Sz | None = None
        for k, v, _ in n.entries:
            kc, kl, ks = self.est(k)
            vc, vl, vs = self.est(v)
            c, lc = c + kc + vc, lc + kl + vl
            key = ks if key is None else _bigger(key, ks)
            val = vs if val is None else _bigger(val, vs)
        return c, lc, _Sz(len(n.entries), key=key or _SZ_ONE, val=val or _SZ_ONE)

    def e_StructLit(self, n: StructLit) -> tuple[int, int, _Sz]:  # pragma: no cover - rejected by the checker
        return 40, 40, _SZ_UNK

    def e_Let(self, n: Let) -> tuple[int, int, _Sz]:
        ic, il, isz = self.est(n.init)
        self.scopes.append({n.var: isz})
        try:
            bc, bl, bsz = self.est(n.body)
        finally:
            self.scopes.pop()
        return 10 + ic + bc, 10 + il + bl, bsz

    def e_OptMap(self, n: OptMap) -> tuple[int, int, _Sz]:
        tc, tl, tsz = self.est(n.target)
        self.scopes.append({n.var: tsz})
        try:
            bc, bl, bsz = self.est(n.body)
        finally:
            self.scopes.pop()
        return tc + bc + 12, tl + bl + 12, bsz

    def e_Loop(self, n: Loop) -> tuple[int, int, _Sz]:
        rc, rl, rsz = self.est(n.rng)
        count = rsz.n
        is_list = n.rng.t.kind == "list" if getattr(n.rng, "t", None) is not None else False
        if n.v2 is None:
            scope = {n.v1: (rsz.elem if is_list else rsz.key) or rsz.elem or rsz.key or _SZ_UNK}
        else:
            scope = {n.v1: _SZ_ONE if is_list else (rsz.key or _SZ_UNK),
                     n.v2: (rsz.elem if is_list else rsz.val) or rsz.elem or rsz.val or _SZ_UNK}
        self.scopes.append(scope)
        try:
            pc, pl, _ = self.est(n.pred) if n.pred is not None else (0, 0, _SZ_ONE)
            bc, bl, bsz = self.est(n.body) if n.body is not None else (0, 0, _SZ_ONE)
        finally:
            self.scopes.pop()
        kind = n.kind
        if kind == "all":  # cond @not_strictly_false(accu): 2, step accu && p: 1 + p, result: 1
            step, lstep, init, result, size = 3 + pc, 3 + pl, 0, 1, _SZ_ONE
        elif kind == "exists":  # cond @not_strictly_false(!accu): 3, step accu || p: 1 + p
            step, lstep, init, result, size = 4 + pc, 4 + pl, 0, 1, _SZ_ONE
        elif kind == "exists_one":  # step p ? accu + 1 : accu, result accu == 1
            step, lstep, init, result, size = pc + 2, pl + 2, 0, 2, _SZ_ONE
        elif kind == "filter":  # step p ? accu + [x] : accu
            step, lstep, init, result = pc + 13, pl + 13, 10, 1
            size = _Sz(count, elem=scope[n.v1])
        elif kind in ("map", "transformList"):  # step [p ?] accu + [t] [: accu]
            step, lstep, init, result = pc + bc + 12, pl + bl + 12, 10, 1
            size = _Sz(count, elem=bsz)
        else:  # transformMap / transformMapEntry: step [p ?] @mapInsert(accu, k, t) [: accu]
            step, lstep, init, result = pc + bc + 3, pl + bl + 3, 30, 1
            if kind == "transformMap":
                size = _Sz(count, key=scope[n.v1], val=bsz)
            else:
                size = _Sz(count, key=bsz.key or _SZ_UNK, val=bsz.val or _SZ_UNK)
        n.iter_cost = max(1, lstep)
        return rc + init + count * step + result, rl + init + result, size

    def e_Call(self, n: Call) -> tuple[int, int, _Sz]:
        fn = n.fn
        if fn == "_&&_" or fn == "_||_":
            ests = [self.est(o) for o in logic_chain(n)[1]]
            return sum(e[0] for e in ests), sum(e[1] for e in ests), _SZ_ONE
        parts = ([n.target] if n.target is not None else []) + list(n.args)
        ests = [self.est(p) for p in parts]
        c = sum(e[0] for e in ests)
        lc = sum(e[1] for e in ests)
        if fn == "_?_:_":
            (cc, cl, _), (ac, al, asz), (bc, bl, bsz) = ests
            return cc + max(ac, bc), cl + max(al, bl), _bigger(asz, bsz)
        szs = [e[2] for e in ests]
        types = [p.t for p in parts]
        own, size = _call_cost(fn, szs, types, parts)
        return c + own, lc + own, size


def _call_cost(fn: str, szs: list[_Sz], types: list[StaticType], parts: list[Node]) -> tuple[int, _Sz]:
    first = szs[0] if szs else _SZ_ONE
    if fn in ("_==_", "_!=_"):
        return _tc(min(szs[0].n, szs[1].n)), _SZ_ONE
    if fn in ("_<_", "_<=_", "_>_", "_>=_"):
        if _stringish(types[0]) or _stringish(types[1]):
            return _tc(min(szs[0].n, szs[1].n)), _SZ_ONE
        return 1, _SZ_ONE
    if fn == "_+_":
        if types[0].kind in ("string", "bytes", "list") or types[1].kind in ("string", "bytes", "list"):
            total = szs[0].n + szs[1].n
            elem = _bigger(szs[0].elem or _SZ_ONE, szs[1].elem or _SZ_ONE)
            return max(1, _tc(total)), _Sz(total, elem=elem)
        return 1, _SZ_ONE
    if fn == "@in":
        return (1 if types[1].kind == "map" else max(1, szs[1].n)), _SZ_ONE
    if fn in ("matches", "find", "findAll"):
        pattern = szs[1].n if len(szs) > 1 else 1
        cost = max(1, _tc(first.n) * ((pattern + 3) // 4))
        if fn == "find":
            return cost, _Sz(first.n)
        if fn == "findAll":
            return cost, _Sz(first.n, elem=_Sz(first.n))
        return cost, _SZ_ONE
    if fn in ("contains", "startsWith", "endsWith"):
        return max(1, _tc(first.n)), _SZ_ONE
    if fn in ("lowerAscii", "upperAscii", "trim", "substring"):
        return 1 + _tc(first.n), _Sz(first.n)
    if fn == "replace":
        new = szs[2].n if len(szs) > 2 else 1
        return 1 + _tc(first.n), _Sz(first.n + first.n * new)
    if fn == "split":
        return _tc(2 * first.n), _Sz(first.n + 1, elem=_Sz(first.n))
    if fn == "join":
        elem = first.elem or _SZ_UNK
        sep = szs[1].n if len(szs) > 1 else 0
        total = first.n * (elem.n + sep)
        return 1 + _tc(total), _Sz(total)
    if fn == "strings.quote":
        return 1 + _tc(first.n), _Sz(2 * first.n + 2)
    if fn in ("indexOf", "lastIndexOf"):
        if types[0].kind == "list":
            return max(1, first.n), _SZ_ONE
        return 1 + _tc(first.n), _SZ_ONE
    if fn in ("isSorted", "sum", "min", "max"):
        return max(1, first.n), (first.elem or _SZ_ONE) if fn in ("min", "max") else _SZ_ONE
    if fn.startswith("sets."):
        return max(1, szs[0].n * szs[1].n), _SZ_ONE
    if fn == "includes":
        return ATTRIBUTE_VALUES_PER_DEVICE, _SZ_ONE
    if fn == "string":
        return 1 + _tc(first.n), _Sz(max(first.n, 32))
    if fn == "bytes":
        return 1 + _tc(first.n), _Sz(first.n * 4)
    if fn == "size" or fn in ("int", "uint", "double", "bool"):
        return 1, _SZ_ONE
    if fn == "dyn":
        return 1, first
    if fn in ("value", "orValue"):
        return 1, _bigger(first.elem or _SZ_ONE, szs[1] if len(szs) > 1 else _SZ_ONE)
    if fn in ("optional.of", "optional.ofNonZeroValue"):
        return 1, _Sz(first.n, elem=first)
    return 1, _SZ_ONE
