"""The CEL parser: recursive descent over the lexer's tokens, building the AST with the macros (has,
all/exists/exists_one, map/filter, the two-variable comprehensions, cel.bind, optMap/optFlatMap) expanded
at parse time, as cel-go does."""

from __future__ import annotations

from dramock.cel.lexer import RESERVED_WORDS, SyntaxIssue, Token, tokenize
from dramock.cel.limits import INT64_MAX, MAX_RECURSION_DEPTH
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
    qualified_name,
)

_PRIMARY_EXPECTED = ("{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, "
                     "STRING, BYTES, IDENTIFIER}")
_RELATIONS = {"<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "==": "_==_", "!=": "_!=_", "in": "@in"}
_ONE_VAR_MACROS = {"all": "all", "exists": "exists", "exists_one": "exists_one", "existsOne": "exists_one"}


class Parser:
    def __init__(self, src: str):
        self.toks = tokenize(src)
        self.i = 0
        self.depth = 0
        self.last_literal: Lit | None = None  # the last literal made from a number token (for -literal)

    # --- token helpers
    def peek(self) -> Token:
        return self.toks[self.i]

    def next(self) -> Token:
        t = self.toks[self.i]
        self.i += 1
        return t

    def at(self, text: str) -> bool:
        return self.toks[self.i].is_op(text)

    def accept(self, text: str) -> bool:
        if self.toks[self.i].is_op(text):
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> Token:
        t = self.toks[self.i]
        if not t.is_op(text):
            if t.kind == "eof":
                raise SyntaxIssue(t.pos, f"Syntax error: missing '{text}' at '<EOF>'")
            raise SyntaxIssue(t.pos, f"Syntax error: mismatched input '{t.show()}' expecting '{text}'")
        self.i += 1
        return t

    def ident(self) -> Token:
        t = self.next()
        if t.kind == "ident":
            return t
        if t.kind == "qident":
            return t
        raise SyntaxIssue(t.pos, f"Syntax error: mismatched input '{t.show()}' expecting IDENTIFIER")

    # --- grammar
    def parse(self) -> Node:
        e = self.expr()
        t = self.peek()
        if t.kind != "eof":
            raise SyntaxIssue(t.pos, f"Syntax error: mismatched input '{t.show()}' expecting <EOF>")
        return e

    def expr(self) -> Node:
        self.depth += 1
        if self.depth > MAX_RECURSION_DEPTH:
            raise SyntaxIssue(self.peek().pos, f"expression recursion limit exceeded: {MAX_RECURSION_DEPTH}")
        e = self.or_()
        if self.at("?"):
            t = self.next()
            a = self.or_()
            self.expect(":")
            b = self.expr()
            e = Call("_?_:_", [e, a, b], t.pos)
        self.depth -= 1
        return e

    def or_(self) -> Node:
        e = self.and_()
        while self.at("||"):
            t = self.next()
            e = Call("_||_", [e, self.and_()], t.pos)
        return e

    def and_(self) -> Node:
        e = self.relation()
        while self.at("&&"):
            t = self.next()
            e = Call("_&&_", [e, self.relation()], t.pos)
        return e

    def relation(self) -> Node:
        e = self.addition()
        while True:
            t = self.peek()
            fn = _RELATIONS.get(t.text) if t.kind in ("op", "kw") else None
            if fn is None:
                return e
            self.i += 1
            e = Call(fn, [e, self.addition()], t.pos)

    def addition(self) -> Node:
        e = self.multiplication()
        while True:
            t = self.peek()
            if t.kind == "op" and t.text in ("+", "-"):
                self.i += 1
                e = Call("_+_" if t.text == "+" else "_-_", [e, self.multiplication()], t.pos)
            else:
                return e

    def multiplication(self) -> Node:
        e = self.unary()
        while True:
            t = self.peek()
            if t.kind == "op" and t.text in ("*", "/", "%"):
                self.i += 1
                e = Call({"*": "_*_", "/": "_/_", "%": "_%_"}[t.text], [e, self.unary()], t.pos)
            else:
                return e

    def unary(self) -> Node:
        t = self.peek()
        if t.is_op("!") or t.is_op("-"):
            op = t.text
            count = 0
            while self.accept(op):
                count += 1
            m = self.member()
            if count % 2 == 0:
                return m
            lit = self.last_literal
            if op == "-" and lit is not None and m is lit:
                v = lit.value
                if type(v) is int or type(v) is float:
                    lit.value = -v
                    lit.big = False
                    lit.pos = t.pos
                    return lit
            return Call("!_" if op == "!" else "-_", [m], t.pos)
        return self.member()

    def member(self) -> Node:
        e = self.primary()
        while True:
            t = self.peek()
            if t.kind != "op":
                return e
            if t.text == ".":
                self.i += 1
                name = self.ident()
                if self.at("("):
                    args = self.args()
                    e = self.call(name.value if name.kind == "qident" else name.text, args, e, name.pos)
                else:
                    e = Select(e, name.value if name.kind == "qident" else name.text, t.pos)
            elif t.text == ".?":
                self.i += 1
                name = self.ident()
                e = Select(e, name.value if name.kind == "qident" else name.text, t.pos, opt=True)
            elif t.text == "[" or t.text == "[?":
                self.i += 1
                idx = self.expr()
                self.expect("]")
                e = Index(e, idx, t.pos, opt=t.text == "[?")
            elif t.text == "{" and qualified_name(e) is not None:
                self.i += 1
                fields = []
                while not self.at("}"):
                    opt = self.accept("?")
                    f = self.ident()
                    self.expect(":")
                    fields.append((f.text, self.expr(), opt))
                    if not self.accept(","):
                        break
                self.expect("}")
                e = StructLit(qualified_name(e) or "", fields, t.pos)
            else:
                return e

    def args(self) -> list[Node]:
        self.expect("(")
        args: list[Node] = []
        if self.accept(")"):
            return args
        while True:
            args.append(self.expr())
            if self.accept(")"):
                return args
            t = self.peek()
            if not t.is_op(","):
                if t.kind == "eof":
                    raise SyntaxIssue(t.pos, "Syntax error: missing ')' at '<EOF>'")
                raise SyntaxIssue(t.pos, f"Syntax error: mismatched input '{t.show()}' expecting {{')', ','}}")
            self.i += 1

    def primary(self) -> Node:
        t = self.next()
        k = t.kind
        if k == "ident":
            if t.text in RESERVED_WORDS:
                raise SyntaxIssue(t.pos, f"reserved identifier: {t.text}")
            if self.at("("):
                return self.call(t.text, self.args(), None, t.pos)
            return Ident(t.text, t.pos)
        if k == "int" or k == "double":
            lit = self.last_literal = Lit(t.value, t.pos, big=k == "int" and t.value > INT64_MAX)
            return lit
        if k in ("uint", "string", "bytes"):
            return Lit(t.value, t.pos)
        if k == "kw":
            if t.text == "true":
                return Lit(True, t.pos)
            if t.text == "false":
                return Lit(False, t.pos)
            if t.text == "null":
                return Lit(None, t.pos)
        elif k == "op":
            if t.text == "(":
                e = self.expr()
                self.expect(")")
                if e is self.last_literal:  # a parenthesized literal is not folded with a leading '-'
                    self.last_literal = None
                return e
            if t.text == "[" or t.text == "[?":
                return self.list_lit(t)
            if t.text == "{":
                return self.map_lit(t)
            if t.text == ".":
                name = self.ident()
                if self.at("("):
                    return self.call(name.text, self.args(), None, name.pos)
                return Ident(name.text, name.pos)
        if k == "eof":
            raise SyntaxIssue(t.pos, f"Syntax error: mismatched input '<EOF>' expecting {_PRIMARY_EXPECTED}")
        raise SyntaxIssue(t.pos, f"Syntax error: mismatched input '{t.show()}' expecting {_PRIMARY_EXPECTED}")

    def list_lit(self, start: Token) -> Node:
        elems: list[Node] = []
        opt: set[int] = set()
        first_optional = start.text == "[?"
        while first_optional or not self.at("]"):
            if first_optional or self.accept("?"):
                first_optional = False
                opt.add(len(elems))
            elems.append(self.expr())
            if not self.accept(","):
                break
        self.expect("]")
        return ListLit(elems, frozenset(opt), start.pos)

    def map_lit(self, start: Token) -> Node:
        entries = []
        while not self.at("}"):
            opt = self.accept("?")
            k = self.expr()
            self.expect(":")
            entries.append((k, self.expr(), opt))
            if not self.accept(","):
                break
        self.expect("}")
        return MapLit(entries, start.pos)

    # --- macros (expanded at parse time, as cel-go does)
    def call(self, fn: str, args: list[Node], target: Node | None, pos: int) -> Node:
        n = len(args)
        if target is None:
            if fn == "has" and n == 1:
                a = args[0]
                if not isinstance(a, Select) or a.test or a.opt:
                    raise SyntaxIssue(pos, "invalid argument to has() macro")
                return Select(a.operand, a.field, a.pos, test=True)
            return Call(fn, args, pos)
        if fn in _ONE_VAR_MACROS and n in (2, 3):
            if n == 2:
                return Loop(_ONE_VAR_MACROS[fn], self.var(args[0]), None, target, args[1], None, pos)
            v1, v2 = self.var(args[0]), self.var(args[1])
            if v1 == v2:
                raise SyntaxIssue(args[1].pos, f"duplicate variable name: {v1}")
            return Loop(_ONE_VAR_MACROS[fn], v1, v2, target, args[2], None, pos)
        if fn == "map" and n in (2, 3):
            pred = args[1] if n == 3 else None
            return Loop("map", self.var(args[0]), None, target, pred, args[-1], pos)
        if fn == "filter" and n == 2:
            return Loop("filter", self.var(args[0]), None, target, args[1], None, pos)
        if fn in ("transformList", "transformMap", "transformMapEntry") and n in (3, 4):
            v1, v2 = self.var(args[0]), self.var(args[1])
            if v1 == v2:
                raise SyntaxIssue(args[1].pos, f"duplicate variable name: {v1}")
            pred = args[2] if n == 4 else None
            return Loop(fn, v1, v2, target, pred, args[-1], pos)
        if fn == "bind" and n == 3 and isinstance(target, Ident) and target.name == "cel":
            if not isinstance(args[0], Ident):
                raise SyntaxIssue(args[0].pos, "cel.bind() variable names must be simple identifiers")
            return Let(args[0].name, args[1], args[2], pos)
        if fn in ("optMap", "optFlatMap") and n == 2:
            if not isinstance(args[0], Ident):
                raise SyntaxIssue(args[0].pos, f"{fn}() variable name must be a simple identifier")
            return OptMap(fn == "optFlatMap", target, args[0].name, args[1], pos)
        return Call(fn, args, pos, target)

    @staticmethod
    def var(arg: Node) -> str:
        if not isinstance(arg, Ident):
            raise SyntaxIssue(arg.pos, "argument must be a simple name")
        return arg.name
