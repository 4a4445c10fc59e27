"""Group commit for the embedded (single-writer) revision log.

A write is checked and applied to memory at once, on the event loop thread, as before; its row joins the
open batch, and the batch commits in one transaction at the end of the loop's next turn. The requests
handled in those two turns then share one commit, the largest cost of a small write.

What stays true:
- **acknowledged = durable.** A request that wrote waits for its batches (`wait_durable`) before it
  answers; if a batch fails to commit, its writes are undone in memory and each writer answers with
  the storage error.
- **readers never see an uncommitted write.** Memory runs ahead of the database only until the batch
  commits, and nothing outside the writing requests looks at memory in that time: a read first commits
  what is pending (`RevisionLog.settle`), and watchers hear of a write only once it is committed.
- **writes stay serial.** Preconditions are still checked against memory, which includes the pending
  writes, so the order of the log is the order the writes were accepted in.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

from dramock.storage.errors import StorageFailure

# The batches the current request has written into; None outside a tracked request (e.g. start-up).
_written: contextvars.ContextVar[set[Batch] | None] = contextvars.ContextVar("dramock_written", default=None)

# Rows one commit takes at most: beyond this, the cost a commit saves no longer pays for the wait of the
# batch's first writer.
MAX_BATCH = 64
MISSING = object()  # in an undo record: the key had no such entry


class Batch:
    """Writes waiting for one commit: their rows, their events (announced once committed) and what
    memory held before each of them (restored if the commit fails)."""

    __slots__ = ("rows", "events", "undo", "revision_before", "loop", "outcome", "waiters")

    def __init__(self, revision_before: int, loop: asyncio.AbstractEventLoop):
        self.rows: list[tuple] = []
        self.events: list[Any] = []
        self.undo: list[tuple[str, str, Any, Any, Any, Any]] = []  # bucket, name, object, revision, JSON, tombstone
        self.revision_before = revision_before
        self.loop = loop
        self.outcome: bool | StorageFailure | None = None  # None until committed (True) or failed
        # One future per waiting request, rather than one shared future each request would have to shield from
        # its own cancellation (asyncio.shield cost more than the rest of the wait).
        self.waiters: list[asyncio.Future[None]] = []

    def note_writer(self) -> None:
        """Record this batch for the request that is writing into it (if it is tracked)."""
        written = _written.get()
        if written is not None:
            written.add(self)

    def committed(self) -> None:
        self.outcome = True
        for waiter in self.waiters:
            if not waiter.done():  # a request that went away cancelled its own
                waiter.set_result(None)

    def failed(self, error: StorageFailure) -> None:
        self.outcome = error
        for waiter in self.waiters:
            if not waiter.done():
                waiter.set_exception(error)


class track_writes:  # noqa: N801 - used as a context manager, like a function
    """Collect the batches written into while the block runs (one request): `wait_durable` waits for them.
    A class rather than a generator: it wraps every write request."""

    __slots__ = ("written", "_token")

    def __enter__(self) -> set[Batch]:
        self.written: set[Batch] = set()
        self._token = _written.set(self.written)
        return self.written

    def __exit__(self, *_exc: object) -> None:
        _written.reset(self._token)


async def wait_durable(written: set[Batch]) -> None:
    """Return once every batch is committed; raise StorageFailure if one of them failed to commit."""
    for batch in written:
        if batch.outcome is None:
            waiter = batch.loop.create_future()
            batch.waiters.append(waiter)
            await waiter
        elif isinstance(batch.outcome, StorageFailure):
            raise batch.outcome
