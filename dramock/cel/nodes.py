"""The CEL abstract syntax tree: one node class per construct (macros are already expanded by the parser;
the checker stores each node's static type in `.t`), and helpers that read dotted names and &&/|| chains
without recursion."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dramock.cel.static_types import StaticType


class Node:
    __slots__ = ("pos", "t")
    pos: int
    t: StaticType  # set by the checker


class Lit(Node):
    __slots__ = ("big", "value")

    def __init__(self, value: Any, pos: int, big: bool = False):
        self.value, self.pos, self.big = value, pos, big


class Ident(Node):
    __slots__ = ("name",)

    def __init__(self, name: str, pos: int):
        self.name, self.pos = name, pos


class Select(Node):
    __slots__ = ("field", "operand", "opt", "test")

    def __init__(self, operand: Node, field: str, pos: int, test: bool = False, opt: bool = False):
        self.operand, self.field, self.pos, self.test, self.opt = operand, field, pos, test, opt


class Index(Node):
    __slots__ = ("index", "operand", "opt")

    def __init__(self, operand: Node, index: Node, pos: int, opt: bool = False):
        self.operand, self.index, self.pos, self.opt = operand, index, pos, opt


class Call(Node):
    __slots__ = ("args", "fn", "target")

    def __init__(self, fn: str, args: list, pos: int, target: Node | None = None):
        self.fn, self.args, self.pos, self.target = fn, args, pos, target


class ListLit(Node):
    __slots__ = ("elems", "opt")

    def __init__(self, elems: list, opt: frozenset, pos: int):
        self.elems, self.opt, self.pos = elems, opt, pos


class MapLit(Node):
    __slots__ = ("entries",)

    def __init__(self, entries: list, pos: int):
        self.entries, self.pos = entries, pos  # [(key, value, optional)]


class StructLit(Node):
    __slots__ = ("fields", "name")

    def __init__(self, name: str, fields: list, pos: int):
        self.name, self.fields, self.pos = name, fields, pos


class Loop(Node):
    """An expanded comprehension macro. kind: all, exists, exists_one, map, filter, transformList,
    transformMap, transformMapEntry; v2 is the second variable of the two-variable forms."""

    __slots__ = ("body", "iter_cost", "kind", "pred", "rng", "v1", "v2")

    def __init__(self, kind: str, v1: str, v2: str | None, rng: Node, pred: Node | None,
                 body: Node | None, pos: int):
        self.kind, self.v1, self.v2, self.rng, self.pred, self.body, self.pos = kind, v1, v2, rng, pred, body, pos
        self.iter_cost = 1


class Let(Node):
    """cel.bind(var, init, body)."""

    __slots__ = ("body", "init", "var")

    def __init__(self, var: str, init: Node, body: Node, pos: int):
        self.var, self.init, self.body, self.pos = var, init, body, pos


class OptMap(Node):
    """opt.optMap(var, body) / opt.optFlatMap(var, body)."""

    __slots__ = ("body", "flat", "target", "var")

    def __init__(self, flat: bool, target: Node, var: str, body: Node, pos: int):
        self.flat, self.target, self.var, self.body, self.pos = flat, target, var, body, pos


def qualified_name(e: Node) -> str | None:
    if isinstance(e, Ident):
        return e.name
    if isinstance(e, Select) and not e.test and not e.opt:
        base = qualified_name(e.operand)
        return None if base is None else f"{base}.{e.field}"
    return None


def logic_chain(n: Call) -> tuple[list[Call], list[Node]]:
    """A left-nested chain a && b && c ... (same operator): its links bottom-up and its operands, found
    without recursion (selectors with hundreds of clauses must not hit the recursion limit)."""
    links = []
    cur: Node = n
    while isinstance(cur, Call) and cur.fn == n.fn and cur.target is None and len(cur.args) == 2:
        links.append(cur)
        cur = cur.args[0]
    links.reverse()
    return links, [cur] + [link.args[1] for link in links]
