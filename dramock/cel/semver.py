"""The semantic version value type behind the Kubernetes CEL semver library (`kubernetes.Semver`): parsing
as github.com/blang/semver/v4 does, the library's normalization, comparison and printing."""

from __future__ import annotations

from dramock.cel.errors import go_quote
from dramock.cel.limits import UINT64_MAX


def _isdigit(c: str) -> bool:
    return "0" <= c <= "9"


_SEMVER_ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")
_SEMVER_DIGITS = frozenset("0123456789")


def _parse_uint64(s: str) -> int:
    if not s or not all(c in _SEMVER_DIGITS for c in s):
        raise ValueError(f"strconv.ParseUint: parsing {go_quote(s)}: invalid syntax")
    v = int(s)
    if v > UINT64_MAX:
        raise ValueError(f"strconv.ParseUint: parsing {go_quote(s)}: value out of range")
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
                raise ValueError(f"Invalid character(s) found in {label} number {go_quote(p)}")
            if len(p) > 1 and p[0] == "0":
                raise ValueError(f"{label.capitalize()} number must not contain leading zeroes {go_quote(p)}")
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
            raise ValueError(f"Invalid character(s) found in patch number {go_quote(patch)}")
        if len(patch) > 1 and patch[0] == "0":
            raise ValueError(f"Patch number must not contain leading zeroes {go_quote(patch)}")
        nums.append(_parse_uint64(patch))
        pre: list[tuple[bool, int | str]] = []
        for p in pre_parts:
            if not p:
                raise ValueError("Prerelease is empty")
            if all(c in _SEMVER_DIGITS for c in p):
                if len(p) > 1 and p[0] == "0":
                    raise ValueError(f"Numeric PreRelease version must not contain leading zeroes {go_quote(p)}")
                pre.append((True, _parse_uint64(p)))
            elif all(c in _SEMVER_ALNUM for c in p):
                pre.append((False, p))
            else:
                raise ValueError(f"Invalid character(s) found in prerelease {go_quote(p)}")
        for b in build:
            if not b:
                raise ValueError("Build meta data is empty")
            if not all(c in _SEMVER_ALNUM for c in b):
                raise ValueError(f"Invalid character(s) found in build meta data {go_quote(b)}")
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
        return type(other) is Semver and self.compare(other) == 0

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
