"""The scheduling queue (upstream's internal/queue): active, backoff (1s doubling to 10s) and unschedulable
pods by key "ns/name"; cluster events move unschedulable pods back, gated pods (PreEnqueue) only on an event
of the claim they wait for; pods left unschedulable are flushed back after a while."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque

log = logging.getLogger("dramock.scheduler")


INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
# Pods left unschedulable this long are retried even without a cluster event (upstream: 5 minutes).
UNSCHEDULABLE_FLUSH = 60.0


class SchedulingQueue:
    """The queues and their moves. The Scheduler is built on it (scheduler.py: Scheduler's bases)."""

    def __init__(self) -> None:
        # Queues (pod keys "ns/name").
        self.active: deque[str] = deque()
        self._active_set: set[str] = set()
        self.backoff: dict[str, float] = {}  # key -> monotonic time it may be retried
        self.unschedulable: dict[str, float] = {}  # key -> monotonic time it was parked
        self.attempts: dict[str, int] = {}
        self._backoff_until: dict[str, float] = {}
        self._wake = asyncio.Event()
        self._seq = 0  # cluster events seen; an event during a cycle sends a failed pod to backoff
        self._in_cycle: str | None = None
        self._moved_during_cycle = False
        # Keys waiting in PreEnqueue (counted as "gated", not "unschedulable") -> the claim they wait for.
        self._gated: dict[str, tuple[str, str] | None] = {}

    def _activate(self, key: str) -> None:
        self.backoff.pop(key, None)
        self.unschedulable.pop(key, None)
        if key not in self._active_set:
            self._active_set.add(key)
            self.active.append(key)
        self._wake.set()

    def _forget(self, key: str) -> None:
        self._gated.pop(key, None)
        self.backoff.pop(key, None)
        self.unschedulable.pop(key, None)
        self.attempts.pop(key, None)
        self._backoff_until.pop(key, None)
        if key in self._active_set:
            self._active_set.discard(key)
            with contextlib.suppress(ValueError):
                self.active.remove(key)

    def _backoff_duration(self, key: str) -> float:
        n = max(self.attempts.get(key, 1), 1)
        return min(INITIAL_BACKOFF * (2 ** (n - 1)), MAX_BACKOFF)

    def _to_backoff(self, key: str) -> None:
        self.unschedulable.pop(key, None)
        self._backoff_until[key] = until = time.monotonic() + self._backoff_duration(key)
        self.backoff[key] = until
        self._wake.set()

    def _to_unschedulable(self, key: str, seq: int) -> None:
        if self._seq != seq:  # something changed while this pod was being tried
            self._to_backoff(key)
        else:
            self._backoff_until[key] = time.monotonic() + self._backoff_duration(key)
            self.unschedulable[key] = time.monotonic()

    def _requeue(self, key: str) -> None:
        """Out of unschedulable: to active, or to backoff while the pod's backoff lasts."""
        self.unschedulable.pop(key, None)
        until = self._backoff_until.get(key, 0.0)
        if until > time.monotonic():
            self.backoff[key] = until
            self._wake.set()
        else:
            self._activate(key)

    def _move_all(self, reason: str, claim: tuple[str, str] | None = None) -> None:
        """A cluster event: unschedulable pods go to active (or backoff while they back off). Gated pods move
        only on an event of the claim they wait for (upstream's queueing hint for claim changes)."""
        self._seq += 1
        if not self.unschedulable:
            return
        log.debug("moving unschedulable pods: %s", reason)
        for key in list(self.unschedulable):
            if key not in self._gated or (claim is not None and self._gated[key] == claim):
                self._requeue(key)

    def _pop_ready(self) -> str | None:
        now = time.monotonic()
        for key, t in list(self.backoff.items()):
            if t <= now:
                del self.backoff[key]
                if key not in self._active_set:
                    self._active_set.add(key)
                    self.active.append(key)
        if self.active:
            key = self.active.popleft()
            self._active_set.discard(key)
            return key
        return None

    async def _flush_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await asyncio.sleep(5)
            now = time.monotonic()
            for key, t in list(self.unschedulable.items()):
                if now - t > UNSCHEDULABLE_FLUSH:
                    self._requeue(key)

    def _queued(self, key: str) -> bool:
        return key in self._active_set or key in self.backoff or key in self.unschedulable or \
            self._in_cycle == key
