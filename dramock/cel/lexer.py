"""The CEL lexer: source text to tokens (literals with their escapes, identifiers, keywords, operators), and
the positioned syntax error that the lexer and the parser raise."""

from __future__ import annotations

import re
from typing import Any

from dramock.cel.limits import INT64_MAX, UINT64_MAX
from dramock.cel.values import UInt

RESERVED_WORDS = frozenset({"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let",
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


class Token:
    __slots__ = ("kind", "pos", "text", "value")

    def __init__(self, kind: str, text: str, pos: int, value: Any = None):
        self.kind, self.text, self.pos, self.value = kind, text, pos, value

    def is_op(self, text: str) -> bool:
        return (self.kind == "op" or self.kind == "kw") and self.text == text

    def show(self) -> str:
        return "<EOF>" if self.kind == "eof" else self.text


class SyntaxIssue(Exception):
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
                raise SyntaxIssue(pos, "Syntax error: invalid unicode code point")
            out.append(chr(code))
        else:
            raise SyntaxIssue(pos, f"Syntax error: token recognition error at: '\\{bad or ''}'")
    tail = body[last:]
    out.append(tail.encode() if is_bytes else tail)
    return b"".join(out) if is_bytes else "".join(out)


def _string_token(text: str, raw: bool, pos: int) -> Token:
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
    return Token("bytes" if is_bytes else "string", text, pos, value)


def tokenize(src: str) -> list[Token]:
    toks: list[Token] = []
    pos = 0
    n = len(src)
    match = _TOKEN_RE.match
    while pos < n:
        m = match(src, pos)
        if m is None:
            rest = src[pos:]
            if rest[0] in "'\"":
                raise SyntaxIssue(pos, f"Syntax error: token recognition error at: '{rest.splitlines()[0]}'")
            raise SyntaxIssue(pos, f"Syntax error: token recognition error at: '{rest[0]}'")
        kind = m.lastgroup
        text = m.group()
        if kind == "ws":
            pass
        elif kind == "rstr" or kind == "str":
            toks.append(_string_token(text, kind == "rstr", pos))
        elif kind == "float":
            toks.append(Token("double", text, pos, float(text)))
        elif kind == "int":
            unsigned = text[-1] in "uU"
            digits = text[:-1] if unsigned else text
            value = int(digits, 16) if digits.startswith("0x") else int(digits)
            if unsigned:
                if value > UINT64_MAX:
                    raise SyntaxIssue(pos, "invalid uint literal")
                toks.append(Token("uint", text, pos, UInt(value)))
            else:
                if value > INT64_MAX + 1:
                    raise SyntaxIssue(pos, "invalid int literal")
                toks.append(Token("int", text, pos, value))
        elif kind == "ident":
            toks.append(Token("kw" if text in _KEYWORDS else "ident", text, pos))
        elif kind == "qident":
            toks.append(Token("qident", text, pos, text[1:-1]))
        else:
            toks.append(Token("op", text, pos))
        pos = m.end()
    toks.append(Token("eof", "", n))
    return toks
