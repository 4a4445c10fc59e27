"""The Kubernetes CEL semver library: semver(), isSemver() and the major/minor/patch accessors (the value
type is dramock.cel.semver.Semver; isGreaterThan, isLessThan and compareTo are in lib_comparable)."""

from __future__ import annotations

from typing import Any

from dramock.cel.errors import CELRuntimeError
from dramock.cel.limits import INT64_MAX
from dramock.cel.operators import no_overload
from dramock.cel.semver import Semver


def fn_semver(s: list, x: Any, normalize: Any = False) -> Semver:
    if type(x) is not str or type(normalize) is not bool:
        raise no_overload("semver", x, normalize)
    try:
        return Semver.parse(x, normalize)
    except ValueError as e:
        raise CELRuntimeError(str(e)) from None


def fn_is_semver(s: list, x: Any, normalize: Any = False) -> bool:
    if type(x) is not str or type(normalize) is not bool:
        raise no_overload("isSemver", x, normalize)
    try:
        Semver.parse(x, normalize)
    except ValueError:
        return False
    return True


def _int64_wrap(v: int) -> int:
    return v - (1 << 64) if v > INT64_MAX else v


def fn_major(s: list, v: Any) -> int:
    if type(v) is not Semver:
        raise no_overload("major", v)
    return _int64_wrap(v.major)


def fn_minor(s: list, v: Any) -> int:
    if type(v) is not Semver:
        raise no_overload("minor", v)
    return _int64_wrap(v.minor)


def fn_patch(s: list, v: Any) -> int:
    if type(v) is not Semver:
        raise no_overload("patch", v)
    return _int64_wrap(v.patch)
