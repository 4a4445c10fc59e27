"""Label selectors (equality and set-based) and field selectors, parsed as upstream parses them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dramock.errors import bad_request
from dramock.schemas.validation.names import is_label_value, is_qualified_name

Obj = dict[str, Any]


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "!":
            return self.key not in labels
        if self.op in ("=", "in"):
            return self.key in labels and labels[self.key] in self.values
        # "!=" and "notin" also match objects without the label, as upstream does.
        return labels.get(self.key) not in self.values if self.key in labels else True


_TOKEN = re.compile(r"\s*(!=|==|=|\(|\)|,|!|[^\s!=(),]+)")


def parse_label_selector(text: str) -> list[Requirement]:
    """Parse `a=b,c!=d,e in (f,g),!h,i` into requirements; BadRequest on bad syntax."""
    tokens = [t for t in _TOKEN.findall(text or "")]
    reqs: list[Requirement] = []
    i = 0

    def fail(msg: str) -> Exception:
        return bad_request(f"unable to parse requirement: {msg}")

    def key_ok(key: str) -> str:
        if is_qualified_name(key):
            raise fail(f'found \'{key}\', expected: valid label key')
        return key

    def value_ok(v: str) -> str:
        if is_label_value(v):
            raise fail(f"invalid label value: \"{v}\": at key: ...")
        return v

    while i < len(tokens):
        tok = tokens[i]
        if tok == "!":
            if i + 1 >= len(tokens):
                raise fail("found '', expected: identifier")
            reqs.append(Requirement(key_ok(tokens[i + 1]), "!"))
            i += 2
        else:
            key = key_ok(tok)
            i += 1
            op = tokens[i] if i < len(tokens) else ","
            if op == ",":
                reqs.append(Requirement(key, "exists"))
            elif op in ("=", "==", "!="):
                value = tokens[i + 1] if i + 1 < len(tokens) and tokens[i + 1] not in (",",) else ""
                i += 2 if value else 1
                reqs.append(Requirement(key, "!=" if op == "!=" else "=", (value_ok(value),)))
            elif op in ("in", "notin"):
                if i + 1 >= len(tokens) or tokens[i + 1] != "(":
                    raise fail("found '', expected: '('")
                i += 2
                values: list[str] = []
                while i < len(tokens) and tokens[i] != ")":
                    if tokens[i] != ",":
                        values.append(value_ok(tokens[i]))
                    i += 1
                if i >= len(tokens):
                    raise fail("found '', expected: ')'")
                i += 1
                reqs.append(Requirement(key, op, tuple(values)))
            else:
                raise fail(f"found '{op}', expected: in, notin, =, ==, !=, gt, lt")
        if i < len(tokens):
            if tokens[i] != ",":
                raise fail(f"found '{tokens[i]}', expected: ','")
            i += 1
    return reqs


@dataclass(frozen=True)
class FieldRequirement:
    path: str
    value: str
    equal: bool


def parse_field_selector(text: str) -> list[FieldRequirement]:
    reqs: list[FieldRequirement] = []
    for part in _split_unescaped(text or "", ","):
        if not part:
            continue
        for op, equal in (("!=", False), ("==", True), ("=", True)):
            idx = _find_unescaped(part, op)
            if idx >= 0:
                reqs.append(FieldRequirement(part[:idx].strip(), _unescape(part[idx + len(op):]), equal))
                break
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
    return reqs


def _find_unescaped(s: str, needle: str) -> int:
    i = 0
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s.startswith(needle, i):
            return i
        i += 1
    return -1


def _split_unescaped(s: str, sep: str) -> list[str]:
    out, cur, i = [], [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            cur.append(s[i:i + 2])
            i += 2
            continue
        if s[i] == sep:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(s[i])
        i += 1
    out.append("".join(cur))
    return out


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", r"\1", s)


Predicate = Callable[[Obj], bool]


def predicate(labels: list[Requirement], fields: list[FieldRequirement],
              field_value: Callable[[Obj, str], str | None]) -> Predicate | None:
    """A match function for an object, or None when everything matches."""
    if not labels and not fields:
        return None

    def match(obj: Obj) -> bool:
        obj_labels = (obj.get("metadata") or {}).get("labels") or {}
        for r in labels:
            if not r.matches(obj_labels):
                return False
        for f in fields:
            if (field_value(obj, f.path) == f.value) != f.equal:
                return False
        return True

    return match


def check_fields(fields: list[FieldRequirement], field_value: Callable[[Obj, str], str | None]) -> None:
    """BadRequest for field selectors the kind does not support, with upstream's message."""
    probe: Obj = {"metadata": {}}
    for f in fields:
        if field_value(probe, f.path) is None:
            raise bad_request(f'field label not supported: {f.path}')
