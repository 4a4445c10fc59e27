"""Retrying a read-modify-write on conflict, as client-go's `util/retry` does.

`retry_on_conflict(fn)` calls `fn` again while it fails with 409 Conflict, sleeping between attempts as
`wait.Backoff` does: `steps` calls at most; each sleep is `duration` scaled by `factor` after every step,
plus up to `jitter` x duration at random. When the attempts run out, the last conflict is raised.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from dramock.client.rest import APIStatusError

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    steps: int
    duration: float  # seconds
    factor: float = 1.0
    jitter: float = 0.0

    def sleeps(self) -> list[float]:
        """The pauses between the `steps` attempts (one fewer than the attempts), jitter applied."""
        out, d = [], self.duration
        for _ in range(max(self.steps - 1, 0)):
            out.append(d + (random.random() * self.jitter * d if self.jitter > 0 else 0.0))
            d *= self.factor
        return out


# client-go's retry.DefaultRetry: for a conflict with another writer of the same object.
DEFAULT_RETRY = Backoff(steps=5, duration=0.010, factor=1.0, jitter=0.1)
# client-go's retry.DefaultBackoff: for a conflict with controllers actively managing the object.
DEFAULT_BACKOFF = Backoff(steps=4, duration=0.010, factor=5.0, jitter=0.1)


def is_conflict(e: BaseException) -> bool:
    return isinstance(e, APIStatusError) and e.code == 409


async def on_error(backoff: Backoff, retriable: Callable[[BaseException], bool],
                   fn: Callable[[], Awaitable[T]]) -> T:
    """Call `fn` until it returns, retrying errors `retriable` accepts with `backoff`; the last such error is
    raised when the attempts are spent, any other error at once."""
    pauses = backoff.sleeps()
    for attempt in range(max(backoff.steps, 1)):
        try:
            return await fn()
        except Exception as e:
            if not retriable(e) or attempt >= len(pauses):
                raise
        await asyncio.sleep(pauses[attempt])
    raise AssertionError("unreachable")


async def retry_on_conflict(fn: Callable[[], Awaitable[T]], backoff: Backoff = DEFAULT_RETRY) -> T:
    """`fn` (which reads the object afresh and writes it) until it does not fail with a 409 Conflict."""
    return await on_error(backoff, is_conflict, fn)
