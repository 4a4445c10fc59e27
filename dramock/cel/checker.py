"""The CEL type checker: infers the static type of every AST node in the DRA environment, resolves function
overloads (and namespaced names such as sets.contains), and reports issues in upstream's words
("undeclared reference", "found no matching overload")."""

from __future__ import annotations

from dramock.cel.dra import DEVICE, DEVICE_FIELDS, EnvOptions
from dramock.cel.errors import CELRuntimeError
from dramock.cel.functions import FEATURE_GATED_FUNCTIONS, FUNCTIONS, OPERATOR_NAMES
from dramock.cel.lib_regex import compile_regex
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
    qualified_name,
)
from dramock.cel.static_types import (
    BOOL,
    BYTES,
    DOUBLE,
    DYN,
    ERR,
    INT,
    NULL,
    STRING,
    TYPE_IDENTIFIERS,
    UINT,
    StaticType,
    assignable,
    is_dyn,
    list_of,
    map_of,
    optional_of,
    substitute,
    type_of,
)
from dramock.cel.values import UInt


class Checker:
    def __init__(self, opts: EnvOptions):
        self.opts = opts
        self.issues: list[tuple[int, str]] = []
        self.scopes: list[dict[str, StaticType]] = []

    def err(self, pos: int, msg: str) -> StaticType:
        self.issues.append((pos, msg))
        return ERR

    def check(self, n: Node) -> StaticType:
        t = getattr(self, "c_" + type(n).__name__)(n)
        n.t = t
        return t

    def lookup(self, name: str) -> StaticType | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    # --- nodes
    def c_Lit(self, n: Lit) -> StaticType:
        v = n.value
        if n.big:
            return self.err(n.pos, "invalid int literal")
        if v is None:
            return NULL
        t = type(v)
        return {bool: BOOL, int: INT, UInt: UINT, float: DOUBLE, str: STRING, bytes: BYTES}[t]

    def c_Ident(self, n: Ident) -> StaticType:
        t = self.lookup(n.name)
        if t is not None:
            return t
        if n.name == "device":
            return DEVICE
        if n.name in TYPE_IDENTIFIERS:
            return type_of(TYPE_IDENTIFIERS[n.name])
        return self.err(n.pos, f"undeclared reference to '{n.name}' (in container '')")

    def _field(self, ot: StaticType, field: str, pos: int) -> StaticType:
        k = ot.kind
        if k == "dyn" or k == "error":
            return DYN if k == "dyn" else ERR
        if k == "map":
            if not assignable(ot.params[0], STRING, {}):
                return self.err(pos, f"type '{ot}' does not support field selection")
            return ot.params[1]
        if ot == DEVICE:
            ft = DEVICE_FIELDS.get(field)
            if ft is None or (field == "allowMultipleAllocations" and not self.opts.consumable_capacity):
                return self.err(pos, f"undefined field '{field}'")
            return ft
        return self.err(pos, f"type '{ot}' does not support field selection")

    def c_Select(self, n: Select) -> StaticType:
        ot = self.check(n.operand)
        if n.test:
            self._field(ot.params[0] if ot.kind == "optional_type" else ot, n.field, n.pos)
            return BOOL
        if ot.kind == "optional_type":
            inner = ot.params[0]
            ft = self._field(inner, n.field, n.pos)
            return ft if ft.kind == "error" else optional_of(ft)
        ft = self._field(ot, n.field, n.pos)
        if n.opt and ft.kind != "error":
            return optional_of(ft)
        return ft

    def c_Index(self, n: Index) -> StaticType:
        ot = self.check(n.operand)
        it = self.check(n.index)
        wrap = n.opt or ot.kind == "optional_type"
        if ot.kind == "optional_type":
            ot = ot.params[0]
        k = ot.kind
        if k == "dyn" or k == "error":
            rt = DYN
        elif k == "list" and (it.kind in ("int", "dyn", "error")):
            rt = ot.params[0]
        elif k == "map" and assignable(ot.params[0], it, {}):
            rt = ot.params[1]
        else:
            return self.err(n.pos, f"found no matching overload for '_[_]' applied to '({ot}, {it})'")
        return optional_of(rt) if wrap else rt

    def c_ListLit(self, n: ListLit) -> StaticType:
        first: StaticType | None = None
        mismatch = False
        for i, e in enumerate(n.elems):
            et = self.check(e)
            if i in n.opt:
                if et.kind == "optional_type":
                    et = et.params[0]
                elif not is_dyn(et):
                    self.err(e.pos, f"found no matching overload for 'optional element' applied to '({et})'")
            if first is None:
                first = et
            elif not mismatch and et != first and not is_dyn(first) and et.kind != "error":
                self.err(e.pos, f"expected type '{first}' but found '{et}'")
                mismatch = True
        return list_of(first or DYN)

    def c_MapLit(self, n: MapLit) -> StaticType:
        kt: StaticType | None = None
        vt: StaticType | None = None
        for k, v, opt in n.entries:
            a = self.check(k)
            b = self.check(v)
            if opt and b.kind == "optional_type":
                b = b.params[0]
            if a.kind not in ("string", "int", "uint", "bool", "dyn", "error"):
                self.err(k.pos, f"unsupported map key type: {a}")
            if kt is None:
                kt, vt = a, b
                continue
            if a != kt and not is_dyn(kt) and a.kind != "error":
                self.err(k.pos, f"expected type '{kt}' but found '{a}'")
            if b != vt and vt is not None and not is_dyn(vt) and b.kind != "error":
                self.err(v.pos, f"expected type '{vt}' but found '{b}'")
        return map_of(kt or DYN, vt or DYN)

    def c_StructLit(self, n: StructLit) -> StaticType:
        for _, v, _ in n.fields:
            self.check(v)
        return self.err(n.pos, f"undeclared reference to '{n.name}' (in container '')")

    def c_Let(self, n: Let) -> StaticType:
        it = self.check(n.init)
        self.scopes.append({n.var: it})
        try:
            return self.check(n.body)
        finally:
            self.scopes.pop()

    def c_OptMap(self, n: OptMap) -> StaticType:
        tt = self.check(n.target)
        if tt.kind == "optional_type":
            vt = tt.params[0]
        elif is_dyn(tt):
            vt = DYN
        else:
            fn = "optFlatMap" if n.flat else "optMap"
            return self.err(n.pos, f"found no matching overload for '{fn}' applied to '{tt}.(dyn)'")
        self.scopes.append({n.var: vt})
        try:
            bt = self.check(n.body)
        finally:
            self.scopes.pop()
        if n.flat:
            if bt.kind != "optional_type" and not is_dyn(bt):
                return self.err(n.pos, f"found no matching overload for 'optFlatMap' applied to '{tt}.({bt})'")
            return bt if bt.kind == "optional_type" else optional_of(DYN)
        return optional_of(bt)

    def c_Loop(self, n: Loop) -> StaticType:
        rt = self.check(n.rng)
        two = n.v2 is not None
        if rt.kind == "list":
            v1, v2 = (INT, rt.params[0]) if two else (rt.params[0], None)
        elif rt.kind == "map":
            v1, v2 = (rt.params[0], rt.params[1]) if two else (rt.params[0], None)
        elif is_dyn(rt):
            v1, v2 = DYN, DYN
        else:
            self.err(n.rng.pos, f"expression of type '{rt}' cannot be range of a comprehension "
                                "(must be list, map, or dynamic)")
            v1, v2 = ERR, ERR
        scope = {n.v1: v1}
        if n.v2 is not None:
            scope[n.v2] = v2
        self.scopes.append(scope)
        try:
            pt = self.check(n.pred) if n.pred is not None else None
            bt = self.check(n.body) if n.body is not None else None
        finally:
            self.scopes.pop()
        kind = n.kind
        if pt is not None and pt.kind not in ("bool", "dyn", "error"):
            assert n.pred is not None
            op = {"all": "_&&_", "exists": "_||_", "exists_one": "_?_:_"}.get(kind, "_?_:_")
            if op == "_?_:_":
                return self.err(n.pred.pos, f"found no matching overload for '_?_:_' applied to "
                                            f"'({pt}, {bt or 'int'}, {bt or 'int'})'")
            return self.err(n.pred.pos, f"found no matching overload for '{op}' applied to '(bool, {pt})'")
        if kind in ("all", "exists", "exists_one"):
            return BOOL
        if kind == "map" or kind == "transformList":
            return list_of(bt or DYN)
        if kind == "filter":
            return list_of(v1)
        if kind == "transformMap":
            return map_of(INT if rt.kind == "list" else v1, bt or DYN)
        # transformMapEntry
        if bt is not None and bt.kind == "map":
            return bt
        if bt is not None and not is_dyn(bt):
            assert n.body is not None
            return self.err(n.body.pos, f"found no matching overload for 'transformMapEntry' applied to "
                                        f"'({bt})'")
        return map_of(DYN, DYN)

    def c_Call(self, n: Call) -> StaticType:
        fn = n.fn
        if n.target is not None and _namespace(n, self):
            n.fn = fn = f"{qualified_name(n.target)}.{fn}"
            n.target = None
        if fn == "_&&_" or fn == "_||_":
            links, operands = logic_chain(n)
            types = {id(o): self.check(o) for o in operands}
            result = BOOL
            for i, link in enumerate(links):  # bottom-up: the left operand of a link is the link below it
                lt = links[i - 1].t if i else types[id(link.args[0])]
                rt = types[id(link.args[1])]
                if lt.kind not in ("bool", "dyn", "error") or rt.kind not in ("bool", "dyn", "error"):
                    result = self.err(link.pos, f"found no matching overload for '{fn}' applied to '({lt}, {rt})'")
                link.t = result
            return result
        if fn == "_?_:_":
            c, a, b = (self.check(x) for x in n.args)
            if c.kind not in ("bool", "dyn", "error"):
                return self.err(n.pos, f"found no matching overload for '_?_:_' applied to '({c}, {a}, {b})'")
            if a == b:
                return a
            if a.kind == "error" or b.kind == "error":
                return ERR
            if is_dyn(a) or is_dyn(b):
                return DYN
            bind: dict = {}
            if assignable(a, b, bind):
                return a
            if assignable(b, a, {}):
                return b
            return self.err(n.pos, f"found no matching overload for '_?_:_' applied to '({c}, {a}, {b})'")
        target_t = self.check(n.target) if n.target is not None else None
        arg_ts = [self.check(a) for a in n.args]
        member = n.target is not None
        ovs = FUNCTIONS.get(fn)
        feature = FEATURE_GATED_FUNCTIONS.get(fn)
        if ovs is not None and feature is not None and not getattr(self.opts, feature):
            ovs = None
        if ovs is not None:
            ovs = [o for o in ovs if o.member == member]
        if not ovs or fn in OPERATOR_NAMES and member:
            return self.err(n.pos, f"undeclared reference to '{fn}' (in container '')")
        all_ts = arg_ts if target_t is None else [target_t, *arg_ts]
        if any(t.kind == "error" for t in all_ts):
            return ERR
        results = []
        for o in ovs:
            if len(o.params) != len(all_ts):
                continue
            binds: dict = {}
            if all(assignable(p, t, binds) for p, t in zip(o.params, all_ts, strict=True)):
                results.append(substitute(o.result, binds))
        if not results:
            if member:
                sig = f"{target_t}.({', '.join(map(str, arg_ts))})"
            else:
                sig = f"({', '.join(map(str, arg_ts))})"
            return self.err(n.pos, f"found no matching overload for '{fn}' applied to '{sig}'")
        if fn == "matches" or fn == "find" or fn == "findAll":
            pat = n.args[0] if member else (n.args[1] if len(n.args) > 1 else None)
            if isinstance(pat, Lit) and isinstance(pat.value, str):
                try:
                    compile_regex(pat.value)
                except CELRuntimeError:
                    self.err(pat.pos, f"invalid {fn} argument")
        first = results[0]
        if all(r == first for r in results):
            return first
        return DYN


def _namespace(n: Call, checker: Checker) -> bool:
    """A member call whose target is a dotted name that is not a variable, e.g. sets.contains(...)."""
    qual = qualified_name(n.target) if n.target is not None else None
    if qual is None:
        return False
    root = qual.split(".")[0]
    return checker.lookup(root) is None and root != "device" and f"{qual}.{n.fn}" in FUNCTIONS
