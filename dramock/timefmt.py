"""Kubernetes timestamps: the one place that formats the current time and parses a metav1.Time.

`metav1.Time` is RFC 3339 in UTC with whole seconds and a `Z` (`2026-08-26T10:00:00Z`); `metav1.MicroTime`
(Lease renew times, events.k8s.io eventTime) carries six fractional digits (`2026-08-26T10:00:00.123456Z`).
"""

from __future__ import annotations

import contextlib
import time
from datetime import UTC, datetime

SECONDS = "%Y-%m-%dT%H:%M:%SZ"
MICROS = "%Y-%m-%dT%H:%M:%S.%fZ"


def format_time(t: datetime) -> str:
    """A datetime as metav1.Time (whole seconds, UTC, `Z`)."""
    return t.astimezone(UTC).strftime(SECONDS)


class _SecondsClock:
    """The current time as metav1.Time. Formatting costs more than the rest of a small write's bookkeeping,
    and the text changes once a second: it is formatted once a second."""

    __slots__ = ("_second", "_text")

    def __init__(self) -> None:
        self._second, self._text = -1, ""

    def __call__(self) -> str:
        t = int(time.time())
        if t != self._second:
            self._second, self._text = t, datetime.fromtimestamp(t, UTC).strftime(SECONDS)
        return self._text


now = _SecondsClock()


def now_micro() -> str:
    """The current time as metav1.MicroTime."""
    return datetime.now(UTC).strftime(MICROS)


def now_nano() -> str:
    """The current time as RFC 3339 with nine fractional digits (the kubelet's container log timestamps)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


def parse_seconds(value: str | None) -> float | None:
    """A metav1.Time (or MicroTime: fractions are ignored) as seconds since the epoch; None when empty or
    unreadable."""
    if not value:
        return None
    with contextlib.suppress(ValueError):
        return datetime.strptime(value[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
    return None
