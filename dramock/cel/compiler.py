"""The compiler: turns a checked AST into Python closures over the activation, specializing operators by
their static operand types, folding calls on constants, and taking fast paths for equality and ordering
against constants."""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

from dramock.cel.activation import FIRST_VARIABLE_SLOT, SLOT_DEVICE, Closure
from dramock.cel.comprehensions import LOOP_BUILDERS
from dramock.cel.dra import DEVICE
from dramock.cel.errors import CELCompileError, CELCostExceeded, CELRuntimeError
from dramock.cel.functions import FOLDABLE_FUNCTIONS, IMPLEMENTATIONS, OPERATOR_NAMES
from dramock.cel.limits import INT64_MAX
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
from dramock.cel.operators import (
    add,
    checked_int64,
    divide,
    greater,
    greater_or_equal,
    has_field,
    index_into,
    is_in,
    less,
    less_or_equal,
    map_key,
    modulo,
    multiply,
    negate,
    no_overload,
    no_such_key,
    optional_index,
    optional_select,
    select_field,
    subtract,
)
from dramock.cel.semver import Semver
from dramock.cel.static_types import TYPE_VALUE_NAMES, StaticType
from dramock.cel.values import NUMERIC_TYPES, CelOptional, CelType, UInt, cel_equals
from dramock.schemas.quantity import Quantity

_CHARGING = frozenset({"matches", "find", "findAll", "replace", "split", "join", "strings.quote",
                       "sets.contains", "sets.equivalent", "sets.intersects"})
_DIRECT_EQ_KINDS = frozenset({"string", "int", "uint", "double", "bool", "bytes"})
_NUMERIC_KINDS = frozenset({"int", "uint", "double"})
_DUMMY_ACT: list = [0, INT64_MAX, INT64_MAX, None, None]


def _const_fn(v: Any) -> Closure:
    return lambda s: v


class Compiler:
    def __init__(self) -> None:
        self.scopes: list[dict[str, int]] = []
        self.nslots = FIRST_VARIABLE_SLOT
        self.dynamic = False  # loops or size-dependent operations: evaluation gets a wall-clock deadline
        self.consts: dict[int, Any] = {}
        self.depth = self.max_depth = 0

    def new_slot(self) -> int:
        self.nslots += 1
        return self.nslots - 1

    def c(self, n: Node) -> Closure:
        self.depth += 1
        if self.depth > self.max_depth:
            self.max_depth = self.depth
        fn = getattr(self, "k_" + type(n).__name__)(n)
        self.depth -= 1
        return fn

    def const(self, n: Node, v: Any) -> Closure:
        self.consts[id(n)] = v
        return _const_fn(v)

    def is_const(self, n: Node) -> bool:
        return id(n) in self.consts

    # --- leaves
    def k_Lit(self, n: Lit) -> Closure:
        return self.const(n, n.value)

    def k_Ident(self, n: Ident) -> Closure:
        for scope in reversed(self.scopes):
            if n.name in scope:
                return itemgetter(scope[n.name])
        if n.name == "device":
            return itemgetter(SLOT_DEVICE)
        return self.const(n, CelType(TYPE_VALUE_NAMES[n.name]))

    # --- selection
    def k_Select(self, n: Select) -> Closure:
        op = self.c(n.operand)
        f = n.field
        ot = n.operand.t
        if n.test:
            return lambda s: has_field(op(s), f)
        if n.opt or ot.kind == "optional_type":
            return lambda s: optional_select(op(s), f)
        if ot == DEVICE:
            return lambda s: op(s)[f]
        if ot.kind == "map":
            def select_map(s: list) -> Any:
                m = op(s)
                try:
                    return m[f]
                except KeyError:
                    raise no_such_key(f) from None
            return select_map
        return lambda s: select_field(op(s), f)

    def k_Index(self, n: Index) -> Closure:
        op = self.c(n.operand)
        ix = self.c(n.index)
        ot = n.operand.t
        if n.opt or ot.kind == "optional_type":
            return lambda s: optional_index(op(s), ix(s))
        if ot.kind == "map" and self.is_const(n.index) and type(self.consts[id(n.index)]) is str:
            key = self.consts[id(n.index)]

            def index_map(s: list) -> Any:
                m = op(s)
                try:
                    return m[key]
                except KeyError:
                    raise no_such_key(key) from None
            return index_map
        return lambda s: index_into(op(s), ix(s))

    # --- aggregates
    def k_ListLit(self, n: ListLit) -> Closure:
        elems = [self.c(e) for e in n.elems]
        if n.opt:
            opt = n.opt

            def list_opt(s: list) -> list:
                out = []
                for i, e in enumerate(elems):
                    v = e(s)
                    if i in opt:
                        if type(v) is not CelOptional:
                            raise no_overload("optional element", v)
                        if v.present:
                            out.append(v.value)
                    else:
                        out.append(v)
                return out
            return list_opt
        if all(self.is_const(e) for e in n.elems):
            return self.const(n, [self.consts[id(e)] for e in n.elems])
        return lambda s: [e(s) for e in elems]

    def k_MapLit(self, n: MapLit) -> Closure:
        entries = [(self.c(k), self.c(v), opt) for k, v, opt in n.entries]

        def make_map(s: list) -> dict:
            out: dict = {}
            for kf, vf, opt in entries:
                k = map_key(kf(s))
                if k in out:
                    raise CELRuntimeError("Failed with repeated key")
                v = vf(s)
                if opt:
                    if type(v) is not CelOptional:
                        raise no_overload("optional entry", v)
                    if not v.present:
                        continue
                    v = v.value
                out[k] = v
            return out
        return make_map

    def k_StructLit(self, n: StructLit) -> Closure:  # pragma: no cover - rejected by the checker
        raise CELCompileError(f"undeclared reference to '{n.name}'")

    # --- bindings
    def k_Let(self, n: Let) -> Closure:
        init = self.c(n.init)
        slot = self.new_slot()
        self.scopes.append({n.var: slot})
        try:
            body = self.c(n.body)
        finally:
            self.scopes.pop()

        def let(s: list) -> Any:
            s[slot] = init(s)
            return body(s)
        return let

    def k_OptMap(self, n: OptMap) -> Closure:
        target = self.c(n.target)
        slot = self.new_slot()
        self.scopes.append({n.var: slot})
        try:
            body = self.c(n.body)
        finally:
            self.scopes.pop()
        flat = n.flat
        name = "optFlatMap" if flat else "optMap"

        def opt_map(s: list) -> Any:
            o = target(s)
            if type(o) is not CelOptional:
                raise no_overload(name, o)
            if not o.present:
                return o
            s[slot] = o.value
            r = body(s)
            if flat:
                if type(r) is not CelOptional:
                    raise no_overload(name, r)
                return r
            return CelOptional(True, r)
        return opt_map

    # --- comprehensions
    def k_Loop(self, n: Loop) -> Closure:
        self.dynamic = True
        rng = self.c(n.rng)
        a = self.new_slot()
        b = self.new_slot() if n.v2 is not None else None
        scope = {n.v1: a}
        if n.v2 is not None:
            scope[n.v2] = b  # type: ignore[assignment]
        self.scopes.append(scope)
        try:
            pred = self.c(n.pred) if n.pred is not None else None
            body = self.c(n.body) if n.body is not None else None
        finally:
            self.scopes.pop()
        return LOOP_BUILDERS[n.kind](rng, a, b, pred, body, n.iter_cost)

    # --- calls
    def k_Call(self, n: Call) -> Closure:
        fn = n.fn
        if fn == "_&&_" or fn == "_||_":
            return _logic([self.c(o) for o in logic_chain(n)[1]], fn == "_||_")
        if fn == "_?_:_":
            return _cond(*(self.c(a) for a in n.args))
        parts = ([n.target] if n.target is not None else []) + list(n.args)
        fns = [self.c(p) for p in parts]
        if fn in OPERATOR_NAMES:
            return self.operator(fn, parts, fns)
        impl = IMPLEMENTATIONS[fn]
        if fn in _CHARGING:
            self.dynamic = True
        consts = [self.consts[id(p)] if self.is_const(p) else _NO_CONST for p in parts]
        if fn in FOLDABLE_FUNCTIONS and _NO_CONST not in consts:
            try:
                return self.const(n, impl(_DUMMY_ACT, *consts))
            except CELRuntimeError:
                pass  # keep the error for run time
        return _call(impl, fns, consts)

    def operator(self, fn: str, parts: list[Node], fns: list[Closure]) -> Closure:
        if fn == "!_":
            return _not(fns[0])
        if fn == "-_":
            x = fns[0]
            return lambda s: negate(s, x(s))
        a, b = fns
        ta, tb = parts[0].t, parts[1].t
        ca = self.consts.get(id(parts[0]), _NO_CONST)
        cb = self.consts.get(id(parts[1]), _NO_CONST)
        if fn == "_==_" or fn == "_!=_":
            eq = _eq_fn(a, b, ta, tb, ca, cb)
            if fn == "_==_":
                return eq
            return lambda s: not eq(s)
        if fn in ("_<_", "_<=_", "_>_", "_>=_"):
            direct = (ta.kind == tb.kind and ta.kind in _DIRECT_EQ_KINDS) or (
                ta.kind in _NUMERIC_KINDS and tb.kind in _NUMERIC_KINDS)
            return _compare_fn(fn, a, b, direct, cb)
        if fn == "_+_":
            if ta.kind == "int" and tb.kind == "int":
                return lambda s: checked_int64(a(s) + b(s))
            if ta.kind == "double" and tb.kind == "double":
                return lambda s: a(s) + b(s)
            self.dynamic = True
            return lambda s: add(s, a(s), b(s))
        if fn == "_-_":
            if ta.kind == "int" and tb.kind == "int":
                return lambda s: checked_int64(a(s) - b(s))
            return lambda s: subtract(s, a(s), b(s))
        if fn == "_*_":
            if ta.kind == "int" and tb.kind == "int":
                return lambda s: checked_int64(a(s) * b(s))
            return lambda s: multiply(s, a(s), b(s))
        if fn == "_/_":
            return lambda s: divide(s, a(s), b(s))
        if fn == "_%_":
            return lambda s: modulo(s, a(s), b(s))
        if fn == "@in":
            return lambda s: is_in(s, a(s), b(s))
        raise CELCompileError(f"internal error: unknown operator {fn}")  # pragma: no cover


class _NoConst:
    __slots__ = ()


_NO_CONST = _NoConst()


def _call(impl: Callable, fns: list[Closure], consts: list) -> Closure:
    n = len(fns)
    if n == 0:
        return lambda s: impl(s)
    if n == 1:
        a = fns[0]
        return lambda s: impl(s, a(s))
    if n == 2:
        a, b = fns
        if consts[1] is not _NO_CONST:
            bv = consts[1]
            return lambda s: impl(s, a(s), bv)
        return lambda s: impl(s, a(s), b(s))
    if n == 3:
        a, b, c = fns
        return lambda s: impl(s, a(s), b(s), c(s))
    return lambda s: impl(s, *[f(s) for f in fns])


def _eq_fn(a: Closure, b: Closure, ta: StaticType, tb: StaticType, ca: Any, cb: Any) -> Closure:
    if ca is not _NO_CONST and cb is _NO_CONST:  # constant on the left: swap
        a, b, ta, tb, ca, cb = b, a, tb, ta, cb, ca
    if cb is not _NO_CONST:
        tc = type(cb)
        if tc is str or tc is bytes or tc is Quantity or tc is Semver:
            return lambda s: a(s) == cb  # Python equality is CEL equality against these
        if tc is bool or cb is None:
            return lambda s: a(s) is cb
        if tc is int or tc is float or tc is UInt:
            if ta.kind in _NUMERIC_KINDS:
                return lambda s: a(s) == cb

            def eq_num(s: list) -> bool:
                v = a(s)
                return type(v) in NUMERIC_TYPES and v == cb
            return eq_num
    if ta.kind == tb.kind and ta.kind in _DIRECT_EQ_KINDS:
        return lambda s: a(s) == b(s)
    return lambda s: cel_equals(a(s), b(s))


def _compare_fn(fn: str, a: Closure, b: Closure, direct: bool, cb: Any) -> Closure:
    if direct:
        if cb is not _NO_CONST:
            if fn == "_<_":
                return lambda s: a(s) < cb
            if fn == "_<=_":
                return lambda s: a(s) <= cb
            if fn == "_>_":
                return lambda s: a(s) > cb
            return lambda s: a(s) >= cb
        if fn == "_<_":
            return lambda s: a(s) < b(s)
        if fn == "_<=_":
            return lambda s: a(s) <= b(s)
        if fn == "_>_":
            return lambda s: a(s) > b(s)
        return lambda s: a(s) >= b(s)
    op = {"_<_": less, "_<=_": less_or_equal, "_>_": greater, "_>=_": greater_or_equal}[fn]
    if cb is not _NO_CONST:
        return lambda s: op(a(s), cb)
    return lambda s: op(a(s), b(s))


def _logic(fns: list[Closure], disjunction: bool) -> Closure:
    """CEL `&&` (`||`) over a chain of operands, left to right with short-circuit, commutative with respect
    to errors: one false (true) operand decides even if others fail; otherwise the first error wins."""
    decisive = disjunction  # the value that decides: True for ||, False for &&
    other = not disjunction
    fn = "_||_" if disjunction else "_&&_"

    def logic(s: list) -> bool:
        err = None
        for f in fns:
            try:
                x = f(s)
            except CELRuntimeError as e:
                if type(e) is CELCostExceeded:
                    raise
                if err is None:
                    err = e
                continue
            if x is decisive:
                return decisive
            if x is not other and err is None:
                err = no_overload(fn, x)
        if err is not None:
            raise err
        return other

    if len(fns) == 2:  # the common case, unrolled
        a, b = fns

        def logic2(s: list) -> bool:
            try:
                x = a(s)
            except CELRuntimeError as e:
                if type(e) is CELCostExceeded:
                    raise
                try:
                    y = b(s)
                except CELRuntimeError as e2:
                    if type(e2) is CELCostExceeded:
                        raise
                    raise e from None
                if y is decisive:
                    return decisive
                raise
            if x is decisive:
                return decisive
            y = b(s)
            if x is other:
                if y is True or y is False:
                    return y
                raise no_overload(fn, x, y)
            if y is decisive:
                return decisive
            raise no_overload(fn, x)
        return logic2
    return logic


def _cond(c: Closure, a: Closure, b: Closure) -> Closure:
    def cond(s: list) -> Any:
        x = c(s)
        if x is True:
            return a(s)
        if x is False:
            return b(s)
        raise no_overload("_?_:_", x)
    return cond


def _not(a: Closure) -> Closure:
    def not_(s: list) -> bool:
        x = a(s)
        if x is True:
            return False
        if x is False:
            return True
        raise no_overload("!_", x)
    return not_
