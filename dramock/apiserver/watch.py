"""Watch streams: JSON lines, YAML documents or length-prefixed protobuf frames of events, served from the
in-memory history and live writes.

A watcher subscribes to its storage bucket before it takes its starting point, in the same tick, so no
write can fall between the initial state and the live events.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
from collections import deque
from collections.abc import Callable
from typing import Any

from aiohttp import HttpVersion11, web

from dramock import errors
from dramock.apiserver import codec, params, protobuf, selectors
from dramock.apiserver.rest import Call
from dramock.faults import WATCH_GONE, Rule
from dramock.registry.kind import Kind
from dramock.schemas import convert
from dramock.storage.revlog import ADDED, DELETED, MODIFIED, Compacted, Event, FutureRevision, RevisionLog

Obj = dict[str, Any]

BOOKMARK = "BOOKMARK"
ERROR = "ERROR"
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
# A watcher this far behind is cut off (the client re-lists), as upstream's cacher drops a watcher whose
# buffer stays full; a write the client does not take within WRITE_TIMEOUT ends the stream likewise.
MAX_BACKLOG = 10_000
WRITE_TIMEOUT = 10.0
DEFAULT_TIMEOUT = 1800.0


def _libc_malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


_malloc_trim = _libc_malloc_trim()


def release_memory() -> None:
    """Return freed heap memory to the system (glibc keeps it for reuse otherwise): after a big release such as
    an unresponsive watcher's buffers, the process shrinks back instead of staying at its peak."""
    if _malloc_trim is not None:
        _malloc_trim(0)


class _Unresponsive(Exception):
    """The client stopped reading: its stream is closed, not waited for."""


class Watcher:
    """One client's stream: a backlog filled by storage callbacks, drained by the response task, or, while that
    task is parked with nothing in flight (`idle`), by `deliver` from the handler's one flush per tick."""

    def __init__(self, namespace_prefix: str, match: Callable[[Obj], bool] | None,
                 on_ready: Callable[[Watcher], None] | None = None):
        self.prefix = namespace_prefix
        self.match = match
        self.backlog: deque[tuple[str, Event]] = deque()
        self.wakeup = asyncio.Event()
        self.overflow = False
        self.closed = False  # the server is shutting down: end the stream
        self.on_ready = on_ready
        self.deliver: Callable[[], None] | None = None
        self.idle = False
        self.queued = False
        self.error: BaseException | None = None  # a direct write failed: the task ends the stream with it

    def selects(self, name: str, obj: Obj | None) -> bool:
        if obj is None or (self.prefix and not name.startswith(self.prefix)):
            return False
        return self.match is None or self.match(obj)

    def transition(self, ev: Event) -> str | None:
        """The event type this watcher sees, given its selectors (None: not for this watcher)."""
        now = self.selects(ev.name, ev.obj) if ev.type != DELETED else False
        before = self.selects(ev.name, ev.prev) if ev.type != ADDED else False
        if ev.type == DELETED:
            return DELETED if before else None
        if now and before:
            return MODIFIED
        if now:
            return ADDED
        if before:
            return DELETED  # left the selector
        return None

    def __call__(self, ev: Event) -> None:
        if self.overflow:
            return
        t = self.transition(ev)
        if t is None:
            return
        if len(self.backlog) >= MAX_BACKLOG:
            self.overflow = True
            self.backlog.clear()  # nothing more will be sent: release what it pinned now
        else:
            self.backlog.append((t, ev))
            if self.idle and self.on_ready is not None:
                self.on_ready(self)
                return
        self.wakeup.set()


class WatchHandler:
    def __init__(self, store: RevisionLog, bookmark_interval: float, on_watchers: Callable[[Kind, int], None],
                 pb: protobuf.Encoder):
        self.store = store
        self.protobuf = pb
        self.bookmark_interval = bookmark_interval
        self.on_watchers = on_watchers
        self.open: set[Watcher] = set()
        self.encoded = _Encoded()
        self.ready: list[Watcher] = []

    def _ready(self, watcher: Watcher) -> None:
        """An idle watcher has events: they are written by one callback for all watchers, soon after the write
        that made them, rather than by waking each stream's task."""
        if watcher.queued:
            return
        watcher.queued = True
        self.ready.append(watcher)
        if len(self.ready) == 1:
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        ready, self.ready = self.ready, []
        for w in ready:
            w.queued = False
            if not w.idle or w.deliver is None:
                continue  # its task is running: it takes the backlog itself
            try:
                w.deliver()
            except Exception as e:  # ended in the stream's own task, not here for the other watchers
                w.error = e
                w.wakeup.set()

    def close_all(self) -> None:
        """End every open stream cleanly (clients see the response end and re-watch elsewhere), as
        kube-apiserver does on shutdown; otherwise graceful shutdown waits for each watch's timeout."""
        for w in self.open:
            w.closed = True
            w.wakeup.set()

    async def serve(self, request: web.Request, call: Call, accept: codec.Accept,
                    table: Callable[[Kind, list[Obj], bool], Obj] | None,
                    fault: Rule | None = None) -> web.StreamResponse:
        """Stream events; a `fault` (watch-close / watch-gone rule) ends the stream early, with 410 for -gone."""
        kind = call.kind
        q = call.query
        label_reqs = selectors.parse_label_selector(call.param("labelSelector"))
        field_reqs = selectors.parse_field_selector(call.param("fieldSelector"))
        selectors.check_fields(field_reqs, kind.field_value)
        if call.name:
            field_reqs.append(selectors.FieldRequirement("metadata.name", call.name, True))
        match = selectors.predicate(label_reqs, field_reqs, kind.field_value)
        rv = call.param("resourceVersion")
        rv_match = call.param("resourceVersionMatch")
        send_initial = params.query_bool(q.get("sendInitialEvents"))
        bookmarks = params.query_bool(q.get("allowWatchBookmarks"))
        if send_initial is not None:
            causes = []
            if rv_match != "NotOlderThan":
                causes.append({"reason": "FieldValueForbidden", "field": "sendInitialEvents",
                               "message": "Forbidden: sendInitialEvents is forbidden for watch unless "
                                          "resourceVersionMatch is set to NotOlderThan"})
            if send_initial and not bookmarks:
                causes.append({"reason": "FieldValueForbidden", "field": "allowWatchBookmarks",
                               "message": "Forbidden: allowWatchBookmarks must be set to true when "
                                          "sendInitialEvents is set"})
            if causes:
                raise errors.invalid("ListOptions", "meta.k8s.io", "", causes)
        elif rv_match:
            raise errors.invalid("ListOptions", "meta.k8s.io", "", [{
                "reason": "FieldValueForbidden", "field": "resourceVersionMatch",
                "message": "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                           "provided"}])
        timeout = DEFAULT_TIMEOUT
        if q.get("timeoutSeconds"):
            timeout = float(params.query_int(q["timeoutSeconds"], "timeoutSeconds")) or DEFAULT_TIMEOUT
        if fault is not None:
            timeout = min(timeout, fault.seconds("after", 0.0))
        start_rev: int | None = None
        if rv not in ("", "0") and not send_initial:
            try:
                start_rev = int(rv)
            except ValueError:
                raise errors.bad_request(f'invalid resource version "{rv}"')
        initial = send_initial if send_initial is not None else start_rev is None

        watcher = Watcher(f"{call.namespace}/" if kind.namespaced and call.namespace else "", match, self._ready)
        bucket = kind.storage_bucket
        # Subscribe and take the starting point in one tick: nothing can slip in between.
        self.store.subscribe(bucket, watcher)
        self.open.add(watcher)
        self.on_watchers(kind, 1)
        replay: list[tuple[str, Event]] = []
        error: Obj | None = None
        snapshot: list[tuple[str, Obj]] = []
        snapshot_rev = self.store.revision
        if initial:
            snapshot = [(n, o) for n, o in self.store.list(bucket, watcher.prefix) if watcher.selects(n, o)]
        elif start_rev is not None:
            try:
                for ev in self.store.events_since(start_rev, bucket):
                    t = watcher.transition(ev)
                    if t:
                        replay.append((t, ev))
            except Compacted as e:
                error = errors.too_old_resource_version(e.requested, e.oldest).status()
            except FutureRevision:
                pass  # nothing to replay yet: live events will follow

        resp = web.StreamResponse(status=200, headers={
            "Content-Type": protobuf.WATCH_MEDIA_TYPE if accept.protobuf else
            "application/yaml" if accept.yaml else "application/json",
            "Cache-Control": "no-cache, private",
            "Transfer-Encoding": "chunked"})
        for w in call.warnings:
            resp.headers.add("Warning", codec.warning_header(w))
        encoder = _Encoder(kind, accept, table, self.protobuf, self.encoded)
        try:
            await resp.prepare(request)
            deadline = asyncio.get_running_loop().time() + timeout
            if error is not None:
                await _write(resp, encoder.line(ERROR, error), deadline)
                return resp
            out = bytearray()
            for name, obj in snapshot:
                out += encoder.line(ADDED, convert.from_storage(obj, kind), self.store.encoded(bucket, name))
            for t, ev in replay:
                out += encoder.event(t, ev)
            if send_initial and bookmarks:
                out += encoder.line(BOOKMARK, _bookmark(kind, snapshot_rev, initial_end=True))
            if out:
                await _write(resp, bytes(out), deadline)
            await self._stream(request, resp, watcher, encoder, deadline, bookmarks,
                               start_rev if start_rev is not None else snapshot_rev)
            if fault is not None and fault.type == WATCH_GONE and not watcher.closed:
                await _write(resp, encoder.line(ERROR, errors.too_old_resource_version(
                    start_rev or snapshot_rev, self.store.revision).status()), deadline + WRITE_TIMEOUT)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        except _Unresponsive:
            if request.transport is not None:
                request.transport.abort()  # drop what is queued for a client that reads nothing
            watcher.overflow = True
        finally:
            if watcher.overflow:  # dropped: once its connection is gone, what it held goes back to the system
                asyncio.get_running_loop().call_later(0.5, release_memory)
            self.store.unsubscribe(bucket, watcher)
            self.open.discard(watcher)
            self.on_watchers(kind, -1)
        return resp

    async def _stream(self, request: web.Request, resp: web.StreamResponse, watcher: Watcher, encoder: _Encoder,
                      deadline: float, bookmarks: bool | None, start_rev: int) -> None:
        loop = asyncio.get_running_loop()
        send = _Sender(request, resp)

        def next_bookmark_time(now: float) -> float | None:
            # Upstream's cacher: every bookmark interval, and one 2 s before the watch times out so that the
            # client can resume from a fresh resourceVersion; none once that moment has come. Strictly later:
            # uvloop's clock has millisecond steps, so "now" can equal the moment just served.
            at = now + self.bookmark_interval
            if deadline < at:
                at = deadline - 2
            return at if at > now else None

        # One timer for the next moment due (a bookmark or the end), re-armed only when that moment changes: the
        # wait for events itself is a plain wait, with no timeout task per wake-up.
        timer: asyncio.TimerHandle | None = None
        timer_at = 0.0

        def on_timer() -> None:
            nonlocal timer
            timer = None
            watcher.wakeup.set()

        backlog = watcher.backlog

        def encode_backlog() -> bytes:
            return encoder.event(*backlog[0]) if len(backlog) == 1 else \
                b"".join([encoder.event(t, ev) for t, ev in backlog])

        def deliver() -> None:
            # Called while this task is parked with nothing in flight, so nothing can be written between.
            if watcher.overflow or watcher.closed or not backlog:
                return
            out = encode_backlog()
            if send.now(out):
                backlog.clear()
            else:
                watcher.wakeup.set()  # congested: the task writes it, under the write timeout

        watcher.deliver = deliver
        next_bookmark = next_bookmark_time(loop.time()) if bookmarks else None
        try:
            while True:
                if loop.time() >= deadline:
                    return
                due = min(deadline, next_bookmark) if next_bookmark is not None else deadline
                if timer is None or timer_at != due:
                    if timer is not None:
                        timer.cancel()
                    timer, timer_at = loop.call_at(due, on_timer), due
                watcher.idle = True
                try:
                    await watcher.wakeup.wait()
                finally:
                    watcher.idle = False
                watcher.wakeup.clear()
                if watcher.error is not None:
                    raise watcher.error
                if watcher.overflow or watcher.closed:
                    return
                out = encode_backlog()
                backlog.clear()
                if next_bookmark is not None and loop.time() >= next_bookmark:
                    # Only news: a bookmark must move the client past where its watch started.
                    if self.store.revision > start_rev:
                        out += encoder.line(BOOKMARK, _bookmark(encoder.kind, self.store.revision))
                    next_bookmark = next_bookmark_time(loop.time())
                if out:
                    await send(out, deadline)
        finally:
            watcher.deliver = None
            if timer is not None:
                timer.cancel()


class _Sender:
    """Writes a stream's chunks. A write that fits below the transport's high-water mark cannot suspend (aiohttp
    waits only for a paused transport), so it goes straight out; one to a congested transport is given the
    write timeout, after which the client counts as unresponsive.

    Straight out means onto the transport, framed as an HTTP/1.1 chunk here: aiohttp's writer would frame it the
    same way, through three more calls per event and watcher, and it keeps nothing about a chunked body but
    byte counts for its access log. Its writer still writes the headers and the last chunk."""

    def __init__(self, request: web.Request, resp: web.StreamResponse):
        self.resp = resp
        self.transport = request.transport
        self.protocol = request.protocol
        self.high = -1  # unknown limits: every write is guarded
        if self.transport is not None:
            try:
                self.high = self.transport.get_write_buffer_limits()[1]
            except (AttributeError, NotImplementedError):
                pass
        # What aiohttp's writer does with this response's body: chunks (HTTP/1.1, no compression), or not.
        self.chunked = (resp.prepared and request.version >= HttpVersion11 and not resp.compression
                        and resp.headers.get("Transfer-Encoding") == "chunked")

    def uncongested(self, size: int) -> bool:
        transport = self.transport
        return (transport is not None and not transport.is_closing() and not self.protocol.writing_paused
                and transport.get_write_buffer_size() + size <= self.high)

    async def __call__(self, data: bytes, deadline: float) -> None:
        if not self.now(data):
            await _write(self.resp, data, deadline)

    def now(self, data: bytes) -> bool:
        """Write at once, outside any task, if the transport takes it without waiting; False: it did not."""
        if not self.uncongested(len(data)):
            return False
        if self.chunked:
            self.transport.write(b"%x\r\n%b\r\n" % (len(data), data))  # type: ignore[union-attr]
            return True
        step = self.resp.write(data)
        try:
            step.send(None)  # runs to the end: below the high-water mark nothing in it waits
        except StopIteration:
            return True
        step.close()  # (never expected) left waiting for a drain: the chunk is out, the next write waits
        return True


async def _write(resp: web.StreamResponse, data: bytes, deadline: float) -> None:
    """Send, or give up on a client that has not taken it by the write timeout or the watch's own end."""
    budget = min(WRITE_TIMEOUT, deadline - asyncio.get_running_loop().time())
    try:
        await asyncio.wait_for(resp.write(data), timeout=max(budget, 0.001))
    except TimeoutError:
        raise _Unresponsive() from None


class _Encoded:
    """The encodings of the events being delivered now, shared by all watchers of the same form, so that an event
    is encoded once per form rather than once per watcher. Every watcher an event wakes was scheduled in the
    tick of the write, before the first encoding, so all of them take it before the clearing that encoding
    schedules; then the bytes pin nothing (a watcher that takes the event later encodes it for itself)."""

    def __init__(self) -> None:
        # id(event) -> (event, {(form, type): bytes}); holding the event keeps its id from being reused.
        self.by_event: dict[int, tuple[Event, dict[tuple[Any, str], bytes]]] = {}

    def of(self, ev: Event) -> dict[tuple[Any, str], bytes]:
        entry = self.by_event.get(id(ev))
        if entry is None:
            if not self.by_event:
                asyncio.get_running_loop().call_soon(self.by_event.clear)
            entry = self.by_event[id(ev)] = (ev, {})
        return entry[1]


class _Encoder:
    """Encodes watch events in the form the client negotiated (objects, Table rows, or metadata)."""

    def __init__(self, kind: Kind, accept: codec.Accept, table: Callable[[Kind, list[Obj], bool], Obj] | None,
                 pb: protobuf.Encoder, shared: _Encoded | None = None):
        self.kind = kind
        self.protobuf = pb
        self.accept = accept
        self.table = table
        self.first_table = True
        self.plain = not accept.form and not accept.yaml and not accept.protobuf and not convert.needs_conversion(kind)
        # What an event's bytes depend on besides the event and its type; None: not shared (Table rows carry
        # column definitions in a stream's first event).
        self.form: Any = None if accept.form == "Table" else "json" if self.plain else (
            kind.group, kind.version, kind.kind, accept.form, accept.version, accept.yaml, accept.protobuf)
        self.shared = shared if self.form is not None else None

    def event(self, t: str, ev: Event) -> bytes:
        shared = self.shared
        if shared is None:
            return self.line(t, convert.from_storage(ev.obj, self.kind), ev.value)
        forms = shared.of(ev)
        key = (self.form, t)
        data = forms.get(key)
        if data is None:
            data = forms[key] = self.line(t, convert.from_storage(ev.obj, self.kind), ev.value)
        return data

    def line(self, t: str, obj: Obj, encoded: str | None = None) -> bytes:
        if t in (ADDED, MODIFIED, DELETED):
            if self.plain and encoded is not None:
                return f'{{"type":"{t}","object":{encoded}}}\n'.encode()
            obj = self._transform(obj)
        if self.accept.protobuf:  # events carry stored objects; bookmarks and errors are not cached (no uid)
            return self.protobuf.watch_frame(t, obj, stored=t != ERROR)
        if self.accept.yaml:
            return (codec.to_yaml({"type": t, "object": obj}) + "---\n").encode()
        return (codec.dumps({"type": t, "object": obj}) + "\n").encode()

    def _transform(self, obj: Obj) -> Obj:
        form = self.accept.form
        if form == "Table" and self.table is not None:
            t = self.table(self.kind, [obj], self.first_table)
            self.first_table = False
            return t
        if form.startswith("PartialObjectMetadata"):
            return {"kind": "PartialObjectMetadata", "apiVersion": f"meta.k8s.io/{self.accept.version}",
                    "metadata": obj.get("metadata", {})}
        return obj


def _bookmark(kind: Kind, revision: int, initial_end: bool = False) -> Obj:
    m: Obj = {"resourceVersion": str(revision), "creationTimestamp": None}
    if initial_end:
        m["annotations"] = {INITIAL_EVENTS_END: "true"}
    return {"kind": kind.kind, "apiVersion": kind.api_version, "metadata": m}


