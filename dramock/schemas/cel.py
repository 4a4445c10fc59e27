"""CEL for Dynamic Resource Allocation: the one CEL module of dramock.

Used by API validation (compile checks of `DeviceSelector.cel.expression` on create/update) and by the
scheduler's allocator (evaluation per device). The behaviour follows upstream Kubernetes
`k8s.io/dynamic-resource-allocation/cel` (compile.go) and the Kubernetes CEL libraries (quantity, semver,
lists, regex, strings/ext, sets, optional types, two-variable comprehensions, `cel.bind`).

The pipeline is self-contained: a CEL lexer and recursive-descent parser (macros expanded at parse time,
as cel-go does), a static type checker over the DRA environment (the `device` variable), a worst-case
cost estimator (as `cel.EstimateCost` with the DRA size limits) and a compiler that turns the checked AST
into Python closures. Runtime cost is tracked in every comprehension iteration and in every operation
whose cost grows with its input (string/list concatenation, replace, join, regexes...), and evaluation
also has a wall-clock budget, so pathological expressions are cut off (`CELCostExceeded`) instead of
hanging the scheduler.

Why not celpy's runners: cel-python 0.5 has no type checker (no upstream-like compile errors), no
cost tracking, no `cel.bind`, no optional types, `has()` that swallows every error, and its
`CompiledRunner` (~40 µs per call) is several times slower than these closures; see bench/cel.py.

Public API:

    compile(expression, *, cost_limit=CEL_SELECTOR_EXPRESSION_MAX_COST, list_type_attributes=True,
            consumable_capacity=True, derived_attribute=False) -> CompiledExpression
        cached per expression + options; raises CELCompileError, or CELCostExceeded when the worst-case
        estimate exceeds cost_limit (None: no check, for stored expressions)
    CompiledExpression.evaluate(device, *, cost_limit=..., time_budget=...) -> bool
        raises CELRuntimeError (e.g. "no such key: model") or CELCostExceeded; .max_cost, .output_type
    CompiledExpression.evaluate_value(device) -> Any        the raw CEL value (derived attributes)
    CompiledExpression.evaluate_cached(device_key, device) -> bool
    evaluate_cached(expression_or_compiled, device_key, device) -> bool
    device_env(driver, resource_slice_device) -> DeviceEnv    (v1 wire shape -> evaluation input)
    estimate_cost(expression) -> int,  clear_caches()
    Semver.parse(s, normalize=False) -> Semver
    (kubernetes.Quantity values are dramock.schemas.quantity.Quantity)
    MAX_EXPRESSION_LENGTH (10 Ki), CEL_SELECTOR_EXPRESSION_MAX_COST (1,000,000)
"""

from __future__ import annotations

import contextlib
import copy
import decimal
import math
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from operator import itemgetter
from typing import Any

from dramock.schemas.quantity import DECIMAL_EXPONENT, Quantity

try:  # RE2 semantics (linear time, as Go's regexp) when google-re2 is installed.
    import re2 as _re2

    _RE2_OPTIONS = _re2.Options()
    _RE2_OPTIONS.log_errors = False
    _REGEX_ERRORS: tuple = (re.error, _re2.error)
    _RE2_UNANCHORED = _re2._Anchor.UNANCHORED
except (ImportError, AttributeError):  # pragma: no cover - depends on the machine
    _re2 = None
    _RE2_OPTIONS = None
    _REGEX_ERRORS = (re.error,)
    _RE2_UNANCHORED = None

__all__ = [
    "CEL_SELECTOR_EXPRESSION_MAX_COST",
    "DEFAULT_TIME_BUDGET",
    "MAX_EXPRESSION_LENGTH",
    "CELCompileError",
    "CELCostExceeded",
    "CELError",
    "CELRuntimeError",
    "CelOptional",
    "CelType",
    "CompiledExpression",
    "DeviceEnv",
    "Semver",
    "UInt",
    "clear_caches",
    "compile",
    "device_env",
    "estimate_cost",
    "evaluate_cached",
]

# Upstream resource.k8s.io/v1 constants.
MAX_EXPRESSION_LENGTH = 10 * 1024  # CELSelectorExpressionMaxLength
CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000  # CELSelectorExpressionMaxCost
DEFAULT_TIME_BUDGET = 2.0  # seconds of wall clock per evaluation (a second guard after the cost limit)
MAX_RECURSION_DEPTH = 250  # cel-go's default parser recursion limit

# Size limits (resource.k8s.io/v1) that bound the worst-case cost estimate.
_DRIVER_NAME_MAX = 63  # DriverNameMaxLength
_DOMAIN_MAX = 63  # DeviceMaxDomainLength
_ID_MAX = 32  # DeviceMaxIDLength
_ATTRS_PER_DEVICE = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice
_ATTR_VALUE_MAX = 64  # DeviceAttributeMaxValueLength (and list length bound with list-type attributes)
_ATTR_VALUES_PER_DEVICE = 48  # ResourceSliceMaxAttributeValuesPerDevice

_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)
_UINT64_MAX = (1 << 64) - 1


def _fits64(v: int) -> bool:
    return _INT64_MIN <= v <= _INT64_MAX


def _isdigit(c: str) -> bool:
    return "0" <= c <= "9"


_DEEP_EXPRESSION = 150  # closure nesting depth above which evaluation raises the recursion limit


@contextlib.contextmanager
def _recursion_headroom(frames: int) -> Iterator[None]:
    """Temporarily allow `frames` more Python frames (pure-Python recursion: CPython 3.11+ does not use
    the C stack for it). Only compiling, and evaluating unusually deep expressions, need this."""
    old = sys.getrecursionlimit()
    if frames + 1000 <= old:
        yield
        return
    sys.setrecursionlimit(frames + 1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


# ============================================================================ errors


class CELError(Exception):
    """Base of every CEL error; `.message` is the upstream-like text."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class CELCompileError(CELError):
    """The expression does not compile (syntax, type check, result type). Validation: field.Invalid."""


class CELRuntimeError(CELError):
    """Evaluation failed (missing attribute, bad operand...). As upstream, the allocator fails the allocation."""


class CELCostExceeded(CELCompileError, CELRuntimeError):
    """Estimated cost above the limit at compile time ("too complex, exceeds cost limit": field.Forbidden
    upstream) or actual cost / time budget exhausted during evaluation."""

    def __init__(self, message: str, cost: int | None = None):
        super().__init__(message)
        self.cost = cost


_COST_LIMIT_MESSAGE = "too complex, exceeds cost limit"
_ACTUAL_COST_MESSAGE = "operation cancelled: actual cost limit exceeded"


# ============================================================================ values


class UInt(int):
    """A CEL `uint` value (Python int subclass, so arithmetic must re-wrap)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


class CelType:
    """A CEL type value (`type(x)`, `int`, `list`...)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __eq__(self, other: object) -> bool:
        return type(other) is CelType and other.name == self.name  # type: ignore[union-attr]

    def __hash__(self) -> int:
        return hash(("type", self.name))

    def __repr__(self) -> str:
        return self.name


class CelOptional:
    """A CEL `optional_type` value."""

    __slots__ = ("present", "value")

    def __init__(self, present: bool, value: Any = None):
        self.present = present
        self.value = value

    def __eq__(self, other: object) -> bool:
        if type(other) is not CelOptional:
            return False
        if not self.present or not other.present:  # type: ignore[union-attr]
            return self.present == other.present  # type: ignore[union-attr]
        return _eq(self.value, other.value)  # type: ignore[union-attr]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"optional.of({self.value!r})" if self.present else "optional.none()"


_NONE = CelOptional(False)

# ---------------------------------------------------------------------------- Semver

_SEMVER_ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")
_SEMVER_DIGITS = frozenset("0123456789")


def _goq(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _parse_uint64(s: str) -> int:
    if not s or not all(c in _SEMVER_DIGITS for c in s):
        raise ValueError(f"strconv.ParseUint: parsing {_goq(s)}: invalid syntax")
    v = int(s)
    if v > _UINT64_MAX:
        raise ValueError(f"strconv.ParseUint: parsing {_goq(s)}: value out of range")
    return v


class Semver:
    """A semantic version (semver.org 2.0.0, parsed as github.com/blang/semver/v4 does)."""

    __slots__ = ("build", "major", "minor", "patch", "pre")

    def __init__(self, major: int, minor: int, patch: int, pre: tuple = (), build: tuple = ()):
        self.major, self.minor, self.patch, self.pre, self.build = major, minor, patch, pre, build

    @classmethod
    def parse(cls, s: str, normalize: bool = False) -> Semver:
        """blang/semver Parse (or the CEL library's normalizeAndParse); raises ValueError."""
        if normalize:
            s = _normalize_semver(s)
        if not s:
            raise ValueError("Version string empty")
        parts = s.split(".", 2)
        if len(parts) != 3:
            raise ValueError("No Major.Minor.Patch elements found")
        nums = []
        for label, p in (("major", parts[0]), ("minor", parts[1])):
            if not all(c in _SEMVER_DIGITS for c in p):
                raise ValueError(f"Invalid character(s) found in {label} number {_goq(p)}")
            if len(p) > 1 and p[0] == "0":
                raise ValueError(f"{label.capitalize()} number must not contain leading zeroes {_goq(p)}")
            nums.append(_parse_uint64(p))
        patch = parts[2]
        build: list[str] = []
        pre_parts: list[str] = []
        if "+" in patch:
            patch, _, b = patch.partition("+")
            build = b.split(".")
        if "-" in patch:
            patch, _, p = patch.partition("-")
            pre_parts = p.split(".")
        if not all(c in _SEMVER_DIGITS for c in patch):
            raise ValueError(f"Invalid character(s) found in patch number {_goq(patch)}")
        if len(patch) > 1 and patch[0] == "0":
            raise ValueError(f"Patch number must not contain leading zeroes {_goq(patch)}")
        nums.append(_parse_uint64(patch))
        pre = []
        for p in pre_parts:
            if not p:
                raise ValueError("Prerelease is empty")
            if all(c in _SEMVER_DIGITS for c in p):
                if len(p) > 1 and p[0] == "0":
                    raise ValueError(f"Numeric PreRelease version must not contain leading zeroes {_goq(p)}")
                pre.append((True, _parse_uint64(p)))
            elif all(c in _SEMVER_ALNUM for c in p):
                pre.append((False, p))
            else:
                raise ValueError(f"Invalid character(s) found in prerelease {_goq(p)}")
        for b in build:
            if not b:
                raise ValueError("Build meta data is empty")
            if not all(c in _SEMVER_ALNUM for c in b):
                raise ValueError(f"Invalid character(s) found in build meta data {_goq(b)}")
        return cls(nums[0], nums[1], nums[2], tuple(pre), tuple(build))

    def compare(self, o: Semver) -> int:
        for a, b in ((self.major, o.major), (self.minor, o.minor), (self.patch, o.patch)):
            if a != b:
                return 1 if a > b else -1
        if not self.pre or not o.pre:
            return (not self.pre) - (not o.pre)
        for (an, av), (bn, bv) in zip(self.pre, o.pre, strict=False):
            if an and bn:
                if av != bv:
                    return 1 if av > bv else -1
            elif an != bn:
                return -1 if an else 1
            elif av != bv:
                return 1 if av > bv else -1
        return (len(self.pre) > len(o.pre)) - (len(self.pre) < len(o.pre))

    def __eq__(self, other: object) -> bool:
        return type(other) is Semver and self.compare(other) == 0  # type: ignore[arg-type]

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))

    def __lt__(self, other: Semver) -> bool:
        return self.compare(other) < 0

    def __str__(self) -> str:
        s = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            s += "-" + ".".join(str(v) for _, v in self.pre)
        if self.build:
            s += "+" + ".".join(self.build)
        return s

    def __repr__(self) -> str:
        return f"Semver({str(self)!r})"


def _normalize_semver(s: str) -> str:
    """The Kubernetes CEL semver library's normalization: drop a "v" prefix, strip leading zeros,
    fill a missing minor/patch with 0."""
    s = s.removeprefix("v")
    parts = s.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or not _isdigit(p[0]):
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


# ============================================================================ lexer

_RESERVED = frozenset({"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let",
                       "loop", "package", "namespace", "return", "var", "void", "while"})
_KEYWORDS = frozenset({"true", "false", "null", "in"})

_TOKEN_RE = re.compile(r"""
  (?P<ws>[ \t\n\r\f]+|//[^\n]*)
| (?P<rstr>(?:[rR][bB]?|[bB][rR])(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"[^"\n\r]*"|'[^'\n\r]*'))
| (?P<str>[bB]?(?:\"\"\"(?:\\[\s\S]|[^\\])*?\"\"\"|'''(?:\\[\s\S]|[^\\])*?'''
             |"(?:\\.|[^"\\\n\r])*"|'(?:\\.|[^'\\\n\r])*'))
| (?P<float>[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|\.[0-9]+(?:[eE][+-]?[0-9]+)?)
| (?P<int>0x[0-9a-fA-F]+[uU]?|[0-9]+[uU]?)
| (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
| (?P<qident>`[^`\n\r]+`)
| (?P<op>==|!=|<=|>=|&&|\|\||\.\?|\[\?|[-+*/%!<>?:.,\[\]{}()])
""", re.VERBOSE)

_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\",
            "'": "'", '"': '"', "`": "`", "?": "?"}
_ESCAPE_RE = re.compile(r"\\(?:([abfnrtv\\'\"`?])|([0-3][0-7][0-7])|[xX]([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})"
                        r"|U([0-9a-fA-F]{8})|(.|\n|$))")


class _Tok:
    __slots__ = ("kind", "pos", "text", "value")

    def __init__(self, kind: str, text: str, pos: int, value: Any = None):
        self.kind, self.text, self.pos, self.value = kind, text, pos, value

    def is_op(self, text: str) -> bool:
        return (self.kind == "op" or self.kind == "kw") and self.text == text

    def show(self) -> str:
        return "<EOF>" if self.kind == "eof" else self.text


class _SyntaxError(Exception):
    def __init__(self, pos: int, message: str):
        super().__init__(message)
        self.pos, self.message = pos, message


def _unescape(body: str, is_bytes: bool, pos: int) -> str | bytes:
    out: list = []
    last = 0
    for m in _ESCAPE_RE.finditer(body):
        chunk = body[last:m.start()]
        out.append(chunk.encode() if is_bytes else chunk)
        last = m.end()
        simple, octal, hx, u4, u8, bad = m.groups()
        if simple is not None:
            ch = _ESCAPES[simple]
            out.append(ch.encode() if is_bytes else ch)
        elif octal is not None or hx is not None:
            code = int(octal, 8) if octal is not None else int(hx, 16)
            out.append(bytes([code]) if is_bytes else chr(code))
        elif (u4 is not None or u8 is not None) and not is_bytes:
            code = int(u4 or u8, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise _SyntaxError(pos, "Syntax error: invalid unicode code point")
            out.append(chr(code))
        else:
            raise _SyntaxError(pos, f"Syntax error: token recognition error at: '\\{bad or ''}'")
    tail = body[last:]
    out.append(tail.encode() if is_bytes else tail)
    return b"".join(out) if is_bytes else "".join(out)


def _string_token(text: str, raw: bool, pos: int) -> _Tok:
    i = 0
    is_bytes = False
    while text[i] not in "'\"":
        if text[i] in "bB":
            is_bytes = True
        i += 1
    q = 3 if text[i:i + 3] in ('"""', "'''") else 1
    body = text[i + q:len(text) - q]
    if raw:
        value: str | bytes = body.encode() if is_bytes else body
    else:
        value = _unescape(body, is_bytes, pos)
    return _Tok("bytes" if is_bytes else "string", text, pos, value)


def _lex(src: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    n = len(src)
    match = _TOKEN_RE.match
    while pos < n:
        m = match(src, pos)
        if m is None:
            rest = src[pos:]
            if rest[0] in "'\"":
                raise _SyntaxError(pos, f"Syntax error: token recognition error at: '{rest.splitlines()[0]}'")
            raise _SyntaxError(pos, f"Syntax error: token recognition error at: '{rest[0]}'")
        kind = m.lastgroup
        text = m.group()
        if kind == "ws":
            pass
        elif kind == "rstr" or kind == "str":
            toks.append(_string_token(text, kind == "rstr", pos))
        elif kind == "float":
            toks.append(_Tok("double", text, pos, float(text)))
        elif kind == "int":
            unsigned = text[-1] in "uU"
            digits = text[:-1] if unsigned else text
            value = int(digits, 16) if digits.startswith("0x") else int(digits)
            if unsigned:
                if value > _UINT64_MAX:
                    raise _SyntaxError(pos, "invalid uint literal")
                toks.append(_Tok("uint", text, pos, UInt(value)))
            else:
                if value > _INT64_MAX + 1:
                    raise _SyntaxError(pos, "invalid int literal")
                toks.append(_Tok("int", text, pos, value))
        elif kind == "ident":
            toks.append(_Tok("kw" if text in _KEYWORDS else "ident", text, pos))
        elif kind == "qident":
            toks.append(_Tok("qident", text, pos, text[1:-1]))
        else:
            toks.append(_Tok("op", text, pos))
        pos = m.end()
    toks.append(_Tok("eof", "", n))
    return toks


# ============================================================================ AST


class _Node:
    __slots__ = ("pos", "t")


class Lit(_Node):
    __slots__ = ("big", "value")

    def __init__(self, value: Any, pos: int, big: bool = False):
        self.value, self.pos, self.big = value, pos, big


class Ident(_Node):
    __slots__ = ("name",)

    def __init__(self, name: str, pos: int):
        self.name, self.pos = name, pos


class Select(_Node):
    __slots__ = ("field", "operand", "opt", "test")

    def __init__(self, operand: _Node, field: str, pos: int, test: bool = False, opt: bool = False):
        self.operand, self.field, self.pos, self.test, self.opt = operand, field, pos, test, opt


class Index(_Node):
    __slots__ = ("index", "operand", "opt")

    def __init__(self, operand: _Node, index: _Node, pos: int, opt: bool = False):
        self.operand, self.index, self.pos, self.opt = operand, index, pos, opt


class Call(_Node):
    __slots__ = ("args", "fn", "target")

    def __init__(self, fn: str, args: list, pos: int, target: _Node | None = None):
        self.fn, self.args, self.pos, self.target = fn, args, pos, target


class ListLit(_Node):
    __slots__ = ("elems", "opt")

    def __init__(self, elems: list, opt: frozenset, pos: int):
        self.elems, self.opt, self.pos = elems, opt, pos


class MapLit(_Node):
    __slots__ = ("entries",)

    def __init__(self, entries: list, pos: int):
        self.entries, self.pos = entries, pos  # [(key, value, optional)]


class StructLit(_Node):
    __slots__ = ("fields", "name")

    def __init__(self, name: str, fields: list, pos: int):
        self.name, self.fields, self.pos = name, fields, pos


class Loop(_Node):
    """An expanded comprehension macro. kind: all, exists, exists_one, map, filter, transformList,
    transformMap, transformMapEntry; v2 is the second variable of the two-variable forms."""

    __slots__ = ("body", "iter_cost", "kind", "pred", "rng", "v1", "v2")

    def __init__(self, kind: str, v1: str, v2: str | None, rng: _Node, pred: _Node | None,
                 body: _Node | None, pos: int):
        self.kind, self.v1, self.v2, self.rng, self.pred, self.body, self.pos = kind, v1, v2, rng, pred, body, pos
        self.iter_cost = 1


class Let(_Node):
    """cel.bind(var, init, body)."""

    __slots__ = ("body", "init", "var")

    def __init__(self, var: str, init: _Node, body: _Node, pos: int):
        self.var, self.init, self.body, self.pos = var, init, body, pos


class OptMap(_Node):
    """opt.optMap(var, body) / opt.optFlatMap(var, body)."""

    __slots__ = ("body", "flat", "target", "var")

    def __init__(self, flat: bool, target: _Node, var: str, body: _Node, pos: int):
        self.flat, self.target, self.var, self.body, self.pos = flat, target, var, body, pos


# ============================================================================ parser

_PRIMARY_EXPECTED = ("{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, "
                     "STRING, BYTES, IDENTIFIER}")
_RELATIONS = {"<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "==": "_==_", "!=": "_!=_", "in": "@in"}
_ONE_VAR_MACROS = {"all": "all", "exists": "exists", "exists_one": "exists_one", "existsOne": "exists_one"}


class _Parser:
    def __init__(self, src: str):
        self.toks = _lex(src)
        self.i = 0
        self.depth = 0
        self.last_literal: _Node | None = None  # the last literal made from a number token (for -literal)

    # --- token helpers
    def peek(self) -> _Tok:
        return self.toks[self.i]

    def next(self) -> _Tok:
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

    def expect(self, text: str) -> _Tok:
        t = self.toks[self.i]
        if not t.is_op(text):
            if t.kind == "eof":
                raise _SyntaxError(t.pos, f"Syntax error: missing '{text}' at '<EOF>'")
            raise _SyntaxError(t.pos, f"Syntax error: mismatched input '{t.show()}' expecting '{text}'")
        self.i += 1
        return t

    def ident(self) -> _Tok:
        t = self.next()
        if t.kind == "ident":
            return t
        if t.kind == "qident":
            return t
        raise _SyntaxError(t.pos, f"Syntax error: mismatched input '{t.show()}' expecting IDENTIFIER")

    # --- grammar
    def parse(self) -> _Node:
        e = self.expr()
        t = self.peek()
        if t.kind != "eof":
            raise _SyntaxError(t.pos, f"Syntax error: mismatched input '{t.show()}' expecting <EOF>")
        return e

    def expr(self) -> _Node:
        self.depth += 1
        if self.depth > MAX_RECURSION_DEPTH:
            raise _SyntaxError(self.peek().pos, f"expression recursion limit exceeded: {MAX_RECURSION_DEPTH}")
        e = self.or_()
        if self.at("?"):
            t = self.next()
            a = self.or_()
            self.expect(":")
            b = self.expr()
            e = Call("_?_:_", [e, a, b], t.pos)
        self.depth -= 1
        return e

    def or_(self) -> _Node:
        e = self.and_()
        while self.at("||"):
            t = self.next()
            e = Call("_||_", [e, self.and_()], t.pos)
        return e

    def and_(self) -> _Node:
        e = self.relation()
        while self.at("&&"):
            t = self.next()
            e = Call("_&&_", [e, self.relation()], t.pos)
        return e

    def relation(self) -> _Node:
        e = self.addition()
        while True:
            t = self.peek()
            fn = _RELATIONS.get(t.text) if t.kind in ("op", "kw") else None
            if fn is None:
                return e
            self.i += 1
            e = Call(fn, [e, self.addition()], t.pos)

    def addition(self) -> _Node:
        e = self.multiplication()
        while True:
            t = self.peek()
            if t.kind == "op" and t.text in ("+", "-"):
                self.i += 1
                e = Call("_+_" if t.text == "+" else "_-_", [e, self.multiplication()], t.pos)
            else:
                return e

    def multiplication(self) -> _Node:
        e = self.unary()
        while True:
            t = self.peek()
            if t.kind == "op" and t.text in ("*", "/", "%"):
                self.i += 1
                e = Call({"*": "_*_", "/": "_/_", "%": "_%_"}[t.text], [e, self.unary()], t.pos)
            else:
                return e

    def unary(self) -> _Node:
        t = self.peek()
        if t.is_op("!") or t.is_op("-"):
            op = t.text
            count = 0
            while self.accept(op):
                count += 1
            m = self.member()
            if count % 2 == 0:
                return m
            if op == "-" and m is self.last_literal:
                v = m.value
                if type(v) is int or type(v) is float:
                    m.value = -v
                    m.big = False
                    m.pos = t.pos
                    return m
            return Call("!_" if op == "!" else "-_", [m], t.pos)
        return self.member()

    def member(self) -> _Node:
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
            elif t.text == "{" and _qualified_name(e) is not None:
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
                e = StructLit(_qualified_name(e) or "", fields, t.pos)
            else:
                return e

    def args(self) -> list[_Node]:
        self.expect("(")
        args: list[_Node] = []
        if self.accept(")"):
            return args
        while True:
            args.append(self.expr())
            if self.accept(")"):
                return args
            t = self.peek()
            if not t.is_op(","):
                if t.kind == "eof":
                    raise _SyntaxError(t.pos, "Syntax error: missing ')' at '<EOF>'")
                raise _SyntaxError(t.pos, f"Syntax error: mismatched input '{t.show()}' expecting {{')', ','}}")
            self.i += 1

    def primary(self) -> _Node:
        t = self.next()
        k = t.kind
        if k == "ident":
            if t.text in _RESERVED:
                raise _SyntaxError(t.pos, f"reserved identifier: {t.text}")
            if self.at("("):
                return self.call(t.text, self.args(), None, t.pos)
            return Ident(t.text, t.pos)
        if k == "int" or k == "double":
            lit = self.last_literal = Lit(t.value, t.pos, big=k == "int" and t.value > _INT64_MAX)
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
            raise _SyntaxError(t.pos, f"Syntax error: mismatched input '<EOF>' expecting {_PRIMARY_EXPECTED}")
        raise _SyntaxError(t.pos, f"Syntax error: mismatched input '{t.show()}' expecting {_PRIMARY_EXPECTED}")

    def list_lit(self, start: _Tok) -> _Node:
        elems: list[_Node] = []
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

    def map_lit(self, start: _Tok) -> _Node:
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
    def call(self, fn: str, args: list[_Node], target: _Node | None, pos: int) -> _Node:
        n = len(args)
        if target is None:
            if fn == "has" and n == 1:
                a = args[0]
                if not isinstance(a, Select) or a.test or a.opt:
                    raise _SyntaxError(pos, "invalid argument to has() macro")
                return Select(a.operand, a.field, a.pos, test=True)
            return Call(fn, args, pos)
        if fn in _ONE_VAR_MACROS and n in (2, 3):
            if n == 2:
                return Loop(_ONE_VAR_MACROS[fn], self.var(args[0]), None, target, args[1], None, pos)
            v1, v2 = self.var(args[0]), self.var(args[1])
            if v1 == v2:
                raise _SyntaxError(args[1].pos, f"duplicate variable name: {v1}")
            return Loop(_ONE_VAR_MACROS[fn], v1, v2, target, args[2], None, pos)
        if fn == "map" and n in (2, 3):
            pred = args[1] if n == 3 else None
            return Loop("map", self.var(args[0]), None, target, pred, args[-1], pos)
        if fn == "filter" and n == 2:
            return Loop("filter", self.var(args[0]), None, target, args[1], None, pos)
        if fn in ("transformList", "transformMap", "transformMapEntry") and n in (3, 4):
            v1, v2 = self.var(args[0]), self.var(args[1])
            if v1 == v2:
                raise _SyntaxError(args[1].pos, f"duplicate variable name: {v1}")
            pred = args[2] if n == 4 else None
            return Loop(fn, v1, v2, target, pred, args[-1], pos)
        if fn == "bind" and n == 3 and isinstance(target, Ident) and target.name == "cel":
            if not isinstance(args[0], Ident):
                raise _SyntaxError(args[0].pos, "cel.bind() variable names must be simple identifiers")
            return Let(args[0].name, args[1], args[2], pos)
        if fn in ("optMap", "optFlatMap") and n == 2:
            if not isinstance(args[0], Ident):
                raise _SyntaxError(args[0].pos, f"{fn}() variable name must be a simple identifier")
            return OptMap(fn == "optFlatMap", target, args[0].name, args[1], pos)
        return Call(fn, args, pos, target)

    @staticmethod
    def var(arg: _Node) -> str:
        if not isinstance(arg, Ident):
            raise _SyntaxError(arg.pos, "argument must be a simple name")
        return arg.name


def _qualified_name(e: _Node) -> str | None:
    if isinstance(e, Ident):
        return e.name
    if isinstance(e, Select) and not e.test and not e.opt:
        base = _qualified_name(e.operand)
        return None if base is None else f"{base}.{e.field}"
    return None


def _line_col(src: str, pos: int) -> tuple[int, int]:
    line = src.count("\n", 0, pos) + 1
    col = pos - (src.rfind("\n", 0, pos) + 1) + 1
    return line, col


def _format_issues(src: str, issues: list[tuple[int, str]]) -> str:
    """cel-go's Issues.String(): one "ERROR: <input>:L:C: msg" block per issue with the source snippet."""
    lines = src.split("\n")
    out = []
    seen = set()
    for pos, msg in sorted(issues, key=lambda i: i[0]):
        if (pos, msg) in seen:
            continue
        seen.add((pos, msg))
        line, col = _line_col(src, min(pos, len(src)))
        text = lines[line - 1] if line - 1 < len(lines) else ""
        out.append(f"ERROR: <input>:{line}:{col}: {msg}\n | {text}\n | {'.' * (col - 1)}^")
    return "\n".join(out)


# ============================================================================ types


class _T:
    """A static CEL type. kind: bool int uint double string bytes null_type dyn error list map type
    optional_type obj (name) param (name)."""

    __slots__ = ("kind", "name", "params")

    def __init__(self, kind: str, params: tuple = (), name: str = ""):
        self.kind, self.params, self.name = kind, params, name

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, _T) and self.kind == other.kind and self.name == other.name
                and self.params == other.params)

    def __hash__(self) -> int:
        return hash((self.kind, self.params, self.name))

    def __str__(self) -> str:
        k = self.kind
        if k == "list":
            return f"list({self.params[0]})"
        if k == "map":
            return f"map({self.params[0]}, {self.params[1]})"
        if k == "type":
            return f"type({self.params[0]})" if self.params else "type"
        if k == "optional_type":
            return f"optional_type({self.params[0]})"
        if k in ("obj", "param"):
            return self.name
        if k == "error":
            return "*error*"
        return k

    __repr__ = __str__


BOOL, INT, UINT, DOUBLE = _T("bool"), _T("int"), _T("uint"), _T("double")
STRING, BYTES, NULL, DYN, ERR = _T("string"), _T("bytes"), _T("null_type"), _T("dyn"), _T("error")
QUANTITY = _T("obj", name="kubernetes.Quantity")
SEMVER = _T("obj", name="kubernetes.Semver")
DEVICE = _T("obj", name="kubernetes.DRADevice")
_PA, _PB = _T("param", name="A"), _T("param", name="B")


def _list(e: _T) -> _T:
    return _T("list", (e,))


def _map(k: _T, v: _T) -> _T:
    return _T("map", (k, v))


def _opt(e: _T) -> _T:
    return _T("optional_type", (e,))


def _type(e: _T | None = None) -> _T:
    return _T("type", (e,) if e is not None else ())


ATTRIBUTES = _map(STRING, _map(STRING, DYN))
CAPACITY = _map(STRING, _map(STRING, QUANTITY))
_DEVICE_FIELDS = {"driver": STRING, "attributes": ATTRIBUTES, "capacity": CAPACITY,
                  "allowMultipleAllocations": BOOL}

_TYPE_IDENTS = {"bool": BOOL, "int": INT, "uint": UINT, "double": DOUBLE, "string": STRING, "bytes": BYTES,
                "null_type": NULL, "list": _list(DYN), "map": _map(DYN, DYN), "type": _type()}
_TYPE_VALUES = {"bool": "bool", "int": "int", "uint": "uint", "double": "double", "string": "string",
                "bytes": "bytes", "null_type": "null_type", "list": "list", "map": "map", "type": "type"}


def _is_dyn(t: _T) -> bool:
    return t.kind == "dyn" or t.kind == "error"


def _assign(formal: _T, actual: _T, b: dict) -> bool:
    """Is `actual` assignable to `formal`, binding the type parameters of `formal` in `b`."""
    fk = formal.kind
    if fk == "param":
        cur = b.get(formal.name)
        if cur is None:
            b[formal.name] = actual
            return True
        if _assign(cur, actual, {}):
            return True
        if _assign(actual, cur, {}):
            b[formal.name] = actual
            return True
        return False
    ak = actual.kind
    if fk == "dyn" or fk == "error" or ak == "dyn" or ak == "error":
        if formal.params:
            for p in formal.params:
                _assign(p, DYN, b)
        return True
    if fk != ak:
        return False
    if fk == "obj":
        return formal.name == actual.name
    if fk == "type":  # type values compare whatever type they denote: type(1) == string
        return True
    if len(formal.params) != len(actual.params):
        return len(formal.params) == 0 or len(actual.params) == 0
    return all(_assign(fp, ap, b) for fp, ap in zip(formal.params, actual.params, strict=True))


def _subst(t: _T, b: dict) -> _T:
    if t.kind == "param":
        return b.get(t.name) or DYN
    if t.params:
        return _T(t.kind, tuple(_subst(p, b) for p in t.params), t.name)
    return t


class _Ov:
    __slots__ = ("member", "params", "result")

    def __init__(self, member: bool, params: tuple, result: _T):
        self.member, self.params, self.result = member, params, result


_FUNCS: dict[str, list[_Ov]] = {}


def _decl(name: str, how: str, *sigs: tuple) -> None:
    """how: "g" global, "m" member (receiver is the first parameter), "gm" both. sig: (*params, result)."""
    for sig in sigs:
        for member in ((False,) if how == "g" else (True,) if how == "m" else (False, True)):
            _FUNCS.setdefault(name, []).append(_Ov(member, tuple(sig[:-1]), sig[-1]))


_NUMS = (INT, UINT, DOUBLE)
_decl("_+_", "g", (INT, INT, INT), (UINT, UINT, UINT), (DOUBLE, DOUBLE, DOUBLE), (STRING, STRING, STRING),
      (BYTES, BYTES, BYTES), (_list(_PA), _list(_PA), _list(_PA)))
for _op in ("_-_", "_*_", "_/_"):
    _decl(_op, "g", (INT, INT, INT), (UINT, UINT, UINT), (DOUBLE, DOUBLE, DOUBLE))
_decl("_%_", "g", (INT, INT, INT), (UINT, UINT, UINT))
_decl("-_", "g", (INT, INT), (DOUBLE, DOUBLE))
_decl("!_", "g", (BOOL, BOOL))
_decl("_==_", "g", (_PA, _PA, BOOL))
_decl("_!=_", "g", (_PA, _PA, BOOL))
for _op in ("_<_", "_<=_", "_>_", "_>=_"):
    _decl(_op, "g", (BOOL, BOOL, BOOL), (STRING, STRING, BOOL), (BYTES, BYTES, BOOL),
          *((a, b, BOOL) for a in _NUMS for b in _NUMS))
_decl("@in", "g", (_PA, _list(_PA), BOOL), (_PA, _map(_PA, _PB), BOOL))
_decl("size", "gm", (STRING, INT), (BYTES, INT), (_list(_PA), INT), (_map(_PA, _PB), INT))
for _f in ("contains", "startsWith", "endsWith"):
    _decl(_f, "m", (STRING, STRING, BOOL))
_decl("matches", "gm", (STRING, STRING, BOOL))
_decl("int", "g", (INT, INT), (UINT, INT), (DOUBLE, INT), (STRING, INT))
_decl("uint", "g", (INT, UINT), (UINT, UINT), (DOUBLE, UINT), (STRING, UINT))
_decl("double", "g", (INT, DOUBLE), (UINT, DOUBLE), (DOUBLE, DOUBLE), (STRING, DOUBLE))
_decl("string", "g", (INT, STRING), (UINT, STRING), (DOUBLE, STRING), (BOOL, STRING), (BYTES, STRING),
      (STRING, STRING))
_decl("bytes", "g", (STRING, BYTES), (BYTES, BYTES))
_decl("bool", "g", (BOOL, BOOL), (STRING, BOOL))
_decl("dyn", "g", (_PA, DYN))
_decl("type", "g", (_PA, _type(_PA)))
# strings extension (cel-go ext.Strings, version 2)
_decl("charAt", "m", (STRING, INT, STRING))
_decl("indexOf", "m", (STRING, STRING, INT), (STRING, STRING, INT, INT), (_list(_PA), _PA, INT))
_decl("lastIndexOf", "m", (STRING, STRING, INT), (STRING, STRING, INT, INT), (_list(_PA), _PA, INT))
_decl("lowerAscii", "m", (STRING, STRING))
_decl("upperAscii", "m", (STRING, STRING))
_decl("replace", "m", (STRING, STRING, STRING, STRING), (STRING, STRING, STRING, INT, STRING))
_decl("split", "m", (STRING, STRING, _list(STRING)), (STRING, STRING, INT, _list(STRING)))
_decl("substring", "m", (STRING, INT, STRING), (STRING, INT, INT, STRING))
_decl("trim", "m", (STRING, STRING))
_decl("join", "m", (_list(STRING), STRING), (_list(STRING), STRING, STRING))
_decl("strings.quote", "g", (STRING, STRING))
# Kubernetes lists library
_decl("isSorted", "m", (_list(_PA), BOOL))
_decl("sum", "m", (_list(_PA), _PA))
_decl("min", "m", (_list(_PA), _PA))
_decl("max", "m", (_list(_PA), _PA))
# Kubernetes regex library
_decl("find", "m", (STRING, STRING, STRING))
_decl("findAll", "m", (STRING, STRING, _list(STRING)), (STRING, STRING, INT, _list(STRING)))
# cel-go ext.Sets
for _f in ("sets.contains", "sets.equivalent", "sets.intersects"):
    _decl(_f, "g", (_list(_PA), _list(_PA), BOOL))
# Kubernetes quantity library
_decl("quantity", "g", (STRING, QUANTITY))
_decl("isQuantity", "g", (STRING, BOOL))
_decl("sign", "gm", (QUANTITY, INT))
_decl("isGreaterThan", "m", (QUANTITY, QUANTITY, BOOL), (SEMVER, SEMVER, BOOL))
_decl("isLessThan", "m", (QUANTITY, QUANTITY, BOOL), (SEMVER, SEMVER, BOOL))
_decl("compareTo", "m", (QUANTITY, QUANTITY, INT), (SEMVER, SEMVER, INT))
_decl("asApproximateFloat", "m", (QUANTITY, DOUBLE))
_decl("asInteger", "m", (QUANTITY, INT))
_decl("isInteger", "m", (QUANTITY, BOOL))
_decl("add", "m", (QUANTITY, QUANTITY, QUANTITY), (QUANTITY, INT, QUANTITY))
_decl("sub", "m", (QUANTITY, QUANTITY, QUANTITY), (QUANTITY, INT, QUANTITY))
_decl("mul", "m", (QUANTITY, INT, QUANTITY))
_decl("div", "m", (QUANTITY, INT, QUANTITY), (QUANTITY, INT, INT, QUANTITY))
_decl("divInt", "m", (QUANTITY, INT, QUANTITY))
# Kubernetes semver library
_decl("semver", "g", (STRING, SEMVER), (STRING, BOOL, SEMVER))
_decl("isSemver", "g", (STRING, BOOL), (STRING, BOOL, BOOL))
for _f in ("major", "minor", "patch"):
    _decl(_f, "m", (SEMVER, INT))
# optional types
_decl("optional.of", "g", (_PA, _opt(_PA)))
_decl("optional.ofNonZeroValue", "g", (_PA, _opt(_PA)))
_decl("optional.none", "g", (_opt(DYN),))
_decl("hasValue", "m", (_opt(_PA), BOOL))
_decl("value", "m", (_opt(_PA), _PA))
_decl("orValue", "m", (_opt(_PA), _PA, _PA))
_decl("or", "m", (_opt(_PA), _opt(_PA), _opt(_PA)))
# DRAListTypeAttributes: includes() works for scalar and list-type attributes
_decl("includes", "m", (_list(_PA), _PA, BOOL), (_PA, _PA, BOOL))

_OPERATOR_NAMES = {"_+_", "_-_", "_*_", "_/_", "_%_", "-_", "!_", "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_",
                   "@in", "_&&_", "_||_", "_?_:_"}
_FEATURE_FUNCS = {"includes": "list_type_attributes"}


class _Options:
    __slots__ = ("consumable_capacity", "derived_attribute", "list_type_attributes")

    def __init__(self, list_type_attributes: bool, consumable_capacity: bool, derived_attribute: bool = False):
        self.list_type_attributes = list_type_attributes
        self.consumable_capacity = consumable_capacity
        self.derived_attribute = derived_attribute


# ============================================================================ checker


class _Checker:
    def __init__(self, opts: _Options):
        self.opts = opts
        self.issues: list[tuple[int, str]] = []
        self.scopes: list[dict[str, _T]] = []

    def err(self, pos: int, msg: str) -> _T:
        self.issues.append((pos, msg))
        return ERR

    def check(self, n: _Node) -> _T:
        t = getattr(self, "c_" + type(n).__name__)(n)
        n.t = t
        return t

    def lookup(self, name: str) -> _T | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    # --- nodes
    def c_Lit(self, n: Lit) -> _T:
        v = n.value
        if n.big:
            return self.err(n.pos, "invalid int literal")
        if v is None:
            return NULL
        t = type(v)
        return {bool: BOOL, int: INT, UInt: UINT, float: DOUBLE, str: STRING, bytes: BYTES}[t]

    def c_Ident(self, n: Ident) -> _T:
        t = self.lookup(n.name)
        if t is not None:
            return t
        if n.name == "device":
            return DEVICE
        if n.name in _TYPE_IDENTS:
            return _type(_TYPE_IDENTS[n.name])
        return self.err(n.pos, f"undeclared reference to '{n.name}' (in container '')")

    def _field(self, ot: _T, field: str, pos: int) -> _T:
        k = ot.kind
        if k == "dyn" or k == "error":
            return DYN if k == "dyn" else ERR
        if k == "map":
            if not _assign(ot.params[0], STRING, {}):
                return self.err(pos, f"type '{ot}' does not support field selection")
            return ot.params[1]
        if ot == DEVICE:
            ft = _DEVICE_FIELDS.get(field)
            if ft is None or (field == "allowMultipleAllocations" and not self.opts.consumable_capacity):
                return self.err(pos, f"undefined field '{field}'")
            return ft
        return self.err(pos, f"type '{ot}' does not support field selection")

    def c_Select(self, n: Select) -> _T:
        ot = self.check(n.operand)
        if n.test:
            self._field(ot.params[0] if ot.kind == "optional_type" else ot, n.field, n.pos)
            return BOOL
        if ot.kind == "optional_type":
            inner = ot.params[0]
            ft = self._field(inner, n.field, n.pos)
            return ft if ft.kind == "error" else _opt(ft)
        ft = self._field(ot, n.field, n.pos)
        if n.opt and ft.kind != "error":
            return _opt(ft)
        return ft

    def c_Index(self, n: Index) -> _T:
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
        elif k == "map" and _assign(ot.params[0], it, {}):
            rt = ot.params[1]
        else:
            return self.err(n.pos, f"found no matching overload for '_[_]' applied to '({ot}, {it})'")
        return _opt(rt) if wrap else rt

    def c_ListLit(self, n: ListLit) -> _T:
        first: _T | None = None
        mismatch = False
        for i, e in enumerate(n.elems):
            et = self.check(e)
            if i in n.opt:
                if et.kind == "optional_type":
                    et = et.params[0]
                elif not _is_dyn(et):
                    self.err(e.pos, f"found no matching overload for 'optional element' applied to '({et})'")
            if first is None:
                first = et
            elif not mismatch and et != first and not _is_dyn(first) and et.kind != "error":
                self.err(e.pos, f"expected type '{first}' but found '{et}'")
                mismatch = True
        return _list(first or DYN)

    def c_MapLit(self, n: MapLit) -> _T:
        kt: _T | None = None
        vt: _T | None = None
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
            if a != kt and not _is_dyn(kt) and a.kind != "error":
                self.err(k.pos, f"expected type '{kt}' but found '{a}'")
            if b != vt and vt is not None and not _is_dyn(vt) and b.kind != "error":
                self.err(v.pos, f"expected type '{vt}' but found '{b}'")
        return _map(kt or DYN, vt or DYN)

    def c_StructLit(self, n: StructLit) -> _T:
        for _, v, _ in n.fields:
            self.check(v)
        return self.err(n.pos, f"undeclared reference to '{n.name}' (in container '')")

    def c_Let(self, n: Let) -> _T:
        it = self.check(n.init)
        self.scopes.append({n.var: it})
        try:
            return self.check(n.body)
        finally:
            self.scopes.pop()

    def c_OptMap(self, n: OptMap) -> _T:
        tt = self.check(n.target)
        if tt.kind == "optional_type":
            vt = tt.params[0]
        elif _is_dyn(tt):
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
            if bt.kind != "optional_type" and not _is_dyn(bt):
                return self.err(n.pos, f"found no matching overload for 'optFlatMap' applied to '{tt}.({bt})'")
            return bt if bt.kind == "optional_type" else _opt(DYN)
        return _opt(bt)

    def c_Loop(self, n: Loop) -> _T:
        rt = self.check(n.rng)
        two = n.v2 is not None
        if rt.kind == "list":
            v1, v2 = (INT, rt.params[0]) if two else (rt.params[0], None)
        elif rt.kind == "map":
            v1, v2 = (rt.params[0], rt.params[1]) if two else (rt.params[0], None)
        elif _is_dyn(rt):
            v1, v2 = DYN, DYN
        else:
            self.err(n.rng.pos, f"expression of type '{rt}' cannot be range of a comprehension "
                                "(must be list, map, or dynamic)")
            v1, v2 = ERR, ERR
        scope = {n.v1: v1}
        if two:
            scope[n.v2] = v2  # type: ignore[index]
        self.scopes.append(scope)
        try:
            pt = self.check(n.pred) if n.pred is not None else None
            bt = self.check(n.body) if n.body is not None else None
        finally:
            self.scopes.pop()
        kind = n.kind
        if pt is not None and pt.kind not in ("bool", "dyn", "error"):
            op = {"all": "_&&_", "exists": "_||_", "exists_one": "_?_:_"}.get(kind, "_?_:_")
            if op == "_?_:_":
                return self.err(n.pred.pos, f"found no matching overload for '_?_:_' applied to "  # type: ignore
                                            f"'({pt}, {bt or 'int'}, {bt or 'int'})'")
            return self.err(n.pred.pos, f"found no matching overload for '{op}' applied to '(bool, {pt})'")
        if kind in ("all", "exists", "exists_one"):
            return BOOL
        if kind == "map" or kind == "transformList":
            return _list(bt or DYN)
        if kind == "filter":
            return _list(v1)
        if kind == "transformMap":
            return _map(INT if rt.kind == "list" else v1, bt or DYN)
        # transformMapEntry
        if bt is not None and bt.kind == "map":
            return bt
        if bt is not None and not _is_dyn(bt):
            return self.err(n.body.pos, f"found no matching overload for 'transformMapEntry' applied to "  # type: ignore
                                        f"'({bt})'")
        return _map(DYN, DYN)

    def c_Call(self, n: Call) -> _T:
        fn = n.fn
        if n.target is not None and _namespace(n, self):
            n.fn = fn = f"{_qualified_name(n.target)}.{fn}"
            n.target = None
        if fn == "_&&_" or fn == "_||_":
            links, operands = _logic_chain(n)
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
            if _is_dyn(a) or _is_dyn(b):
                return DYN
            bind: dict = {}
            if _assign(a, b, bind):
                return a
            if _assign(b, a, {}):
                return b
            return self.err(n.pos, f"found no matching overload for '_?_:_' applied to '({c}, {a}, {b})'")
        target_t = self.check(n.target) if n.target is not None else None
        arg_ts = [self.check(a) for a in n.args]
        member = n.target is not None
        ovs = _FUNCS.get(fn)
        feature = _FEATURE_FUNCS.get(fn)
        if ovs is not None and feature is not None and not getattr(self.opts, feature):
            ovs = None
        if ovs is not None:
            ovs = [o for o in ovs if o.member == member]
        if not ovs or fn in _OPERATOR_NAMES and member:
            return self.err(n.pos, f"undeclared reference to '{fn}' (in container '')")
        all_ts = ([target_t] if member else []) + arg_ts  # type: ignore[list-item]
        if any(t.kind == "error" for t in all_ts):
            return ERR
        results = []
        for o in ovs:
            if len(o.params) != len(all_ts):
                continue
            b: dict = {}
            if all(_assign(p, t, b) for p, t in zip(o.params, all_ts, strict=True)):
                results.append(_subst(o.result, b))
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
                    _regex(pat.value)
                except CELRuntimeError:
                    self.err(pat.pos, f"invalid {fn} argument")
        first = results[0]
        if all(r == first for r in results):
            return first
        return DYN


def _logic_chain(n: Call) -> tuple[list[Call], list[_Node]]:
    """A left-nested chain a && b && c ... (same operator): its links bottom-up and its operands, found
    without recursion (selectors with hundreds of clauses must not hit the recursion limit)."""
    links = []
    cur: _Node = n
    while isinstance(cur, Call) and cur.fn == n.fn and cur.target is None and len(cur.args) == 2:
        links.append(cur)
        cur = cur.args[0]
    links.reverse()
    return links, [cur] + [link.args[1] for link in links]


def _namespace(n: Call, checker: _Checker) -> bool:
    """A member call whose target is a dotted name that is not a variable, e.g. sets.contains(...)."""
    qual = _qualified_name(n.target) if n.target is not None else None
    if qual is None:
        return False
    root = qual.split(".")[0]
    return checker.lookup(root) is None and root != "device" and f"{qual}.{n.fn}" in _FUNCS


# ============================================================================ runtime values & operations

# Activation layout: [cost, next checkpoint, cost limit, deadline, device, variables...]
_A_COST, _A_CHECK, _A_LIMIT, _A_DEADLINE, _A_DEVICE = 0, 1, 2, 3, 4
_FIRST_VAR_SLOT = 5
_CHECK_EVERY = 5000  # cost units between two wall-clock checks


class _DomainMap(dict):
    """device.attributes / device.capacity: looking up an unknown domain yields an empty map (upstream),
    while `in`, size and iteration only see the real domains."""

    __slots__ = ()

    def __missing__(self, key: Any) -> dict:
        if type(key) is str:
            return _EMPTY_MAP
        raise KeyError(key)


_EMPTY_MAP: dict = {}  # shared, never mutated


class DeviceEnv(dict):
    """The evaluation input for one device: {"driver", "attributes", "capacity", "allowMultipleAllocations"}
    with attributes/capacity grouped by domain (see device_env)."""

    __slots__ = ()


_TNAMES: dict[type, str] = {
    bool: "bool", int: "int", UInt: "uint", float: "double", str: "string", bytes: "bytes",
    type(None): "null_type", list: "list", dict: "map", _DomainMap: "map", DeviceEnv: "kubernetes.DRADevice",
    Quantity: "kubernetes.Quantity", Semver: "kubernetes.Semver", CelType: "type", CelOptional: "optional_type"}
_GO_TNAMES: dict[type, str] = {
    bool: "types.Bool", int: "types.Int", UInt: "types.Uint", float: "types.Double", str: "types.String",
    bytes: "types.Bytes", type(None): "types.Null", Quantity: "cel.Quantity", Semver: "cel.Semver",
    CelType: "types.Type", CelOptional: "*types.Optional"}
_NUM_TYPES = frozenset({int, UInt, float})
_ORDERED = frozenset({int, UInt, float, str, bytes, bool})


def _tname(v: Any) -> str:
    return _TNAMES.get(type(v)) or ("map" if isinstance(v, dict) else type(v).__name__)


def _no_overload(fn: str, *args: Any) -> CELRuntimeError:
    return CELRuntimeError(f"no such overload: {fn}({', '.join(_tname(a) for a in args)})")


def _no_such_key(key: Any) -> CELRuntimeError:
    return CELRuntimeError(f"no such key: {key}")


def _checkpoint(s: list) -> None:
    cost = s[_A_COST]
    if cost > s[_A_LIMIT]:
        raise CELCostExceeded(_ACTUAL_COST_MESSAGE, cost)
    deadline = s[_A_DEADLINE]
    if deadline is not None and time.perf_counter() > deadline:
        raise CELCostExceeded("operation interrupted: evaluation time budget exceeded", cost)
    s[_A_CHECK] = min(cost + _CHECK_EVERY, s[_A_LIMIT])


def _charge(s: list, cost: int) -> None:
    s[_A_COST] += cost
    if s[_A_COST] > s[_A_CHECK]:
        _checkpoint(s)


def _eq(a: Any, b: Any) -> bool:
    """CEL runtime equality (heterogeneous: numbers compare by value, other mixed types are unequal)."""
    ta = type(a)
    tb = type(b)
    if ta is tb:
        if ta is list:
            return len(a) == len(b) and all(_eq(x, y) for x, y in zip(a, b, strict=True))
        if ta is dict or ta is _DomainMap:
            return _map_eq(a, b)
        return a == b
    if ta in _NUM_TYPES and tb in _NUM_TYPES:
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return _map_eq(a, b)
    return False


def _map_eq(a: dict, b: dict) -> bool:
    if len(a) != len(b):
        return False
    for k, v in a.items():
        if not dict.__contains__(b, k) or not _eq(v, dict.__getitem__(b, k)):
            return False
    return True


def _lt(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if (ta is tb and ta in _ORDERED) or (ta in _NUM_TYPES and tb in _NUM_TYPES):
        return a < b
    raise _no_overload("_<_", a, b)


def _le(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if (ta is tb and ta in _ORDERED) or (ta in _NUM_TYPES and tb in _NUM_TYPES):
        return a <= b
    raise _no_overload("_<=_", a, b)


def _gt(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if (ta is tb and ta in _ORDERED) or (ta in _NUM_TYPES and tb in _NUM_TYPES):
        return a > b
    raise _no_overload("_>_", a, b)


def _ge(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if (ta is tb and ta in _ORDERED) or (ta in _NUM_TYPES and tb in _NUM_TYPES):
        return a >= b
    raise _no_overload("_>=_", a, b)


def _int64(r: int) -> int:
    if _INT64_MIN <= r <= _INT64_MAX:
        return r
    raise CELRuntimeError("integer overflow")


def _uint64(r: int) -> UInt:
    if 0 <= r <= _UINT64_MAX:
        return UInt(r)
    raise CELRuntimeError("unsigned integer overflow")


def _add(s: list, a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is type(b):
        if ta is int:
            return _int64(a + b)
        if ta is float:
            return a + b
        if ta is str or ta is list or ta is bytes:
            _charge(s, (len(a) + len(b) + 9) // 10)
            return a + b
        if ta is UInt:
            return _uint64(a + b)
    raise _no_overload("_+_", a, b)


def _sub(s: list, a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is type(b):
        if ta is int:
            return _int64(a - b)
        if ta is float:
            return a - b
        if ta is UInt:
            return _uint64(a - b)
    raise _no_overload("_-_", a, b)


def _mul(s: list, a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is type(b):
        if ta is int:
            return _int64(a * b)
        if ta is float:
            return a * b
        if ta is UInt:
            return _uint64(a * b)
    raise _no_overload("_*_", a, b)


def _div(s: list, a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is type(b):
        if ta is int:
            if b == 0:
                raise CELRuntimeError("division by zero")
            q = abs(a) // abs(b)
            return _int64(q if (a < 0) == (b < 0) else -q)
        if ta is float:
            if b == 0.0:
                if a == 0.0 or math.isnan(a):
                    return math.nan
                return math.copysign(math.inf, a) * math.copysign(1.0, b)
            return a / b
        if ta is UInt:
            if b == 0:
                raise CELRuntimeError("division by zero")
            return UInt(a // b)
    raise _no_overload("_/_", a, b)


def _mod(s: list, a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is type(b):
        if ta is int:
            if b == 0:
                raise CELRuntimeError("modulus by zero")
            if a == _INT64_MIN and b == -1:
                raise CELRuntimeError("integer overflow")
            r = abs(a) % abs(b)
            return r if a >= 0 else -r
        if ta is UInt:
            if b == 0:
                raise CELRuntimeError("modulus by zero")
            return UInt(a % b)
    raise _no_overload("_%_", a, b)


def _neg(s: list, a: Any) -> Any:
    ta = type(a)
    if ta is int:
        return _int64(-a)
    if ta is float:
        return -a
    raise _no_overload("-_", a)


def _in(s: list, a: Any, c: Any) -> bool:
    if type(c) is list:
        if type(a) is str:
            return a in c
        return any(_eq(a, x) for x in c)
    if isinstance(c, dict):
        try:
            return dict.__contains__(c, a)
        except TypeError:
            raise _no_overload("@in", a, c) from None
    raise _no_overload("@in", a, c)


def _map_key(k: Any) -> Any:
    tk = type(k)
    if tk is str or tk is int or tk is UInt or tk is bool:
        return k
    if tk is float and k.is_integer():
        return int(k)
    raise CELRuntimeError(f"unsupported key type: {_tname(k)}")


def _index(o: Any, i: Any) -> Any:
    if isinstance(o, dict):
        key = _map_key(i)
        try:
            return o[key]
        except KeyError:
            raise _no_such_key(i) from None
    if type(o) is list:
        ti = type(i)
        if ti is int or ti is UInt or ti is float and i.is_integer():
            idx = int(i)
        else:
            raise CELRuntimeError(f"unsupported index type '{_tname(i)}' in list")
        if 0 <= idx < len(o):
            return o[idx]
        raise CELRuntimeError(f"index '{idx}' out of range in list size '{len(o)}'")
    raise _no_overload("_[_]", o, i)


def _select(o: Any, field: str) -> Any:
    if isinstance(o, dict):
        try:
            return o[field]
        except KeyError:
            raise _no_such_key(field) from None
    raise CELRuntimeError(f"type '{_tname(o)}' does not support field selection")


def _has(o: Any, field: str) -> bool:
    if isinstance(o, dict):
        return dict.__contains__(o, field)
    raise CELRuntimeError(f"invalid type for field selection: '{_tname(o)}'")


def _opt_select(o: Any, field: str) -> CelOptional:
    if type(o) is CelOptional:
        if not o.present:
            return o
        o = o.value
    if isinstance(o, dict):
        if dict.__contains__(o, field):
            return CelOptional(True, dict.__getitem__(o, field))
        return _NONE
    raise CELRuntimeError(f"type '{_tname(o)}' does not support field selection")


def _opt_index(o: Any, i: Any) -> CelOptional:
    if type(o) is CelOptional:
        if not o.present:
            return o
        o = o.value
    if isinstance(o, dict):
        key = _map_key(i)
        if dict.__contains__(o, key):
            return CelOptional(True, dict.__getitem__(o, key))
        return _NONE
    if type(o) is list:
        if type(i) in (int, UInt) and 0 <= i < len(o):
            return CelOptional(True, o[i])
        if type(i) in (int, UInt):
            return _NONE
        raise CELRuntimeError(f"unsupported index type '{_tname(i)}' in list")
    raise _no_overload("_[?_]", o, i)


def _iterable(r: Any) -> Iterable:
    if type(r) is list or isinstance(r, dict):
        return r
    raise CELRuntimeError(f"got '{_GO_TNAMES.get(type(r), type(r).__name__)}', expected iterable type")


def _iterable2(r: Any) -> Iterable:
    if type(r) is list:
        return enumerate(r)
    if isinstance(r, dict):
        return r.items()
    raise CELRuntimeError(f"got '{_GO_TNAMES.get(type(r), type(r).__name__)}', expected iterable type")


# ---------------------------------------------------------------------------- library implementations
# Every implementation takes the activation first (for cost accounting) and the receiver next.


def _str_args(fn: str, *args: Any) -> None:
    for a in args:
        if type(a) is not str:
            raise _no_overload(fn, *args)


def _f_size(s: list, x: Any) -> int:
    t = type(x)
    if t is str or t is bytes or t is list or isinstance(x, dict):
        return len(x)
    raise _no_overload("size", x)


def _f_contains(s: list, a: Any, b: Any) -> bool:
    _str_args("contains", a, b)
    return b in a


def _f_starts_with(s: list, a: Any, b: Any) -> bool:
    _str_args("startsWith", a, b)
    return a.startswith(b)


def _f_ends_with(s: list, a: Any, b: Any) -> bool:
    _str_args("endsWith", a, b)
    return a.endswith(b)


class _Pattern:
    """A compiled regular expression with RE2 semantics (google-re2 when installed, else Python's re)
    and small per-pattern memos: selectors test the same few attribute values over and over."""

    __slots__ = ("compiled", "find_memo", "matches_memo", "rx")

    def __init__(self, pattern: str):
        if _re2 is not None:
            self.compiled = _re2.compile(pattern, _RE2_OPTIONS)
            self.rx = getattr(self.compiled, "_regexp", None)  # the C++ object: 6x less call overhead
        else:
            self.compiled = re.compile(pattern)
            self.rx = None
        self.matches_memo: dict[str, bool] = {}
        self.find_memo: dict[str, str] = {}

    def matches(self, text: str) -> bool:
        r = self.matches_memo.get(text)
        if r is None:
            if self.rx is not None:
                data = text.encode("utf-8", errors="surrogatepass")
                r = self.rx.Match(_RE2_UNANCHORED, data, 0, len(data))[0][0] != -1
            else:
                r = self.compiled.search(text) is not None
            if len(self.matches_memo) >= 1024:
                self.matches_memo.clear()
            self.matches_memo[text] = r
        return r

    def find(self, text: str) -> str:
        r = self.find_memo.get(text)
        if r is None:
            m = self.compiled.search(text)
            r = m.group(0) if m is not None else ""
            if len(self.find_memo) >= 1024:
                self.find_memo.clear()
            self.find_memo[text] = r
        return r

    def find_all(self, text: str, limit: int) -> list[str]:
        out = []
        for m in self.compiled.finditer(text):
            out.append(m.group(0))
            if 0 < limit <= len(out):
                break
        return out


_REGEX_CACHE: dict[str, _Pattern] = {}


def _regex(pattern: str) -> _Pattern:
    r = _REGEX_CACHE.get(pattern)
    if r is None:
        try:
            r = _Pattern(pattern)
        except _REGEX_ERRORS as e:
            msg = e.args[0] if e.args else str(e)
            if isinstance(msg, bytes):
                msg = msg.decode(errors="replace")
            raise CELRuntimeError(f"error parsing regexp: {msg}: `{pattern}`") from None
        if len(_REGEX_CACHE) > 2048:
            _REGEX_CACHE.clear()
        _REGEX_CACHE[pattern] = r
    return r


def _f_matches(s: list, a: Any, p: Any) -> bool:
    _str_args("matches", a, p)
    _charge(s, (len(a) + 9) // 10)
    return _regex(p).matches(a)


def _f_find(s: list, a: Any, p: Any) -> str:
    _str_args("find", a, p)
    _charge(s, (len(a) + 9) // 10)
    return _regex(p).find(a)


def _f_find_all(s: list, a: Any, p: Any, n: Any = -1) -> list:
    _str_args("findAll", a, p)
    if type(n) is not int:
        raise _no_overload("findAll", a, p, n)
    _charge(s, (len(a) + 9) // 10)
    if n == 0:
        return []
    return _regex(p).find_all(a, n)


_INT_RE = re.compile(r"[+-]?[0-9]+\Z")
_UINT_RE = re.compile(r"\+?[0-9]+\Z")
_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)\Z",
                       re.IGNORECASE)


def _f_int(s: list, x: Any) -> int:
    t = type(x)
    if t is int:
        return x
    if t is UInt:
        if x > _INT64_MAX:
            raise CELRuntimeError("range error")
        return int(x)
    if t is float:
        if not (-9.223372036854776e18 < x < 9.223372036854776e18):
            raise CELRuntimeError("range error")
        return int(x)
    if t is str:
        if not _INT_RE.match(x):
            raise CELRuntimeError(f"strconv.ParseInt: parsing {_goq(x)}: invalid syntax")
        v = int(x)
        if not _fits64(v):
            raise CELRuntimeError(f"strconv.ParseInt: parsing {_goq(x)}: value out of range")
        return v
    raise _no_overload("int", x)


def _f_uint(s: list, x: Any) -> UInt:
    t = type(x)
    if t is UInt:
        return x
    if t is int:
        if x < 0:
            raise CELRuntimeError("range error")
        return UInt(x)
    if t is float:
        if not (-1 < x < 1.8446744073709552e19):
            raise CELRuntimeError("range error")
        return UInt(int(x))
    if t is str:
        if not _UINT_RE.match(x):
            raise CELRuntimeError(f"strconv.ParseUint: parsing {_goq(x)}: invalid syntax")
        v = int(x)
        if v > _UINT64_MAX:
            raise CELRuntimeError(f"strconv.ParseUint: parsing {_goq(x)}: value out of range")
        return UInt(v)
    raise _no_overload("uint", x)


def _f_double(s: list, x: Any) -> float:
    t = type(x)
    if t is float:
        return x
    if t is int or t is UInt:
        return float(x)
    if t is str:
        if not _FLOAT_RE.match(x):
            raise CELRuntimeError(f"strconv.ParseFloat: parsing {_goq(x)}: invalid syntax")
        return float(x)
    raise _no_overload("double", x)


def _fmt_double(f: float) -> str:
    """strconv.FormatFloat(f, 'g', -1, 64), as cel-go's string(double)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign, digit_tuple, exp = decimal.Decimal(repr(f)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    x = exp + len(digit_tuple) - 1  # decimal exponent of the first digit
    if x < -4 or x >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        out = f"{mant}e{'-' if x < 0 else '+'}{abs(x):02d}"
    elif x >= 0:
        whole = digits[:x + 1].ljust(x + 1, "0")
        frac = digits[x + 1:]
        out = whole + ("." + frac if frac else "")
    else:
        out = "0." + "0" * (-x - 1) + digits
    return ("-" if sign else "") + out


def _f_string(s: list, x: Any) -> str:
    t = type(x)
    if t is str:
        return x
    if t is bool:
        return "true" if x else "false"
    if t is int or t is UInt:
        return str(int(x))
    if t is float:
        return _fmt_double(x)
    if t is bytes:
        try:
            return x.decode("utf-8")
        except UnicodeDecodeError:
            raise CELRuntimeError("invalid UTF-8 in bytes, cannot convert to string") from None
    raise _no_overload("string", x)


def _f_bytes(s: list, x: Any) -> bytes:
    if type(x) is bytes:
        return x
    if type(x) is str:
        return x.encode("utf-8", errors="surrogatepass")
    raise _no_overload("bytes", x)


_GO_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
             "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


def _f_bool(s: list, x: Any) -> bool:
    if type(x) is bool:
        return x
    if type(x) is str:
        v = _GO_BOOLS.get(x)
        if v is None:
            raise CELRuntimeError(f"strconv.ParseBool: parsing {_goq(x)}: invalid syntax")
        return v
    raise _no_overload("bool", x)


def _f_dyn(s: list, x: Any) -> Any:
    return x


def _f_type(s: list, x: Any) -> CelType:
    return CelType(_tname(x) if type(x) is not DeviceEnv else "kubernetes.DRADevice")


def _f_char_at(s: list, a: Any, i: Any) -> str:
    if type(a) is not str or type(i) is not int:
        raise _no_overload("charAt", a, i)
    if i < 0 or i > len(a):
        raise CELRuntimeError(f"index out of range: {i}")
    return a[i] if i < len(a) else ""


def _f_index_of(s: list, a: Any, x: Any, off: Any = None) -> int:
    if type(a) is list and off is None:
        for i, v in enumerate(a):
            if _eq(v, x):
                return i
        return -1
    if type(a) is not str or type(x) is not str or (off is not None and type(off) is not int):
        raise _no_overload("indexOf", a, x) if off is None else _no_overload("indexOf", a, x, off)
    start = 0 if off is None else off
    if x == "":
        return start
    if start < 0 or start >= len(a):
        raise CELRuntimeError(f"index out of range: {start}")
    return a.find(x, start)


def _f_last_index_of(s: list, a: Any, x: Any, off: Any = None) -> int:
    if type(a) is list and off is None:
        for i in range(len(a) - 1, -1, -1):
            if _eq(a[i], x):
                return i
        return -1
    if type(a) is not str or type(x) is not str or (off is not None and type(off) is not int):
        raise _no_overload("lastIndexOf", a, x) if off is None else _no_overload("lastIndexOf", a, x, off)
    if x == "":
        return len(a) if off is None else off
    start = len(a) - 1 if off is None else off
    if start < 0 or start >= len(a):
        raise CELRuntimeError(f"index out of range: {start}")
    return a.rfind(x, 0, start + len(x))


_LOWER = {c: c + 32 for c in range(65, 91)}
_UPPER = {c + 32: c for c in range(65, 91)}


def _f_lower_ascii(s: list, a: Any) -> str:
    _str_args("lowerAscii", a)
    return a.translate(_LOWER)


def _f_upper_ascii(s: list, a: Any) -> str:
    _str_args("upperAscii", a)
    return a.translate(_UPPER)


def _f_replace(s: list, a: Any, old: Any, new: Any, n: Any = -1) -> str:
    if type(a) is not str or type(old) is not str or type(new) is not str or type(n) is not int:
        raise _no_overload("replace", a, old, new, n)
    if n == 0:
        return a
    count = (len(a) + 1) if old == "" else a.count(old)
    if n > 0:
        count = min(count, n)
    _charge(s, (len(a) + count * len(new) + 9) // 10)  # before building a possibly huge string
    return a.replace(old, new, n if n > 0 else -1)


def _f_split(s: list, a: Any, sep: Any, n: Any = -1) -> list:
    if type(a) is not str or type(sep) is not str or type(n) is not int:
        raise _no_overload("split", a, sep, n)
    _charge(s, (len(a) + 9) // 10)
    if n == 0:
        return []
    if sep == "":
        chars = list(a)
        if 0 < n < len(chars):
            return chars[:n - 1] + ["".join(chars[n - 1:])]
        return chars
    return a.split(sep, n - 1 if n > 0 else -1)


def _f_substring(s: list, a: Any, start: Any, end: Any = None) -> str:
    if type(a) is not str or type(start) is not int or (end is not None and type(end) is not int):
        raise _no_overload("substring", a, start, end)
    n = len(a)
    if end is None:
        if start < 0 or start > n:
            raise CELRuntimeError(f"index out of range: {start}")
        return a[start:]
    if start > end:
        raise CELRuntimeError(f"invalid substring range. start: {start}, end: {end}")
    if start < 0 or start > n:
        raise CELRuntimeError(f"index out of range: {start}")
    if end < 0 or end > n:
        raise CELRuntimeError(f"index out of range: {end}")
    return a[start:end]


_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"


def _f_trim(s: list, a: Any) -> str:
    _str_args("trim", a)
    return a.strip(_GO_SPACE)


def _f_join(s: list, lst: Any, sep: Any = "") -> str:
    if type(lst) is not list or type(sep) is not str or any(type(x) is not str for x in lst):
        raise _no_overload("join", lst, sep)
    _charge(s, (sum(map(len, lst)) + len(sep) * len(lst) + 9) // 10)
    return sep.join(lst)


_QUOTE_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
                  "\\": "\\\\", '"': '\\"'}


def _f_quote(s: list, a: Any) -> str:
    _str_args("strings.quote", a)
    _charge(s, (len(a) + 9) // 10)
    return '"' + "".join(_QUOTE_ESCAPES.get(c, c) for c in a) + '"'


def _sortable(fn: str, lst: Any) -> list:
    if type(lst) is not list:
        raise _no_overload(fn, lst)
    if lst:
        t0 = type(lst[0])
        if any(type(x) is not t0 for x in lst) and not all(type(x) in _NUM_TYPES for x in lst):
            raise _no_overload(fn, lst)
        if t0 not in _ORDERED and t0 is not Quantity and t0 is not Semver:
            raise _no_overload(fn, lst)
    return lst


def _f_is_sorted(s: list, lst: Any) -> bool:
    _sortable("isSorted", lst)
    return all(not (lst[i + 1] < lst[i]) for i in range(len(lst) - 1))


def _f_sum(s: list, lst: Any) -> Any:
    if type(lst) is not list:
        raise _no_overload("sum", lst)
    if not lst:
        return 0
    t0 = type(lst[0])
    if t0 not in _NUM_TYPES or any(type(x) is not t0 for x in lst):
        raise _no_overload("sum", lst)
    total = sum(lst)
    return _int64(total) if t0 is int else _uint64(total) if t0 is UInt else float(total)


def _f_min(s: list, lst: Any) -> Any:
    _sortable("min", lst)
    if not lst:
        raise CELRuntimeError("min called on empty list")
    return min(lst)


def _f_max(s: list, lst: Any) -> Any:
    _sortable("max", lst)
    if not lst:
        raise CELRuntimeError("max called on empty list")
    return max(lst)


def _lists(fn: str, a: Any, b: Any) -> None:
    if type(a) is not list or type(b) is not list:
        raise _no_overload(fn, a, b)


def _f_sets_contains(s: list, a: Any, b: Any) -> bool:
    _lists("sets.contains", a, b)
    _charge(s, len(a) * len(b) // 10)
    return all(any(_eq(x, y) for y in a) for x in b)


def _f_sets_equivalent(s: list, a: Any, b: Any) -> bool:
    return _f_sets_contains(s, a, b) and _f_sets_contains(s, b, a)


def _f_sets_intersects(s: list, a: Any, b: Any) -> bool:
    _lists("sets.intersects", a, b)
    _charge(s, len(a) * len(b) // 10)
    return any(_eq(x, y) for x in a for y in b)


def _f_quantity(s: list, x: Any) -> Quantity:
    if type(x) is not str:
        raise _no_overload("quantity", x)
    try:
        return Quantity.parse(x)
    except ValueError as e:
        raise CELRuntimeError(str(e)) from None


def _f_is_quantity(s: list, x: Any) -> bool:
    if type(x) is not str:
        raise _no_overload("isQuantity", x)
    try:
        Quantity.parse(x)
    except ValueError:
        return False
    return True


def _qargs(fn: str, *args: Any) -> None:
    for a in args:
        if type(a) is not Quantity:
            raise _no_overload(fn, *args)


def _f_sign(s: list, q: Any) -> int:
    _qargs("sign", q)
    return q.sign()


def _f_as_approximate_float(s: list, q: Any) -> float:
    _qargs("asApproximateFloat", q)
    return q.as_approximate_float()


def _f_as_integer(s: list, q: Any) -> int:
    _qargs("asInteger", q)
    v = q.as_int64()
    if v is None:
        raise CELRuntimeError("cannot convert value to integer")
    return v


def _f_is_integer(s: list, q: Any) -> bool:
    _qargs("isInteger", q)
    return q.as_int64() is not None


def _qty_or_int(fn: str, q: Any, x: Any) -> Quantity:
    if type(q) is not Quantity:
        raise _no_overload(fn, q, x)
    if type(x) is Quantity:
        return x
    if type(x) is int:
        return Quantity.from_int(x, DECIMAL_EXPONENT)
    raise _no_overload(fn, q, x)


def _f_add(s: list, q: Any, x: Any) -> Quantity:
    try:
        return q.add(_qty_or_int("add", q, x))
    except ValueError as e:
        raise CELRuntimeError(str(e)) from None


def _f_sub(s: list, q: Any, x: Any) -> Quantity:
    try:
        return q.sub(_qty_or_int("sub", q, x))
    except ValueError as e:
        raise CELRuntimeError(str(e)) from None


def _f_mul(s: list, q: Any, m: Any) -> Quantity:
    if type(q) is not Quantity or type(m) is not int:
        raise _no_overload("mul", q, m)
    try:
        return q.mul(m)
    except ValueError as e:
        raise CELRuntimeError(str(e)) from None


def _f_div(s: list, q: Any, d: Any, places: Any = 4) -> Quantity:
    if type(q) is not Quantity or type(d) is not int or type(places) is not int:
        raise _no_overload("div", q, d, places)
    if d == 0:
        raise CELRuntimeError("division by zero error")
    if not 0 <= places <= 10:
        raise CELRuntimeError(f"the valid range for roundVal is 0 to 10 but {places} was passed")
    try:
        return q.div(d, places)
    except ValueError as e:
        raise CELRuntimeError(str(e)) from None


def _f_div_int(s: list, q: Any, d: Any) -> Quantity:
    if type(q) is not Quantity or type(d) is not int:
        raise _no_overload("divInt", q, d)
    if d == 0:
        raise CELRuntimeError("division by zero error")
    try:
        return q.div_int(d)
    except ValueError as e:
        raise CELRuntimeError(str(e)) from None


def _compare(fn: str, a: Any, b: Any) -> int:
    ta = type(a)
    if ta is type(b):
        if ta is Quantity:
            return a.cmp(b)
        if ta is Semver:
            return a.compare(b)
    raise _no_overload(fn, a, b)


def _f_is_greater_than(s: list, a: Any, b: Any) -> bool:
    return _compare("isGreaterThan", a, b) == 1


def _f_is_less_than(s: list, a: Any, b: Any) -> bool:
    return _compare("isLessThan", a, b) == -1


def _f_compare_to(s: list, a: Any, b: Any) -> int:
    return _compare("compareTo", a, b)


def _f_semver(s: list, x: Any, normalize: Any = False) -> Semver:
    if type(x) is not str or type(normalize) is not bool:
        raise _no_overload("semver", x, normalize)
    try:
        return Semver.parse(x, normalize)
    except ValueError as e:
        raise CELRuntimeError(str(e)) from None


def _f_is_semver(s: list, x: Any, normalize: Any = False) -> bool:
    if type(x) is not str or type(normalize) is not bool:
        raise _no_overload("isSemver", x, normalize)
    try:
        Semver.parse(x, normalize)
    except ValueError:
        return False
    return True


def _int64_wrap(v: int) -> int:
    return v - (1 << 64) if v > _INT64_MAX else v


def _f_major(s: list, v: Any) -> int:
    if type(v) is not Semver:
        raise _no_overload("major", v)
    return _int64_wrap(v.major)


def _f_minor(s: list, v: Any) -> int:
    if type(v) is not Semver:
        raise _no_overload("minor", v)
    return _int64_wrap(v.minor)


def _f_patch(s: list, v: Any) -> int:
    if type(v) is not Semver:
        raise _no_overload("patch", v)
    return _int64_wrap(v.patch)


def _f_opt_of(s: list, x: Any) -> CelOptional:
    return CelOptional(True, x)


def _is_zero(x: Any) -> bool:
    if x is None or x is False:
        return True
    t = type(x)
    if t in _NUM_TYPES or t is str or t is bytes or t is list or isinstance(x, dict):
        return not x
    return False


def _f_opt_of_non_zero(s: list, x: Any) -> CelOptional:
    return _NONE if _is_zero(x) else CelOptional(True, x)


def _f_opt_none(s: list) -> CelOptional:
    return _NONE


def _opt_arg(fn: str, o: Any, *rest: Any) -> CelOptional:
    if type(o) is not CelOptional:
        raise _no_overload(fn, o, *rest)
    return o


def _f_has_value(s: list, o: Any) -> bool:
    return _opt_arg("hasValue", o).present


def _f_value(s: list, o: Any) -> Any:
    o = _opt_arg("value", o)
    if not o.present:
        raise CELRuntimeError("optional.none() dereference")
    return o.value


def _f_or_value(s: list, o: Any, d: Any) -> Any:
    o = _opt_arg("orValue", o, d)
    return o.value if o.present else d


def _f_or(s: list, o: Any, other: Any) -> Any:
    o = _opt_arg("or", o, other)
    if o.present:
        return o
    return _opt_arg("or", other)


def _f_includes(s: list, x: Any, v: Any) -> bool:
    if type(x) is list:
        if len(x) > _ATTR_VALUES_PER_DEVICE:
            raise CELRuntimeError("'includes' function cannot be applied to lists longer than "
                                  f"{_ATTR_VALUES_PER_DEVICE} values")
        return any(_eq(e, v) for e in x)
    return _eq(x, v)


_IMPLS: dict[str, Callable] = {
    "size": _f_size, "contains": _f_contains, "startsWith": _f_starts_with, "endsWith": _f_ends_with,
    "matches": _f_matches, "int": _f_int, "uint": _f_uint, "double": _f_double, "string": _f_string,
    "bytes": _f_bytes, "bool": _f_bool, "dyn": _f_dyn, "type": _f_type,
    "charAt": _f_char_at, "indexOf": _f_index_of, "lastIndexOf": _f_last_index_of,
    "lowerAscii": _f_lower_ascii, "upperAscii": _f_upper_ascii, "replace": _f_replace, "split": _f_split,
    "substring": _f_substring, "trim": _f_trim, "join": _f_join, "strings.quote": _f_quote,
    "isSorted": _f_is_sorted, "sum": _f_sum, "min": _f_min, "max": _f_max,
    "find": _f_find, "findAll": _f_find_all,
    "sets.contains": _f_sets_contains, "sets.equivalent": _f_sets_equivalent,
    "sets.intersects": _f_sets_intersects,
    "quantity": _f_quantity, "isQuantity": _f_is_quantity, "sign": _f_sign,
    "isGreaterThan": _f_is_greater_than, "isLessThan": _f_is_less_than, "compareTo": _f_compare_to,
    "asApproximateFloat": _f_as_approximate_float, "asInteger": _f_as_integer, "isInteger": _f_is_integer,
    "add": _f_add, "sub": _f_sub, "mul": _f_mul, "div": _f_div, "divInt": _f_div_int,
    "semver": _f_semver, "isSemver": _f_is_semver, "major": _f_major, "minor": _f_minor, "patch": _f_patch,
    "optional.of": _f_opt_of, "optional.ofNonZeroValue": _f_opt_of_non_zero, "optional.none": _f_opt_none,
    "hasValue": _f_has_value, "value": _f_value, "orValue": _f_or_value, "or": _f_or,
    "includes": _f_includes,
}
# Functions whose result is the same for the same constant arguments (folded at compile time).
_PURE_CONST = frozenset({"quantity", "semver", "isQuantity", "isSemver", "int", "uint", "double", "string",
                         "bytes", "bool", "size", "lowerAscii", "upperAscii", "trim"})


# ============================================================================ cost estimation


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
_SZ_ATTR_VALUE = _Sz(_ATTR_VALUE_MAX, elem=_Sz(_ATTR_VALUE_MAX))
_SZ_INNER_ATTRS = _Sz(_ATTRS_PER_DEVICE, key=_Sz(_ID_MAX), val=_SZ_ATTR_VALUE)
_SZ_INNER_CAPS = _Sz(_ATTRS_PER_DEVICE, key=_Sz(_ID_MAX), val=_SZ_ONE)
_SZ_DEVICE = _Sz(4, fields={
    "driver": _Sz(_DRIVER_NAME_MAX),
    "attributes": _Sz(_ATTRS_PER_DEVICE, key=_Sz(_DOMAIN_MAX), val=_SZ_INNER_ATTRS),
    "capacity": _Sz(_ATTRS_PER_DEVICE, key=_Sz(_DOMAIN_MAX), val=_SZ_INNER_CAPS),
    "allowMultipleAllocations": _SZ_ONE,
})


def _tc(n: int) -> int:
    """String traversal cost: ceil(0.1 * size)."""
    return (n + 9) // 10


def _bigger(a: _Sz, b: _Sz) -> _Sz:
    return a if a.n >= b.n else b


def _stringish(t: _T) -> bool:
    return t.kind in ("string", "bytes")


class _Estimator:
    """Worst-case cost as cel-go's checker.Cost with the DRA size estimates. Every method returns
    (cost, local cost, size); the local cost leaves out the iterations of nested comprehensions (they are
    charged by themselves at run time) and becomes Loop.iter_cost."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, _Sz]] = []

    def est(self, n: _Node) -> tuple[int, int, _Sz]:
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
            ests = [self.est(o) for o in _logic_chain(n)[1]]
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


def _call_cost(fn: str, szs: list[_Sz], types: list[_T], parts: list[_Node]) -> tuple[int, _Sz]:
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
        return _ATTR_VALUES_PER_DEVICE, _SZ_ONE
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


def estimate_cost(expression: str) -> int:
    """Worst-case cost estimate of an expression (compiles it without enforcing the limit)."""
    return compile(expression, cost_limit=None).max_cost


# ============================================================================ compiler (AST -> closures)

_Fn = Callable[[list], Any]
_CHARGING = frozenset({"matches", "find", "findAll", "replace", "split", "join", "strings.quote",
                       "sets.contains", "sets.equivalent", "sets.intersects"})
_DIRECT_EQ_KINDS = frozenset({"string", "int", "uint", "double", "bool", "bytes"})
_NUMERIC_KINDS = frozenset({"int", "uint", "double"})
_DUMMY_ACT: list = [0, _INT64_MAX, _INT64_MAX, None, None]


def _const_fn(v: Any) -> _Fn:
    return lambda s: v


class _Compiler:
    def __init__(self) -> None:
        self.scopes: list[dict[str, int]] = []
        self.nslots = _FIRST_VAR_SLOT
        self.dynamic = False  # loops or size-dependent operations: evaluation gets a wall-clock deadline
        self.consts: dict[int, Any] = {}
        self.depth = self.max_depth = 0

    def new_slot(self) -> int:
        self.nslots += 1
        return self.nslots - 1

    def c(self, n: _Node) -> _Fn:
        self.depth += 1
        if self.depth > self.max_depth:
            self.max_depth = self.depth
        fn = getattr(self, "k_" + type(n).__name__)(n)
        self.depth -= 1
        return fn

    def const(self, n: _Node, v: Any) -> _Fn:
        self.consts[id(n)] = v
        return _const_fn(v)

    def is_const(self, n: _Node) -> bool:
        return id(n) in self.consts

    # --- leaves
    def k_Lit(self, n: Lit) -> _Fn:
        return self.const(n, n.value)

    def k_Ident(self, n: Ident) -> _Fn:
        for scope in reversed(self.scopes):
            if n.name in scope:
                return itemgetter(scope[n.name])
        if n.name == "device":
            return itemgetter(_A_DEVICE)
        return self.const(n, CelType(_TYPE_VALUES[n.name]))

    # --- selection
    def k_Select(self, n: Select) -> _Fn:
        op = self.c(n.operand)
        f = n.field
        ot = n.operand.t
        if n.test:
            return lambda s: _has(op(s), f)
        if n.opt or ot.kind == "optional_type":
            return lambda s: _opt_select(op(s), f)
        if ot == DEVICE:
            return lambda s: op(s)[f]
        if ot.kind == "map":
            def select_map(s: list) -> Any:
                m = op(s)
                try:
                    return m[f]
                except KeyError:
                    raise _no_such_key(f) from None
            return select_map
        return lambda s: _select(op(s), f)

    def k_Index(self, n: Index) -> _Fn:
        op = self.c(n.operand)
        ix = self.c(n.index)
        ot = n.operand.t
        if n.opt or ot.kind == "optional_type":
            return lambda s: _opt_index(op(s), ix(s))
        if ot.kind == "map" and self.is_const(n.index) and type(self.consts[id(n.index)]) is str:
            key = self.consts[id(n.index)]

            def index_map(s: list) -> Any:
                m = op(s)
                try:
                    return m[key]
                except KeyError:
                    raise _no_such_key(key) from None
            return index_map
        return lambda s: _index(op(s), ix(s))

    # --- aggregates
    def k_ListLit(self, n: ListLit) -> _Fn:
        elems = [self.c(e) for e in n.elems]
        if n.opt:
            opt = n.opt

            def list_opt(s: list) -> list:
                out = []
                for i, e in enumerate(elems):
                    v = e(s)
                    if i in opt:
                        if type(v) is not CelOptional:
                            raise _no_overload("optional element", v)
                        if v.present:
                            out.append(v.value)
                    else:
                        out.append(v)
                return out
            return list_opt
        if all(self.is_const(e) for e in n.elems):
            return self.const(n, [self.consts[id(e)] for e in n.elems])
        return lambda s: [e(s) for e in elems]

    def k_MapLit(self, n: MapLit) -> _Fn:
        entries = [(self.c(k), self.c(v), opt) for k, v, opt in n.entries]

        def make_map(s: list) -> dict:
            out: dict = {}
            for kf, vf, opt in entries:
                k = _map_key(kf(s))
                if k in out:
                    raise CELRuntimeError("Failed with repeated key")
                v = vf(s)
                if opt:
                    if type(v) is not CelOptional:
                        raise _no_overload("optional entry", v)
                    if not v.present:
                        continue
                    v = v.value
                out[k] = v
            return out
        return make_map

    def k_StructLit(self, n: StructLit) -> _Fn:  # pragma: no cover - rejected by the checker
        raise CELCompileError(f"undeclared reference to '{n.name}'")

    # --- bindings
    def k_Let(self, n: Let) -> _Fn:
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

    def k_OptMap(self, n: OptMap) -> _Fn:
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
                raise _no_overload(name, o)
            if not o.present:
                return o
            s[slot] = o.value
            r = body(s)
            if flat:
                if type(r) is not CelOptional:
                    raise _no_overload(name, r)
                return r
            return CelOptional(True, r)
        return opt_map

    # --- comprehensions
    def k_Loop(self, n: Loop) -> _Fn:
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
        return _LOOPS[n.kind](rng, a, b, pred, body, n.iter_cost)

    # --- calls
    def k_Call(self, n: Call) -> _Fn:
        fn = n.fn
        if fn == "_&&_" or fn == "_||_":
            return _logic([self.c(o) for o in _logic_chain(n)[1]], fn == "_||_")
        if fn == "_?_:_":
            return _cond(*(self.c(a) for a in n.args))
        parts = ([n.target] if n.target is not None else []) + list(n.args)
        fns = [self.c(p) for p in parts]
        if fn in _OPERATOR_NAMES:
            return self.operator(fn, parts, fns)
        impl = _IMPLS[fn]
        if fn in _CHARGING:
            self.dynamic = True
        consts = [self.consts[id(p)] if self.is_const(p) else _NO_CONST for p in parts]
        if fn in _PURE_CONST and _NO_CONST not in consts:
            try:
                return self.const(n, impl(_DUMMY_ACT, *consts))
            except CELRuntimeError:
                pass  # keep the error for run time
        return _call(impl, fns, consts)

    def operator(self, fn: str, parts: list[_Node], fns: list[_Fn]) -> _Fn:
        if fn == "!_":
            return _not(fns[0])
        if fn == "-_":
            x = fns[0]
            return lambda s: _neg(s, x(s))
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
                return lambda s: _int64(a(s) + b(s))
            if ta.kind == "double" and tb.kind == "double":
                return lambda s: a(s) + b(s)
            self.dynamic = True
            return lambda s: _add(s, a(s), b(s))
        if fn == "_-_":
            if ta.kind == "int" and tb.kind == "int":
                return lambda s: _int64(a(s) - b(s))
            return lambda s: _sub(s, a(s), b(s))
        if fn == "_*_":
            if ta.kind == "int" and tb.kind == "int":
                return lambda s: _int64(a(s) * b(s))
            return lambda s: _mul(s, a(s), b(s))
        if fn == "_/_":
            return lambda s: _div(s, a(s), b(s))
        if fn == "_%_":
            return lambda s: _mod(s, a(s), b(s))
        if fn == "@in":
            return lambda s: _in(s, a(s), b(s))
        raise CELCompileError(f"internal error: unknown operator {fn}")  # pragma: no cover


class _NoConst:
    __slots__ = ()


_NO_CONST = _NoConst()


def _call(impl: Callable, fns: list[_Fn], consts: list) -> _Fn:
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


def _eq_fn(a: _Fn, b: _Fn, ta: _T, tb: _T, ca: Any, cb: Any) -> _Fn:
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
                return type(v) in _NUM_TYPES and v == cb
            return eq_num
    if ta.kind == tb.kind and ta.kind in _DIRECT_EQ_KINDS:
        return lambda s: a(s) == b(s)
    return lambda s: _eq(a(s), b(s))


def _compare_fn(fn: str, a: _Fn, b: _Fn, direct: bool, cb: Any) -> _Fn:
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
    op = {"_<_": _lt, "_<=_": _le, "_>_": _gt, "_>=_": _ge}[fn]
    if cb is not _NO_CONST:
        return lambda s: op(a(s), cb)
    return lambda s: op(a(s), b(s))


def _absorbable(e: CELRuntimeError) -> bool:
    return type(e) is not CELCostExceeded


def _logic(fns: list[_Fn], disjunction: bool) -> _Fn:
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
                err = _no_overload(fn, x)
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
                raise _no_overload(fn, x, y)
            if y is decisive:
                return decisive
            raise _no_overload(fn, x)
        return logic2
    return logic


def _cond(c: _Fn, a: _Fn, b: _Fn) -> _Fn:
    def cond(s: list) -> Any:
        x = c(s)
        if x is True:
            return a(s)
        if x is False:
            return b(s)
        raise _no_overload("_?_:_", x)
    return cond


def _not(a: _Fn) -> _Fn:
    def not_(s: list) -> bool:
        x = a(s)
        if x is True:
            return False
        if x is False:
            return True
        raise _no_overload("!_", x)
    return not_


def _quantifier(stop_on: bool, op: str) -> Callable[..., _Fn]:
    """`all` (stops on false, like a chain of &&) and `exists` (stops on true, like ||), with CEL's rule
    that a deciding value wins over errors met on other elements."""
    def make(rng: _Fn, a: int, b: int | None, pred: _Fn, body: Any, ic: int) -> _Fn:
        def run(s: list) -> bool:
            err = None
            for x in (_iterable(rng(s)) if b is None else _iterable2(rng(s))):
                if b is None:
                    s[a] = x
                else:
                    s[a], s[b] = x
                s[0] += ic
                if s[0] > s[1]:
                    _checkpoint(s)
                try:
                    v = pred(s)
                except CELRuntimeError as e:
                    if not _absorbable(e):
                        raise
                    err = err or e
                    continue
                if v is stop_on:
                    return stop_on
                if v is not (not stop_on):
                    err = err or _no_overload(op, not stop_on, v)
            if err is not None:
                raise err
            return not stop_on
        return run
    return make


_loop_all = _quantifier(False, "_&&_")
_loop_exists = _quantifier(True, "_||_")


def _loop_exists_one(rng: _Fn, a: int, b: int | None, pred: _Fn, body: Any, ic: int) -> _Fn:
    def exists_one(s: list) -> bool:
        count = 0
        for x in (_iterable(rng(s)) if b is None else _iterable2(rng(s))):
            if b is None:
                s[a] = x
            else:
                s[a], s[b] = x
            s[0] += ic
            if s[0] > s[1]:
                _checkpoint(s)
            v = pred(s)
            if v is True:
                count += 1
            elif v is not False:
                raise _no_overload("_?_:_", v)
        return count == 1
    return exists_one


def _test(v: Any) -> bool:
    if v is True or v is False:
        return v
    raise _no_overload("_?_:_", v)


def _loop_map(rng: _Fn, a: int, b: int | None, pred: _Fn | None, body: _Fn, ic: int) -> _Fn:
    def map_(s: list) -> list:
        out = []
        for x in _iterable(rng(s)):
            s[a] = x
            s[0] += ic
            if s[0] > s[1]:
                _checkpoint(s)
            if pred is None or _test(pred(s)):
                out.append(body(s))
        return out
    return map_


def _loop_filter(rng: _Fn, a: int, b: int | None, pred: _Fn, body: Any, ic: int) -> _Fn:
    def filter_(s: list) -> list:
        out = []
        for x in _iterable(rng(s)):
            s[a] = x
            s[0] += ic
            if s[0] > s[1]:
                _checkpoint(s)
            if _test(pred(s)):
                out.append(x)
        return out
    return filter_


def _loop_transform_list(rng: _Fn, a: int, b: int, pred: _Fn | None, body: _Fn, ic: int) -> _Fn:
    def transform_list(s: list) -> list:
        out = []
        for x in _iterable2(rng(s)):
            s[a], s[b] = x
            s[0] += ic
            if s[0] > s[1]:
                _checkpoint(s)
            if pred is None or _test(pred(s)):
                out.append(body(s))
        return out
    return transform_list


def _loop_transform_map(rng: _Fn, a: int, b: int, pred: _Fn | None, body: _Fn, ic: int) -> _Fn:
    def transform_map(s: list) -> dict:
        out = {}
        for x in _iterable2(rng(s)):
            s[a], s[b] = x
            s[0] += ic
            if s[0] > s[1]:
                _checkpoint(s)
            if pred is None or _test(pred(s)):
                out[x[0]] = body(s)
        return out
    return transform_map


def _loop_transform_map_entry(rng: _Fn, a: int, b: int, pred: _Fn | None, body: _Fn, ic: int) -> _Fn:
    def transform_map_entry(s: list) -> dict:
        out: dict = {}
        for x in _iterable2(rng(s)):
            s[a], s[b] = x
            s[0] += ic
            if s[0] > s[1]:
                _checkpoint(s)
            if pred is None or _test(pred(s)):
                entry = body(s)
                if not isinstance(entry, dict):
                    raise _no_overload("transformMapEntry", entry)
                for k, v in entry.items():
                    if k in out:
                        raise CELRuntimeError(f"insert failed: key {k} already exists")
                    out[k] = v
        return out
    return transform_map_entry


_LOOPS: dict[str, Callable[..., _Fn]] = {
    "all": _loop_all, "exists": _loop_exists, "exists_one": _loop_exists_one, "map": _loop_map,
    "filter": _loop_filter, "transformList": _loop_transform_list, "transformMap": _loop_transform_map,
    "transformMapEntry": _loop_transform_map_entry,
}


# ============================================================================ public API


class CompiledExpression:
    """A checked, compiled CEL selector expression.

    `max_cost` is the worst-case cost estimate (compare it with CEL_SELECTOR_EXPRESSION_MAX_COST);
    `output_type` the static result type ("bool" or "dyn")."""

    __slots__ = ("_depth", "_dynamic", "_fn", "_results", "_tail", "expression", "key", "max_cost", "output_type")

    def __init__(self, expression: str, fn: _Fn, max_cost: int, nslots: int, dynamic: bool,
                 output_type: str, key: tuple, depth: int = 0):
        self.expression = expression
        self.max_cost = max_cost
        self.output_type = output_type
        self.key = key
        self._fn = fn
        self._tail = [None] * (nslots - _FIRST_VAR_SLOT)
        self._dynamic = dynamic
        self._depth = depth
        self._results: dict[Any, Any] = {}  # evaluate_cached: device key -> bool or error message

    def __repr__(self) -> str:
        return f"CompiledExpression({self.expression!r}, max_cost={self.max_cost})"

    def evaluate_value(self, device: Mapping[str, Any], *, cost_limit: int | None = CEL_SELECTOR_EXPRESSION_MAX_COST,
                       time_budget: float | None = DEFAULT_TIME_BUDGET) -> Any:
        """Evaluate and return the raw CEL value (bool, int, str, list, dict, Quantity, Semver...)."""
        env = device if type(device) is DeviceEnv else _as_env(device)
        limit = _INT64_MAX if cost_limit is None else cost_limit
        deadline = time.perf_counter() + time_budget if self._dynamic and time_budget is not None else None
        s = [0, min(limit, _CHECK_EVERY), limit, deadline, env]
        if self._tail:
            s += self._tail
        try:
            if self._depth > _DEEP_EXPRESSION:
                with _recursion_headroom(4 * self._depth):
                    r = self._fn(s)
            else:
                r = self._fn(s)
            if type(r) is list or isinstance(r, dict):
                r = copy.deepcopy(r)  # constants and device values are shared between evaluations
            return r
        except CELRuntimeError:
            raise
        except RecursionError:
            raise CELRuntimeError("expression recursion limit exceeded during evaluation") from None
        except MemoryError:
            raise CELCostExceeded("operation cancelled: out of memory") from None
        except Exception as e:  # a bug or a malformed device; never let it escape as something else
            raise CELRuntimeError(f"internal evaluation error: {type(e).__name__}: {e}") from e

    def evaluate(self, device: Mapping[str, Any], *, cost_limit: int | None = CEL_SELECTOR_EXPRESSION_MAX_COST,
                 time_budget: float | None = DEFAULT_TIME_BUDGET) -> bool:
        """Does the device match? `device` is a DeviceEnv (see device_env) or a plain mapping
        {"driver", "attributes": {domain: {name: value}}, "capacity": {domain: {name: Quantity}},
        "allowMultipleAllocations"}. Raises CELRuntimeError (e.g. "no such key: model") or CELCostExceeded."""
        r = self.evaluate_value(device, cost_limit=cost_limit, time_budget=time_budget)
        if r is True or r is False:
            return r
        t = _tname(r)
        raise CELRuntimeError(f"CEL result of type {t} could not be converted to bool: "
                              f"type conversion error from '{t}' to 'bool'")

    def evaluate_cached(self, device_key: Any, device: Mapping[str, Any]) -> bool:
        """evaluate() memoized per (expression, device_key); device_key must change when the device does
        (e.g. (slice uid, slice resourceVersion, device name))."""
        return _evaluate_cached(self, device_key, device)


def _as_env(device: Mapping[str, Any]) -> DeviceEnv:
    attrs = device.get("attributes") or {}
    caps = device.get("capacity") or {}
    return DeviceEnv(
        driver=device.get("driver") or "",
        attributes=attrs if type(attrs) is _DomainMap else _DomainMap(attrs),
        capacity=caps if type(caps) is _DomainMap else _DomainMap(caps),
        allowMultipleAllocations=bool(device.get("allowMultipleAllocations") or False),
    )


_COMPILED: dict[tuple, CompiledExpression | tuple[type, str]] = {}
_COMPILED_MAX = 4096
_EVALUATED_MAX = 1 << 16  # cached results per compiled expression
_cache_lock = threading.Lock()


def _remember(cache: dict, key: Any, value: Any, limit: int) -> None:
    with _cache_lock:
        if len(cache) >= limit:
            for old in list(cache)[: limit // 4]:  # drop the oldest quarter (insertion order)
                cache.pop(old, None)
        cache[key] = value


def compile(expression: str, *, cost_limit: int | None = CEL_SELECTOR_EXPRESSION_MAX_COST,
            list_type_attributes: bool = True, consumable_capacity: bool = True,
            derived_attribute: bool = False) -> CompiledExpression:
    """Parse, type-check, cost-estimate and compile a DRA CEL selector expression (cached).

    Raises CELCompileError with upstream-like text ("compilation failed: ERROR: <input>:1:5: ...",
    "must evaluate to bool or the unknown type, not int"), or CELCostExceeded("too complex, exceeds cost
    limit") when the worst-case estimate is above `cost_limit` (pass None for stored expressions, which
    upstream does not re-check). `list_type_attributes` (DRAListTypeAttributes: includes()) and
    `consumable_capacity` (DRAConsumableCapacity: device.allowMultipleAllocations) select the
    environment; stored expressions use both. `derived_attribute` (DRADerivedAttributes) compiles an
    attribute-deriving expression instead of a selector: it must evaluate to a string, int, bool or semver
    (or a list of them with list-type attributes); use evaluate_value() for it.
    """
    key = (expression, bool(list_type_attributes), bool(consumable_capacity), bool(derived_attribute))
    hit = _COMPILED.get(key)
    if hit is None:
        try:
            frames = min(8 * len(expression) + 3000, 100_000) if isinstance(expression, str) else 0
            with _recursion_headroom(frames):
                opts = _Options(bool(list_type_attributes), bool(consumable_capacity), bool(derived_attribute))
                hit = _compile(expression, opts, key)
        except CELCompileError as e:
            hit = (type(e), e.message)
        _remember(_COMPILED, key, hit, _COMPILED_MAX)
    if type(hit) is tuple:
        raise hit[0](hit[1])
    assert isinstance(hit, CompiledExpression)
    if cost_limit is not None and hit.max_cost > cost_limit:
        raise CELCostExceeded(_COST_LIMIT_MESSAGE, hit.max_cost)
    return hit


def _compile(expression: str, opts: _Options, key: tuple) -> CompiledExpression:
    if not isinstance(expression, str):
        raise CELCompileError("compilation failed: expression must be a string")
    try:
        ast = _Parser(expression).parse()
        checker = _Checker(opts)
        t = checker.check(ast)
        if checker.issues:
            raise CELCompileError("compilation failed: " + _format_issues(expression, checker.issues))
        _check_output_type(t, opts)
        cost = _Estimator().est(ast)[0]
        comp = _Compiler()
        fn = comp.c(ast)
    except _SyntaxError as e:
        raise CELCompileError("compilation failed: " + _format_issues(expression, [(e.pos, e.message)])) from None
    except RecursionError:  # pragma: no cover - only for expressions far beyond the length limit
        raise CELCompileError("compilation failed: expression recursion limit exceeded") from None
    return CompiledExpression(expression, fn, cost, comp.nslots, comp.dynamic, str(t), key, comp.max_depth)


_DERIVED_SCALARS = frozenset({"bool", "int", "string", "dyn"})


def _check_output_type(t: _T, opts: _Options) -> None:
    if opts.derived_attribute:
        def scalar(x: _T) -> bool:
            return x.kind in _DERIVED_SCALARS or x == SEMVER
        if scalar(t) or (opts.list_type_attributes and t.kind == "list" and scalar(t.params[0])):
            return
        if opts.list_type_attributes:
            raise CELCompileError("must evaluate to a primitive scalar (string, integer, boolean, semver) or a "
                                  f"list of these scalars, not {t}")
        raise CELCompileError(f"must evaluate to a primitive scalar (string, integer, boolean, semver), not {t}")
    if t.kind not in ("bool", "dyn"):
        raise CELCompileError(f"must evaluate to bool or the unknown type, not {t}")


def _evaluate_cached(ce: CompiledExpression, device_key: Any, device: Mapping[str, Any]) -> bool:
    results = ce._results
    hit = results.get(device_key)
    if hit is not None:
        if hit is True or hit is False:
            return hit
        if type(hit) is tuple:
            raise CELCostExceeded(*hit)
        raise CELRuntimeError(hit)
    if len(results) >= _EVALUATED_MAX:
        results.clear()
    try:
        r = ce.evaluate(device)
    except CELCostExceeded as e:
        if e.message == _ACTUAL_COST_MESSAGE:  # deterministic; a time budget running out is not
            results[device_key] = (e.message, e.cost)
        raise
    except CELRuntimeError as e:
        results[device_key] = e.message
        raise
    results[device_key] = r
    return r


def evaluate_cached(expression: str | CompiledExpression, device_key: Any, device: Mapping[str, Any]) -> bool:
    """Evaluate a selector against a device, memoized per (expression, device_key). A string expression is
    compiled without the estimated-cost check (stored expressions are not re-validated upstream; the
    runtime cost limit still applies). Errors (CELRuntimeError) are memoized too."""
    ce = expression if isinstance(expression, CompiledExpression) else compile(expression, cost_limit=None)
    return _evaluate_cached(ce, device_key, device)


def clear_caches() -> None:
    """Drop the compile and evaluation caches."""
    with _cache_lock:
        for ce in _COMPILED.values():
            if isinstance(ce, CompiledExpression):
                ce._results.clear()
        _COMPILED.clear()
        _SEMVERS.clear()
        _QUANTITIES.clear()


_SEMVERS: dict[str, Semver] = {}
_QUANTITIES: dict[str, Quantity] = {}


def _memo_parse(memo: dict, parse: Callable[[str], Any], text: str) -> Any:
    """Parse through a bounded memo (values repeat across the devices of a cluster; both types are
    immutable)."""
    v = memo.get(text)
    if v is None:
        v = parse(text)
        if len(memo) >= 8192:
            memo.clear()
        memo[text] = v
    return v


def _attribute_value(name: str, attr: Any) -> Any:
    if type(attr) is not dict and not isinstance(attr, Mapping):
        raise CELRuntimeError(f"attribute {name}: unsupported attribute value")
    for field, value in attr.items():
        if value is None:
            continue
        tv = type(value)
        if field == "string" and tv is str:
            return value
        if field == "int" and tv is int:
            return value
        if field == "bool" and tv is bool:
            return value
        if field == "version" and tv is str:
            try:
                return _memo_parse(_SEMVERS, Semver.parse, value)
            except ValueError as e:
                raise CELRuntimeError(f"attribute {name}: parse semantic version: {e}") from None
        if field in ("ints", "bools", "strings") and tv is list:
            return list(value)
        if field == "versions" and tv is list:
            try:
                return [_memo_parse(_SEMVERS, Semver.parse, v) for v in value]
            except (ValueError, TypeError) as e:
                raise CELRuntimeError(f"attribute {name}: parse semantic version: {e}") from None
    raise CELRuntimeError(f"attribute {name}: unsupported attribute value")


def _split_qualified(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def device_env(driver: str, device: Mapping[str, Any]) -> DeviceEnv:
    """Build the evaluation input from a ResourceSlice device in v1 wire shape:
    {"name", "attributes": {"model": {"string": "a100"}, "dra.example.com/v": {"version": "1.2.3"}},
     "capacity": {"memory": {"value": "40Gi"}}, "allowMultipleAllocations": true}.
    Unqualified names live in the driver's domain (device.attributes[device.driver].model). Raises
    CELRuntimeError for an attribute without a supported value or an invalid version/quantity."""
    attrs = _DomainMap()
    for name, attr in (device.get("attributes") or {}).items():
        domain, ident = _split_qualified(name, driver)
        inner = attrs.get(domain)
        if inner is None:
            inner = attrs[domain] = {}
        inner[ident] = _attribute_value(name, attr)
    caps = _DomainMap()
    for name, cap in (device.get("capacity") or {}).items():
        domain, ident = _split_qualified(name, driver)
        value = cap.get("value") if type(cap) is dict or isinstance(cap, Mapping) else cap
        if type(value) is not Quantity:
            try:
                value = _memo_parse(_QUANTITIES, Quantity.parse, value if type(value) is str else str(value))
            except ValueError as e:
                raise CELRuntimeError(f"capacity {name}: {e}") from None
        inner = caps.get(domain)
        if inner is None:
            inner = caps[domain] = {}
        inner[ident] = value
    return DeviceEnv(driver=driver or "", attributes=attrs, capacity=caps,
                     allowMultipleAllocations=bool(device.get("allowMultipleAllocations") or False))
