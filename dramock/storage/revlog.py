"""A kine-style revision log on SQLAlchemy, with the watch cache in front of it.

Every write appends one row carrying a new global revision (the objects' resourceVersion). The table is
the durable truth; the process keeps the latest value of every key plus the event history since the
last compaction in memory, so get/list/watch never touch the database. Writes are serialized: they run
on the event loop thread without awaiting between the precondition check and the commit, so checks made
against the in-memory state are exact.

Storage knows nothing of Kubernetes kinds: a key is (bucket, name) where the caller picks both, and the
object is an opaque JSON-able dict whose version the `stamp` callback records.
"""

from __future__ import annotations

import bisect
import json
import os
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

Obj = dict[str, Any]

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


class StorageError(Exception):
    pass


class KeyExists(StorageError):
    pass


class KeyNotFound(StorageError):
    pass


class RevisionConflict(StorageError):
    """The caller's expected revision is not the key's current revision."""

    def __init__(self, current: int):
        super().__init__(f"current revision is {current}")
        self.current = current


class Compacted(StorageError):
    """The requested revision is older than the oldest revision still kept."""

    def __init__(self, requested: int, oldest: int):
        super().__init__(f"revision {requested} is compacted (oldest {oldest})")
        self.requested = requested
        self.oldest = oldest


class FutureRevision(StorageError):
    def __init__(self, requested: int, current: int):
        super().__init__(f"revision {requested} is newer than the current revision {current}")
        self.requested = requested
        self.current = current


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
_log = sa.Table(
    "revlog", _metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("bucket", sa.String, nullable=False),
    sa.Column("name", sa.String, nullable=False),
    sa.Column("created", sa.Boolean, nullable=False),
    sa.Column("deleted", sa.Boolean, nullable=False),
    sa.Column("value", sa.Text, nullable=False),
    sa.Index("revlog_key", "bucket", "name", "id"),
)
_INSERT = _log.insert()  # built once: constructing the statement per write costs more than the write
_meta = sa.Table(
    "meta", _metadata,
    sa.Column("key", sa.String, primary_key=True),
    sa.Column("value", sa.Integer, nullable=False),
)

Watcher = Callable[[Event], None]


class Bucket:
    """Latest values of one bucket's keys, with a lazily sorted name list for paging."""

    __slots__ = ("objects", "_sorted")

    def __init__(self) -> None:
        self.objects: dict[str, Obj] = {}
        self._sorted: list[str] | None = None

    def put(self, name: str, obj: Obj) -> None:
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
    """The store. `stamp(obj, revision)` writes the revision into an object (the resourceVersion)."""

    def __init__(self, url: str, stamp: Callable[[Obj, int], None], history: int = 100_000):
        self._stamp = stamp
        self._history_limit = history
        self.engine = sa.create_engine(url, future=True)
        if url.startswith("sqlite"):
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        _metadata.create_all(self.engine)
        self._conn = self.engine.connect()
        self._buckets: dict[str, Bucket] = {}
        self._history: deque[Event] = deque()
        self._watchers: dict[str, set[Watcher]] = {}
        self.revision = 0
        self.compacted = 0
        self._load()

    # ---- reads (memory only) ----

    def bucket(self, bucket: str) -> Bucket:
        b = self._buckets.get(bucket)
        if b is None:
            b = self._buckets[bucket] = Bucket()
        return b

    def get(self, bucket: str, name: str) -> Obj | None:
        b = self._buckets.get(bucket)
        return b.objects.get(name) if b else None

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
        if at is not None and at < self.revision:
            snapshot = self._snapshot(bucket, at)
            names = sorted(snapshot)
            objects = snapshot
        else:
            b = self.bucket(bucket)
            names = b.sorted_names()
            objects = b.objects
        lo = bisect.bisect_left(names, max(prefix, start_after))
        for i in range(lo, len(names)):
            name = names[i]
            if not name.startswith(prefix):
                break
            if name == start_after:
                continue
            yield name, objects[name]

    def _snapshot(self, bucket: str, at: int) -> dict[str, Obj]:
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

    def events_since(self, revision: int, bucket: str | None = None) -> list[Event]:
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

    # ---- watch registration ----

    def subscribe(self, bucket: str, watcher: Watcher) -> None:
        self._watchers.setdefault(bucket, set()).add(watcher)

    def unsubscribe(self, bucket: str, watcher: Watcher) -> None:
        self._watchers.get(bucket, set()).discard(watcher)

    def watcher_count(self, bucket: str) -> int:
        return len(self._watchers.get(bucket, ()))

    # ---- writes ----

    def create(self, bucket: str, name: str, obj: Obj) -> Obj:
        if name in self.bucket(bucket).objects:
            raise KeyExists(name)
        return self._append(ADDED, bucket, name, obj, None)

    def update(self, bucket: str, name: str, obj: Obj, expected: int | None = None) -> Obj:
        prev = self._current(bucket, name, expected)
        return self._append(MODIFIED, bucket, name, obj, prev)

    def delete(self, bucket: str, name: str, expected: int | None = None) -> Obj:
        prev = self._current(bucket, name, expected)
        tombstone = json.loads(json.dumps(prev))
        return self._append(DELETED, bucket, name, tombstone, prev)

    def _current(self, bucket: str, name: str, expected: int | None) -> Obj:
        prev = self.bucket(bucket).objects.get(name)
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

    def _append(self, kind: str, bucket: str, name: str, obj: Obj, prev: Obj | None) -> Obj:
        revision = self.revision + 1
        self._stamp(obj, revision)
        value = json.dumps(obj, separators=(",", ":"))
        with self._conn.begin():
            self._conn.execute(_INSERT, {"id": revision, "bucket": bucket, "name": name,
                                         "created": kind == ADDED, "deleted": kind == DELETED, "value": value})
        # Committed: only now does memory (and so every reader and watcher) see it.
        self.revision = revision
        self._apply(Event(kind, bucket, name, revision, obj, prev, value))
        return obj

    def _apply(self, ev: Event, notify: bool = True) -> None:
        b = self.bucket(ev.bucket)
        if ev.type == DELETED:
            b.remove(ev.name)
            self._revisions.pop((ev.bucket, ev.name), None)
            self._values.pop((ev.bucket, ev.name), None)
        else:
            b.put(ev.name, ev.obj)
            self._revisions[(ev.bucket, ev.name)] = ev.revision
            self._values[(ev.bucket, ev.name)] = ev.value
        self._history.append(ev)
        if len(self._history) > self._history_limit:
            self.compact(self._history[len(self._history) - self._history_limit].revision - 1)
        if notify:
            for w in list(self._watchers.get(ev.bucket, ())):
                w(ev)

    # ---- compaction ----

    def compact(self, revision: int) -> None:
        """Forget history up to and including `revision`; later watches from there get Compacted."""
        revision = min(revision, self.revision)
        if revision <= self.compacted:
            return
        while self._history and self._history[0].revision <= revision:
            self._history.popleft()
        with self._conn.begin():
            # Keep the newest live row of every key; drop superseded rows and tombstones.
            newest = (sa.select(sa.func.max(_log.c.id)).where(_log.c.id <= revision)
                      .group_by(_log.c.bucket, _log.c.name))
            self._conn.execute(_log.delete().where(_log.c.id <= revision).where(
                sa.or_(_log.c.id.not_in(newest), _log.c.deleted.is_(True))))
            self._set_meta("compacted", revision)
        self.compacted = revision

    def _set_meta(self, key: str, value: int) -> None:
        upd = self._conn.execute(_meta.update().where(_meta.c.key == key).values(value=value))
        if upd.rowcount == 0:
            self._conn.execute(_meta.insert().values(key=key, value=value))

    # ---- startup ----

    def _load(self) -> None:
        self._revisions: dict[tuple[str, str], int] = {}
        self._values: dict[tuple[str, str], str] = {}
        row = self._conn.execute(sa.select(_meta.c.value).where(_meta.c.key == "compacted")).first()
        self.compacted = row[0] if row else 0
        rows = self._conn.execute(
            sa.select(_log.c.id, _log.c.bucket, _log.c.name, _log.c.created, _log.c.deleted, _log.c.value)
            .order_by(_log.c.id))
        for rid, bucket, name, created, deleted, value in rows:
            obj = json.loads(value)
            prev = self.bucket(bucket).objects.get(name)
            if rid <= self.compacted:
                # Rows kept through compaction are state, not history.
                self.bucket(bucket).put(name, obj)
                self._revisions[(bucket, name)] = rid
                self._values[(bucket, name)] = value
            else:
                kind = DELETED if deleted else (ADDED if created or prev is None else MODIFIED)
                self._apply(Event(kind, bucket, name, rid, obj, prev, value), notify=False)
            self.revision = max(self.revision, rid)
        self.revision = max(self.revision, self.compacted)
        self._conn.commit()

    def close(self) -> None:
        self._conn.close()
        self.engine.dispose()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    # WAL + synchronous=NORMAL: a committed write is in the WAL file before the client hears of it,
    # so it survives the process being killed (only a power loss could lose the last commits).
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def sqlite_url(data_dir: str) -> str:
    os.makedirs(data_dir, exist_ok=True)
    return "sqlite:///" + os.path.join(os.path.abspath(data_dir), "dramock.db")
