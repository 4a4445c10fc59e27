"""Regular expressions in CEL: the standard `matches` and the Kubernetes regex library's `find` and
`findAll`, with RE2 semantics (google-re2 when installed, else Python's re), a cache of compiled patterns
and per-pattern result memos."""

from __future__ import annotations

import re
from typing import Any

from dramock.cel.activation import charge
from dramock.cel.errors import CELRuntimeError
from dramock.cel.operators import no_overload, require_strings

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


def compile_regex(pattern: str) -> _Pattern:
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


def fn_matches(s: list, a: Any, p: Any) -> bool:
    require_strings("matches", a, p)
    charge(s, (len(a) + 9) // 10)
    return compile_regex(p).matches(a)


def fn_find(s: list, a: Any, p: Any) -> str:
    require_strings("find", a, p)
    charge(s, (len(a) + 9) // 10)
    return compile_regex(p).find(a)


def fn_find_all(s: list, a: Any, p: Any, n: Any = -1) -> list:
    require_strings("findAll", a, p)
    if type(n) is not int:
        raise no_overload("findAll", a, p, n)
    charge(s, (len(a) + 9) // 10)
    if n == 0:
        return []
    return compile_regex(p).find_all(a, n)
