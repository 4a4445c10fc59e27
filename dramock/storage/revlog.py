"""A kine-style revision log on SQLAlchemy, with the watch cache in front of it.

Every write appends one row carrying a new global revision (the objects' resourceVersion). The table is
the durable truth; the process keeps the latest value of every key plus a bounded event history in
memory, so get/list/watch never touch the database.

Two ways to write, behind one interface:

- **embedded** (SQLite, the default): this process is the only writer. Writes run on the event loop
  thread without awaiting between the precondition check and the commit, so checks made against memory
  are exact, and the revision is simply the next integer.
- **shared** (any other SQL server, e.g. PostgreSQL): several API servers append to one log. The database
  decides: a sequence assigns revisions, preconditions are checked inside the write's transaction under a
  per-key lock, and a unique index on (key, previous revision) refuses a second successor of one
  revision. Memory changes only by *following* the log: every replica reads the rows after its revision
  in order (woken by LISTEN/NOTIFY, polling as the fallback), so every replica's watchers see every write
  exactly once, in revision order. A revision that stays missing (a transaction that took a number and
  rolled back, or died) is claimed with a "fill" row after `fill_delay`, so a gap never stalls watches.

History is bounded (`history` events); the database is compacted behind it in bounded batches by a
background task (`run`), never by a write. Storage knows nothing of Kubernetes kinds: a key is
(bucket, name) where the caller picks both, and the object is an opaque JSON-able dict whose version the
`stamp` callback records.
"""

from __future__ import annotations

import asyncio
import bisect
import builtins
import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from dramock import fastjson
from dramock.storage import groupcommit
from dramock.storage.errors import (
    Compacted,
    FutureRevision,
    KeyExists,
    KeyNotFound,
    RevisionConflict,
    StaleRead,
    StorageError,
    StorageFailure,
)
from dramock.storage.groupcommit import MISSING

log = logging.getLogger("dramock.storage")

Obj = dict[str, Any]

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"

# Events kept for watches and old-revision lists. A start-up replays at most this many rows.
DEFAULT_HISTORY = 10_000
# Rows the background compactor examines per step: the cost of one step is bounded by it.
COMPACT_BATCH = 2_000
NOTIFY_CHANNEL = "dramock_revlog"
_COMPACT_LOCK = 0x6472616D6F636B  # "dramock": the advisory lock only one replica's compactor holds


@dataclass(slots=True)
class Event:
    type: str  # ADDED / MODIFIED / DELETED
    bucket: str
    name: str
    revision: int
    obj: Obj  # new value; for DELETED the last value, stamped with the deletion revision
    prev: Obj | None  # value before this event (None for ADDED)
    value: str  # `obj` encoded as JSON, shared by every watcher


_metadata = sa.MetaData()
_revision_seq = sa.Sequence("revlog_revision_seq", metadata=_metadata)  # shared SQL only
_log = sa.Table(
    "revlog", _metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=False),
    sa.Column("bucket", sa.String, nullable=False),  # "" marks a fill row
    sa.Column("name", sa.String, nullable=False),
    sa.Column("created", sa.Boolean, nullable=False),
    sa.Column("deleted", sa.Boolean, nullable=False),
    # The key's previous row (0 for the first); NULL for fill rows and rows written before this column.
    sa.Column("prev_revision", sa.BigInteger().with_variant(sa.Integer, "sqlite"), nullable=True),
    sa.Column("value", sa.Text, nullable=False),
    # The database's own guarantee of conditional writes: one successor per revision of a key. In SQLite it
    # also finds a key's newest row, as every SQLite index holds the rowid (`id`).
    sa.Index("revlog_key_prev", "bucket", "name", "prev_revision", unique=True),
)
# A key's rows in order, for the shared database (PostgreSQL indexes do not hold the primary key). SQLite
# does without: one index less to write took 17 % off a commit of 5 rows.
_KEY_INDEX = "CREATE INDEX IF NOT EXISTS revlog_key ON revlog (bucket, name, id)"
_COLUMNS = (_log.c.id, _log.c.bucket, _log.c.name, _log.c.deleted, _log.c.value)
_INSERT = _log.insert()  # built once: constructing the statement per write costs more than the write
# The same insert for the embedded (SQLite) driver, rows as tuples in this column order (group commit).
_INSERT_SQL = f"INSERT INTO {_log.name} (id, bucket, name, created, deleted, prev_revision, value) " \
              "VALUES (?, ?, ?, ?, ?, ?, ?)"
_meta = sa.Table(
    "meta", _metadata,
    sa.Column("key", sa.String, primary_key=True),
    sa.Column("value", sa.BigInteger().with_variant(sa.Integer, "sqlite"), nullable=False),
)
# meta keys: the oldest revision watches may ask for (set by compact()), and how far rows were deleted.
_COMPACTED, _COMPACTED_ROWS = "compacted", "compacted_rows"

Watcher = Callable[[Event], None]


class Bucket:
    """Latest values of one bucket's keys, with a lazily sorted name list for paging.

    A value loaded at start-up stays its stored JSON text until first read (`value`): start-up then costs
    what reading the rows costs, and objects nobody reads stay small.
    """

    __slots__ = ("objects", "_sorted")

    def __init__(self) -> None:
        self.objects: dict[str, Obj | str] = {}
        self._sorted: list[str] | None = None

    def value(self, name: str) -> Obj | None:
        obj = self.objects.get(name)
        if isinstance(obj, str):
            obj = self.objects[name] = json.loads(obj)
        return obj

    def put(self, name: str, obj: Obj | str) -> None:
        if name not in self.objects:
            self._sorted = None
        self.objects[name] = obj

    def remove(self, name: str) -> None:
        if self.objects.pop(name, None) is not None:
            self._sorted = None

    def sorted_names(self) -> list[str]:
        if self._sorted is None:
            self._sorted = sorted(self.objects)
        return self._sorted


class RevisionLog:
    """The store. `stamp(obj, revision)` writes the revision into an object (the resourceVersion).

    `history`: events kept in memory (and replayed at start-up). `fill_delay`: how long a missing revision
    may stay missing before a fill row claims it (shared mode). `poll_interval`: how often a replica reads
    the log when no notification woke it (shared mode).
    """

    def __init__(self, url: str, stamp: Callable[[Obj, int], None], history: int = DEFAULT_HISTORY,
                 fill_delay: float = 1.0, poll_interval: float = 0.5):
        self._stamp = stamp
        self._history_limit = max(1, history)
        self._fill_delay = fill_delay
        self._poll_interval = poll_interval
        self.url = url
        self.shared = not url.startswith("sqlite")
        self.engine = sa.create_engine(url, future=True, pool_pre_ping=self.shared)
        if not self.shared:
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        self._buckets: dict[str, Bucket] = {}
        self._history: deque[Event] = deque()
        self._watchers: dict[str, set[Watcher]] = {}
        self._revisions: dict[tuple[str, str], int] = {}
        self._values: dict[tuple[str, str], str] = {}
        # Embedded mode: the tombstone revision of deleted keys whose rows are not compacted yet, so that a
        # re-create names its predecessor (the unique index would refuse a second "first" row otherwise).
        self._tombstones: dict[tuple[str, str], int] = {}
        self._tx: sa.Connection | None = None  # the open atomic() transaction (shared mode)
        self._batch: groupcommit.Batch | None = None  # writes waiting for their commit (embedded mode)
        self._writer: Any = None  # the DBAPI connection (pool-proxied) batches commit on (embedded mode)
        self._own: dict[int, Obj] = {}  # objects this replica wrote, until the follower applies them
        self._gap_at = 0  # the missing revision the follower waits for, and since when
        self._gap_since = 0.0
        self._closing = threading.Event()
        self.revision = 0
        self.compacted = 0  # the oldest revision watches may start from
        self.compacted_rows = 0  # how far rows have been deleted (by any replica)
        with self._db_errors():
            self._create_schema()
            self._load()

    # ---- reads (memory only) ----

    def bucket(self, bucket: str) -> Bucket:
        b = self._buckets.get(bucket)
        if b is None:
            b = self._buckets[bucket] = Bucket()
        return b

    def get(self, bucket: str, name: str) -> Obj | None:
        b = self._buckets.get(bucket)
        return b.value(name) if b else None

    def count(self, bucket: str) -> int:
        b = self._buckets.get(bucket)
        return len(b.objects) if b else 0

    def buckets(self) -> Iterable[str]:
        return self._buckets.keys()

    def list(self, bucket: str, prefix: str = "", start_after: str = "",
             at: int | None = None) -> Iterable[tuple[str, Obj]]:
        """(name, obj) pairs in name order, names starting with `prefix` and after `start_after`.

        With `at`, the bucket as it was at that revision (Compacted if history no longer reaches it).
        """
        names, value, lo, hi = self._range(bucket, prefix, start_after, at)
        for i in range(lo, hi):
            obj = value(names[i])
            assert obj is not None
            yield names[i], obj

    def page(self, bucket: str, prefix: str, start_after: str, at: int | None,
             limit: int) -> tuple[builtins.list[tuple[str, Obj]], int]:
        """The first `limit` pairs list() yields and how many more it would yield: those are counted from
        the sorted names, never read (a page of a big collection costs the page, not the collection)."""
        names, value, lo, hi = self._range(bucket, prefix, start_after, at)
        end = min(hi, lo + limit)
        items = []
        for i in range(lo, end):
            obj = value(names[i])
            assert obj is not None
            items.append((names[i], obj))
        return items, hi - end

    def _range(self, bucket: str, prefix: str, start_after: str,
               at: int | None) -> tuple[builtins.list[str], Callable[[str], Obj | None], int, int]:
        """Sorted names, a reader of their values, and the index range [lo, hi) of the names list() yields:
        those starting with `prefix`, after `start_after`."""
        b = self.bucket(bucket)
        if at is not None and at < self.revision:
            snapshot = self._snapshot(bucket, at)
            names = sorted(snapshot)

            def value(name: str) -> Obj | None:
                obj = snapshot[name]
                return b.value(name) if isinstance(obj, str) else obj
        else:
            names = b.sorted_names()
            value = b.value
        lo = bisect.bisect_left(names, max(prefix, start_after))
        if lo < len(names) and names[lo] == start_after:
            lo += 1
        # The names starting with `prefix` are the ones from `prefix` up to (not including) its successor: the
        # same string with its last character one code point higher.
        hi = bisect.bisect_left(names, prefix[:-1] + chr(ord(prefix[-1]) + 1), lo) if prefix else len(names)
        return names, value, lo, max(lo, hi)

    def _snapshot(self, bucket: str, at: int) -> dict[str, Obj | str]:
        """The bucket at revision `at`, by undoing later events from the history."""
        self.check_revision(at)
        snapshot = dict(self.bucket(bucket).objects)
        for ev in reversed(self._history):
            if ev.revision <= at:
                break
            if ev.bucket != bucket:
                continue
            if ev.prev is None:
                snapshot.pop(ev.name, None)
            else:
                snapshot[ev.name] = ev.prev
        return snapshot

    def check_revision(self, revision: int) -> None:
        if revision < self.compacted:
            raise Compacted(revision, self.compacted)
        if revision > self.revision:
            raise FutureRevision(revision, self.revision)

    def events_since(self, revision: int, bucket: str | None = None) -> builtins.list[Event]:
        """Events after `revision`, oldest first (Compacted when history no longer reaches it)."""
        self.check_revision(revision)
        out: list[Event] = []
        for ev in reversed(self._history):
            if ev.revision <= revision:
                break
            if bucket is None or ev.bucket == bucket:
                out.append(ev)
        out.reverse()
        return out

    def latest(self, bucket: str, prefix: str) -> builtins.list[tuple[Obj, int]]:
        """(object, revision) of the keys under `prefix` as the database has them now.

        Inside atomic() in shared mode this reads the database (another replica may have written since
        this one last followed the log); otherwise memory is exact.
        """
        if self._tx is None:
            return [(o, self.mod_revision(bucket, n)) for n, o in self.list(bucket, prefix)]
        newest = (sa.select(sa.func.max(_log.c.id)).where(_log.c.bucket == bucket)
                  .where(_log.c.name.startswith(prefix, autoescape=True)).group_by(_log.c.name))
        with self._db_errors():
            rows = self._tx.execute(sa.select(_log.c.id, _log.c.value).where(_log.c.id.in_(newest))
                                    .where(_log.c.deleted.is_(False)).order_by(_log.c.name)).all()
        return [(json.loads(value), rid) for rid, value in rows]

    # ---- watch registration ----

    def subscribe(self, bucket: str, watcher: Watcher) -> None:
        self._watchers.setdefault(bucket, set()).add(watcher)

    def unsubscribe(self, bucket: str, watcher: Watcher) -> None:
        self._watchers.get(bucket, set()).discard(watcher)

    def watcher_count(self, bucket: str) -> int:
        return len(self._watchers.get(bucket, ()))

    # ---- writes ----

    def create(self, bucket: str, name: str, obj: Obj, encode: Callable[[int], str] | None = None) -> Obj:
        """`encode`: the stored JSON of `obj` once stamped with a revision, prepared by the caller (e.g. off the
        event loop for a big object); by default the object is encoded here."""
        if self.shared:
            return self._write_shared(ADDED, bucket, name, obj, None, encode)
        if name in self.bucket(bucket).objects:
            raise KeyExists(name)
        prev_revision = self._tombstones.get((bucket, name), 0)
        return self._append(ADDED, bucket, name, obj, None, prev_revision, encode)

    def update(self, bucket: str, name: str, obj: Obj, expected: int | None = None,
               encode: Callable[[int], str] | None = None) -> Obj:
        if self.shared:
            return self._write_shared(MODIFIED, bucket, name, obj, expected, encode)
        prev = self._current(bucket, name, expected)
        return self._append(MODIFIED, bucket, name, obj, prev, self._revisions[(bucket, name)], encode)

    def delete(self, bucket: str, name: str, expected: int | None = None) -> Obj:
        if self.shared:
            return self._write_shared(DELETED, bucket, name, None, expected)
        prev = self._current(bucket, name, expected)
        tombstone = json.loads(json.dumps(prev))
        return self._append(DELETED, bucket, name, tombstone, prev, self._revisions[(bucket, name)])

    def _current(self, bucket: str, name: str, expected: int | None) -> Obj:
        prev = self.bucket(bucket).value(name)
        if prev is None:
            raise KeyNotFound(name)
        if expected is not None:
            current = self._revisions.get((bucket, name), 0)
            if current != expected:
                raise RevisionConflict(current)
        return prev

    def encoded(self, bucket: str, name: str) -> str | None:
        """The latest value of a key as stored JSON (saves re-encoding on list and get)."""
        return self._values.get((bucket, name))

    def mod_revision(self, bucket: str, name: str) -> int:
        return self._revisions.get((bucket, name), 0)

    def _append(self, kind: str, bucket: str, name: str, obj: Obj, prev: Obj | None, prev_revision: int,
                encode: Callable[[int], str] | None = None) -> Obj:
        """Embedded mode: this process is the only writer, so the next revision is ours to take."""
        revision = self.revision + 1
        self._stamp(obj, revision)
        value = encode(revision) if encode is not None else fastjson.dumps(obj)
        row = (revision, bucket, name, kind == ADDED, kind == DELETED, prev_revision, value)  # _INSERT_SQL's
        event = Event(kind, bucket, name, revision, obj, prev, value)
        batch = self._batch
        if batch is None:
            loop = asyncio._get_running_loop()
            if loop is None:  # no event loop (start-up tools, tests): commit on the spot
                self._commit_rows([row])
                self.revision = revision
                self._apply(event)
                return obj
            batch = self._batch = groupcommit.Batch(self.revision, loop)
            # Commits at the end of the loop's next turn: the requests read in this turn write into it too
            # (bench/apiserver.py create: 6 % less CPU per create than committing at the end of this turn).
            loop.call_soon(loop.call_soon, self.settle)
        key = (bucket, name)
        batch.undo.append((bucket, name, self.bucket(bucket).objects.get(name, MISSING),
                           self._revisions.get(key, MISSING), self._values.get(key, MISSING),
                           self._tombstones.get(key, MISSING)))
        batch.rows.append(row)
        batch.events.append(event)
        batch.note_writer()
        # Writers see it at once (the log stays serial); readers and watchers only once it is committed.
        self.revision = revision
        self._apply(event, notify=False)
        if len(batch.rows) >= groupcommit.MAX_BATCH:
            self.settle()
        return obj

    def settle(self) -> None:
        """Commit the pending batch of writes (embedded mode), then announce them to the watchers. Every read
        a client can see settles first. A batch that fails to commit is undone in memory, and its writers
        hear the failure."""
        batch, self._batch = self._batch, None
        if batch is None:
            return
        try:
            self._commit_rows(batch.rows)
        except StorageFailure as e:
            self._undo(batch)
            batch.failed(e)
            return
        for event in batch.events:
            self._notify(event)
        batch.committed()

    def _commit_rows(self, rows: builtins.list[tuple]) -> None:
        """Insert a batch's rows in one transaction on the kept writer connection, through the driver itself:
        SQLAlchemy's statement machinery cost as much as SQLite's own work for these small batches."""
        with self._db_errors():
            if self._writer is None:  # kept: a pool checkout and reset per commit cost a quarter of it
                self._writer = self.engine.raw_connection()
            raw = self._writer.driver_connection
            try:
                raw.executemany(_INSERT_SQL, rows)
                raw.commit()
            except sqlite3.Error:
                with contextlib.suppress(sqlite3.Error):
                    raw.rollback()
                self._writer.invalidate()  # a broken connection is not reused
                self._writer = None
                raise

    async def wait_durable(self, written: set[groupcommit.Batch]) -> None:
        """For a write request before it answers: wait for the batches it wrote into, and for the one pending
        now (the state it answers from may include other requests' writes in it). StorageFailure if one failed."""
        if self._batch is not None:
            written.add(self._batch)
        await groupcommit.wait_durable(written)

    def _undo(self, batch: groupcommit.Batch) -> None:
        for bucket, name, obj, revision, value, tombstone in reversed(batch.undo):
            key = (bucket, name)
            b = self.bucket(bucket)
            for store, saved in ((self._revisions, revision), (self._values, value), (self._tombstones, tombstone)):
                if saved is MISSING:
                    store.pop(key, None)
                else:
                    store[key] = saved
            if obj is MISSING:
                b.remove(name)
            else:
                b.put(name, obj)
        while self._history and self._history[-1].revision > batch.revision_before:
            self._history.pop()
        self.revision = batch.revision_before

    def atomic(self) -> contextlib.AbstractContextManager[None]:
        """Run the writes (and latest() reads) of the block in one database transaction (shared mode).

        Admission that must hold across replicas (quota charging) reads and writes inside one. Embedded,
        the block already runs without interruption on the one writer thread, so this adds nothing (and
        costs nothing: every create and update enters it).
        """
        if not self.shared or self._tx is not None:
            return _NOTHING
        return self._atomic_transaction()

    @contextlib.contextmanager
    def _atomic_transaction(self) -> Iterator[None]:
        with self._db_errors(), self.engine.begin() as conn:
            self._tx = conn
            try:
                yield
            finally:
                self._tx = None
        self.catch_up()

    def lock(self, name: str) -> None:
        """Hold a named lock until the atomic() transaction ends (shared mode; a no-op otherwise)."""
        if self._tx is not None:
            with self._db_errors():
                self._tx.execute(sa.text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"), {"k": name})

    def _write_shared(self, kind: str, bucket: str, name: str, obj: Obj | None, expected: int | None,
                      encode: Callable[[int], str] | None = None) -> Obj:
        with self._db_errors(), self._transaction() as conn:
            self.lock(f"{bucket}|{name}")
            query = sa.select(_log.c.id, _log.c.deleted, *([_log.c.value] if kind == DELETED else [])) \
                .where(_log.c.bucket == bucket).where(_log.c.name == name).order_by(_log.c.id.desc()).limit(1)
            row = conn.execute(query).first()
            live = row is not None and not row.deleted
            if kind == ADDED:
                if live:
                    raise KeyExists(name)
            else:
                if not live:
                    raise KeyNotFound(name)
                assert row is not None
                if expected is not None and row.id != expected:
                    raise RevisionConflict(row.id)
                if expected is None and row.id != self._revisions.get((bucket, name)):
                    raise StaleRead(row.id)
            # The checks passed before a revision was taken: a refused write leaves no gap in the log.
            revision = conn.execute(sa.select(_revision_seq.next_value())).scalar_one()
            if obj is None:  # a delete: the row read above holds the value
                assert row is not None
                obj = json.loads(row.value)
                encode = None
            self._stamp(obj, revision)
            value = encode(revision) if encode is not None else json.dumps(obj, separators=(",", ":"))
            try:
                conn.execute(_INSERT, {"id": revision, "bucket": bucket, "name": name, "created": kind == ADDED,
                                       "deleted": kind == DELETED,
                                       "prev_revision": row.id if row is not None else 0, "value": value})
            except sa.exc.IntegrityError:
                # Another writer got there first (or a follower filled our revision after we stalled for longer
                # than fill_delay): as a failed precondition; the whole transaction rolls back.
                if kind == ADDED:
                    raise KeyExists(name)
                raise RevisionConflict(row.id if row is not None else 0)
            conn.execute(sa.text("SELECT pg_notify(:c, :r)"), {"c": NOTIFY_CHANNEL, "r": str(revision)})
            self._own[revision] = obj
        if self._tx is None:
            self.catch_up()
        return obj

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sa.Connection]:
        if self._tx is not None:
            yield self._tx
            return
        with self.engine.begin() as conn:
            self._tx = conn
            try:
                yield conn
            finally:
                self._tx = None

    # ---- following the log (shared mode) ----

    def catch_up(self) -> None:
        """Follow the log now (shared mode), e.g. after our own commit or before a precondition check; a
        failure here leaves it to the background follower."""
        try:
            self.follow()
        except StorageError:
            log.warning("could not follow the log after a write; the background follower retries")

    def follow(self, batch: int = 1000) -> int:
        """Apply the committed rows after our revision, strictly in order. Returns how many were applied."""
        if not self.shared:
            return 0
        applied = 0
        with self._db_errors():
            while True:
                with self.engine.begin() as conn:
                    rows = conn.execute(sa.select(*_COLUMNS).where(_log.c.id > self.revision)
                                        .order_by(_log.c.id).limit(batch)).all()
                for row in rows:
                    if row.id != self.revision + 1:
                        if not self._fill_gap(row.id):
                            return applied
                        break  # filled: read again from the gap
                    self._apply_row(row)
                    applied += 1
                else:
                    if len(rows) < batch:
                        return applied

    def _fill_gap(self, next_present: int) -> bool:
        """A revision is missing below `next_present`. Wait `fill_delay` for its writer to commit, then claim
        the missing numbers with fill rows (a late writer then fails and its client retries)."""
        missing = self.revision + 1
        with self.engine.begin() as conn:
            compacted_rows = _get_meta(conn, _COMPACTED_ROWS)
        if missing <= compacted_rows:
            # Compacted away while we lagged behind: only superseded rows and tombstones go, so skip ahead.
            self.revision = min(next_present - 1, compacted_rows)
            return True
        now = time.monotonic()
        if self._gap_at != missing:
            self._gap_at, self._gap_since = missing, now
            return False
        if now - self._gap_since < self._fill_delay:
            return False
        log.info("filling revisions %d..%d that no writer committed", missing, next_present - 1)
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        rows = [{"id": r, "bucket": "", "name": "", "created": False, "deleted": False, "prev_revision": None,
                 "value": ""} for r in range(missing, next_present)]
        with self.engine.begin() as conn:
            # A writer still holding one of these numbers makes this wait for its commit; then ours is a no-op.
            conn.execute(pg_insert(_log).values(rows).on_conflict_do_nothing(index_elements=["id"]))
        self._gap_at = 0
        return True

    def _apply_row(self, row: Any) -> None:
        if row.bucket == "":  # a fill row: the revision is used up, no key changed
            self.revision = row.id
            self._own.pop(row.id, None)  # ours if our transaction took it and then rolled back
            return
        obj = self._own.pop(row.id, None)
        if obj is None:
            obj = json.loads(row.value)
        prev = self.get(row.bucket, row.name)
        if row.deleted:
            if prev is None:  # a delete of a key this replica never had (history beyond its start)
                self.revision = row.id
                return
            kind = DELETED
        else:
            kind = ADDED if prev is None else MODIFIED
        self.revision = row.id
        self._apply(Event(kind, row.bucket, row.name, row.id, obj, prev, row.value))

    # ---- applying events ----

    def _apply(self, ev: Event, notify: bool = True) -> None:
        key = (ev.bucket, ev.name)
        b = self.bucket(ev.bucket)
        if ev.type == DELETED:
            b.remove(ev.name)
            self._revisions.pop(key, None)
            self._values.pop(key, None)
            if not self.shared:
                self._tombstones[key] = ev.revision
        else:
            b.put(ev.name, ev.obj)
            self._revisions[key] = ev.revision
            self._values[key] = ev.value
            if ev.type == ADDED and self._tombstones:
                self._tombstones.pop(key, None)
        self._history.append(ev)
        if len(self._history) > self._history_limit:
            # Memory follows what watches may still ask for; the database follows in run()'s own time.
            self.compacted = self._history.popleft().revision
        if notify:
            self._notify(ev)

    def _notify(self, ev: Event) -> None:
        for w in list(self._watchers.get(ev.bucket, ())):
            w(ev)

    # ---- compaction ----

    def compact(self, revision: int) -> None:
        """Forget history up to and including `revision`; later watches from there get Compacted.

        Memory is trimmed now; the rows are deleted later by `compact_step`, a bounded batch at a time.
        """
        self.settle()  # compaction follows the committed log
        revision = min(revision, self.revision)
        if revision <= self.compacted:
            return
        while self._history and self._history[0].revision <= revision:
            self._history.popleft()
        self.compacted = revision
        with self._db_errors(), self.engine.begin() as conn:
            if _get_meta(conn, _COMPACTED) < revision:
                _set_meta(conn, _COMPACTED, revision)

    def compact_step(self, batch: int = COMPACT_BATCH) -> bool:
        """Delete superseded rows, tombstones and fill rows up to `self.compacted`, examining at most `batch`
        revisions. Only one replica compacts at a time. Returns whether more remains."""
        self.settle()
        target = self.compacted
        with self._db_errors(), self.engine.begin() as conn:
            if self.shared and not conn.execute(sa.text("SELECT pg_try_advisory_xact_lock(:k)"),
                                                {"k": _COMPACT_LOCK}).scalar():
                return False  # another replica is compacting
            done = self.compacted_rows = _get_meta(conn, _COMPACTED_ROWS)
            if done >= target:
                return False
            hi = min(target, done + batch)
            # As kine: every row in the range supersedes the row it names as previous, which goes; tombstones
            # and fill rows in the range go themselves. Each row is thus deleted once, when its successor's
            # range is compacted, and a step costs what its range holds.
            in_range = sa.and_(_log.c.id > done, _log.c.id <= hi)
            predecessors = sa.select(_log.c.prev_revision).where(in_range).where(_log.c.prev_revision > 0)
            conn.execute(_log.delete().where(_log.c.id.in_(predecessors.scalar_subquery())))
            conn.execute(_log.delete().where(in_range).where(sa.or_(_log.c.deleted.is_(True), _log.c.bucket == "")))
            _set_meta(conn, _COMPACTED_ROWS, hi)
        self.compacted_rows = hi
        if self._tombstones:
            self._tombstones = {k: r for k, r in self._tombstones.items() if r > hi}
        return hi < target

    def reclaim(self) -> None:
        """SQLite: move the WAL into the database file and truncate it, and give freed pages back."""
        if self.shared:
            return
        try:
            with self.engine.connect() as conn:
                raw = conn.connection.dbapi_connection
                assert raw is not None
                # Frees up to 4000 pages; executescript runs the pragma to its end (execute stops after a page).
                raw.executescript("PRAGMA incremental_vacuum(4000);")
                raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except Exception as e:  # disk space comes back at the next step
            log.warning("reclaiming SQLite space failed: %s", e)

    async def run(self, compaction_interval: float, maintenance_interval: float = 1.0) -> None:
        """Background work for the server's lifetime: follow the log (shared mode), compact every
        `compaction_interval` as the etcd compactor does (to the revision seen one interval earlier), delete
        compacted rows in bounded steps and reclaim disk space."""
        tasks = [asyncio.create_task(self._maintain(compaction_interval, maintenance_interval))]
        if self.shared:
            tasks.append(asyncio.create_task(self._follow_loop()))
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()

    async def _maintain(self, compaction_interval: float, maintenance_interval: float) -> None:
        last, next_compaction = self.revision, time.monotonic() + compaction_interval
        reclaimed = -1
        while True:
            await asyncio.sleep(maintenance_interval)
            try:
                if time.monotonic() >= next_compaction:
                    self.compact(last)
                    last, next_compaction = self.revision, time.monotonic() + compaction_interval
                for _ in range(10):  # at most 10 bounded steps a tick; yield to requests between them
                    if not self.compact_step():
                        break
                    await asyncio.sleep(0)
                if self.compacted_rows != reclaimed:
                    self.reclaim()
                    reclaimed = self.compacted_rows
            except StorageError:
                log.warning("storage maintenance failed; retrying in %.0fs", maintenance_interval)

    async def _follow_loop(self) -> None:
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        listener = threading.Thread(target=self._listen, args=(loop, wake), daemon=True, name="revlog-listen")
        listener.start()
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), self._poll_interval)
            wake.clear()
            try:
                self.follow()
            except StorageError:
                log.warning("following the log failed; retrying")
            if self._gap_at:  # waiting out a gap: look again soon rather than at the next poll
                await asyncio.sleep(min(self._poll_interval, self._fill_delay / 4))
                wake.set()

    def _listen(self, loop: asyncio.AbstractEventLoop, wake: asyncio.Event) -> None:
        """LISTEN on a connection of its own (a thread: psycopg blocks) and wake the follower on NOTIFY."""
        import psycopg

        conninfo = sa.engine.make_url(self.url).set(drivername="postgresql").render_as_string(hide_password=False)
        while not self._closing.is_set():
            try:
                with psycopg.connect(conninfo, autocommit=True) as conn:
                    conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    loop.call_soon_threadsafe(wake.set)  # catch up on anything before LISTEN
                    while not self._closing.is_set():
                        for _ in conn.notifies(timeout=1.0, stop_after=1):
                            loop.call_soon_threadsafe(wake.set)
            except Exception as e:  # the poll keeps following meanwhile
                log.warning("LISTEN connection failed (%s); polling until it is back", type(e).__name__)
                self._closing.wait(1.0)

    # ---- startup ----

    def _create_schema(self) -> None:
        with self.engine.begin() as conn:
            if self.shared:  # replicas starting together must not race on DDL
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _COMPACT_LOCK + 1})
            _metadata.create_all(conn)
            columns = {c["name"] for c in sa.inspect(conn).get_columns("revlog")}
            if "prev_revision" not in columns:  # a database from before conditional writes were indexed
                conn.execute(sa.text("ALTER TABLE revlog ADD COLUMN prev_revision BIGINT"))
                # Once: every row names the key's row before it (what compaction deletes by), 0 for the first.
                conn.execute(sa.text(
                    "UPDATE revlog SET prev_revision = COALESCE((SELECT max(p.id) FROM revlog p WHERE "
                    "p.bucket = revlog.bucket AND p.name = revlog.name AND p.id < revlog.id), 0)"))
                for index in _log.indexes:
                    index.create(conn, checkfirst=True)
            conn.execute(sa.text(_KEY_INDEX if self.shared else "DROP INDEX IF EXISTS revlog_key"))
            if self.shared:
                # The sequence must be ahead of every revision already in the table (e.g. an older database).
                top = conn.execute(sa.select(sa.func.max(_log.c.id))).scalar() or 0
                if top:
                    conn.execute(sa.text("SELECT setval('revlog_revision_seq', :top) "
                                         "WHERE (SELECT last_value FROM revlog_revision_seq) < :top"), {"top": top})

    def _load(self) -> None:
        """The latest state plus at most `history` events: cost bounded by live keys and the history size."""
        with self.engine.begin() as conn:  # one read transaction: a consistent snapshot
            compacted = max(_get_meta(conn, _COMPACTED), _get_meta(conn, _COMPACTED_ROWS))
            top = conn.execute(sa.select(sa.func.max(_log.c.id))).scalar() or 0
            base = max(compacted, top - self._history_limit)
            # The state at `base`: the newest row of every key at or below it (tombstones remembered).
            newest = (sa.select(sa.func.max(_log.c.id)).where(_log.c.id <= base)
                      .group_by(_log.c.bucket, _log.c.name))
            for rid, bucket, name, deleted, value in conn.execute(
                    sa.select(*_COLUMNS).where(_log.c.id.in_(newest)).where(_log.c.bucket != "")):
                if deleted:
                    if not self.shared:
                        self._tombstones[(bucket, name)] = rid
                    continue
                self.bucket(bucket).put(name, value)  # decoded when first read
                self._revisions[(bucket, name)] = rid
                self._values[(bucket, name)] = value
            self.revision = self.compacted = base
            for row in conn.execute(sa.select(*_COLUMNS).where(_log.c.id > base).order_by(_log.c.id)):
                if self.shared and row.id != self.revision + 1:
                    break  # a gap: the follower waits it out (or fills it) once we run
                if self.shared:
                    self._apply_row(row)
                    continue
                obj = json.loads(row.value)
                prev = self.get(row.bucket, row.name)
                if row.deleted:
                    kind = DELETED
                else:
                    kind = ADDED if prev is None else MODIFIED
                self.revision = row.id
                self._apply(Event(kind, row.bucket, row.name, row.id, obj, prev, row.value), notify=False)
            if not self.shared:
                self.revision = max(self.revision, top)
        self.compacted = max(self.compacted, base)

    @contextlib.contextmanager
    def _db_errors(self) -> Iterator[None]:
        """Database errors become StorageFailure: the client hears that storage failed, the log hears why."""
        try:
            yield
        except (sa.exc.SQLAlchemyError, sqlite3.Error) as e:  # sqlite3's own: the group commit's driver calls
            log.error("database error: %s", e)
            reason = "the storage backend is unavailable" if isinstance(
                e, (sa.exc.OperationalError, sa.exc.InterfaceError, sa.exc.DisconnectionError,
                    sqlite3.OperationalError, sqlite3.InterfaceError)) \
                else "the storage backend failed"
            raise StorageFailure(f"{reason} (see the API server log)") from None

    def close(self) -> None:
        self.settle()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self._closing.set()
        self.engine.dispose()


def _get_meta(conn: sa.Connection, key: str) -> int:
    return conn.execute(sa.select(_meta.c.value).where(_meta.c.key == key)).scalar() or 0


def _set_meta(conn: sa.Connection, key: str, value: int) -> None:
    upd = conn.execute(_meta.update().where(_meta.c.key == key).values(value=value))
    if upd.rowcount == 0:
        conn.execute(_meta.insert().values(key=key, value=value))


_NOTHING = contextlib.nullcontext()  # atomic() where the block needs no transaction of its own


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    # Set before the first table exists: compacted pages can then be given back (incremental_vacuum).
    cur.execute("PRAGMA auto_vacuum=INCREMENTAL")
    # WAL + synchronous=NORMAL: a committed write is in the WAL file before the client hears of it,
    # so it survives the process being killed (only a power loss could lose the last commits).
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    # After a checkpoint the WAL file is cut back to this size instead of keeping its largest size.
    cur.execute("PRAGMA journal_size_limit=16777216")
    cur.close()


def sqlite_url(data_dir: str) -> str:
    os.makedirs(data_dir, exist_ok=True)
    return "sqlite:///" + os.path.join(os.path.abspath(data_dir), "dramock.db")
