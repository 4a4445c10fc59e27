"""The cel-go strings extension (version 2): charAt, indexOf, lastIndexOf (with the list overloads of the
Kubernetes lists library, which share their names), lowerAscii, upperAscii, replace, split, substring,
trim, join and strings.quote."""

from __future__ import annotations

from typing import Any

from dramock.cel.activation import charge
from dramock.cel.errors import CELRuntimeError
from dramock.cel.operators import no_overload, require_strings
from dramock.cel.values import cel_equals


def fn_char_at(s: list, a: Any, i: Any) -> str:
    if type(a) is not str or type(i) is not int:
        raise no_overload("charAt", a, i)
    if i < 0 or i > len(a):
        raise CELRuntimeError(f"index out of range: {i}")
    return a[i] if i < len(a) else ""


def fn_index_of(s: list, a: Any, x: Any, off: Any = None) -> int:
    if type(a) is list and off is None:
        for i, v in enumerate(a):
            if cel_equals(v, x):
                return i
        return -1
    if type(a) is not str or type(x) is not str or (off is not None and type(off) is not int):
        raise no_overload("indexOf", a, x) if off is None else no_overload("indexOf", a, x, off)
    start = 0 if off is None else off
    if x == "":
        return start
    if start < 0 or start >= len(a):
        raise CELRuntimeError(f"index out of range: {start}")
    return a.find(x, start)


def fn_last_index_of(s: list, a: Any, x: Any, off: Any = None) -> int:
    if type(a) is list and off is None:
        for i in range(len(a) - 1, -1, -1):
            if cel_equals(a[i], x):
                return i
        return -1
    if type(a) is not str or type(x) is not str or (off is not None and type(off) is not int):
        raise no_overload("lastIndexOf", a, x) if off is None else no_overload("lastIndexOf", a, x, off)
    if x == "":
        return len(a) if off is None else off
    start = len(a) - 1 if off is None else off
    if start < 0 or start >= len(a):
        raise CELRuntimeError(f"index out of range: {start}")
    return a.rfind(x, 0, start + len(x))


_LOWER = {c: c + 32 for c in range(65, 91)}
_UPPER = {c + 32: c for c in range(65, 91)}


def fn_lower_ascii(s: list, a: Any) -> str:
    require_strings("lowerAscii", a)
    return a.translate(_LOWER)


def fn_upper_ascii(s: list, a: Any) -> str:
    require_strings("upperAscii", a)
    return a.translate(_UPPER)


def fn_replace(s: list, a: Any, old: Any, new: Any, n: Any = -1) -> str:
    if type(a) is not str or type(old) is not str or type(new) is not str or type(n) is not int:
        raise no_overload("replace", a, old, new, n)
    if n == 0:
        return a
    count = (len(a) + 1) if old == "" else a.count(old)
    if n > 0:
        count = min(count, n)
    charge(s, (len(a) + count * len(new) + 9) // 10)  # before building a possibly huge string
    return a.replace(old, new, n if n > 0 else -1)


def fn_split(s: list, a: Any, sep: Any, n: Any = -1) -> list:
    if type(a) is not str or type(sep) is not str or type(n) is not int:
        raise no_overload("split", a, sep, n)
    charge(s, (len(a) + 9) // 10)
    if n == 0:
        return []
    if sep == "":
        chars = list(a)
        if 0 < n < len(chars):
            return chars[:n - 1] + ["".join(chars[n - 1:])]
        return chars
    return a.split(sep, n - 1 if n > 0 else -1)


def fn_substring(s: list, a: Any, start: Any, end: Any = None) -> str:
    if type(a) is not str or type(start) is not int or (end is not None and type(end) is not int):
        raise no_overload("substring", a, start, end)
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


def fn_trim(s: list, a: Any) -> str:
    require_strings("trim", a)
    return a.strip(_GO_SPACE)


def fn_join(s: list, lst: Any, sep: Any = "") -> str:
    if type(lst) is not list or type(sep) is not str or any(type(x) is not str for x in lst):
        raise no_overload("join", lst, sep)
    charge(s, (sum(map(len, lst)) + len(sep) * len(lst) + 9) // 10)
    return sep.join(lst)


_QUOTE_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
                  "\\": "\\\\", '"': '\\"'}


def fn_quote(s: list, a: Any) -> str:
    require_strings("strings.quote", a)
    charge(s, (len(a) + 9) // 10)
    return '"' + "".join(_QUOTE_ESCAPES.get(c, c) for c in a) + '"'
