"""Group commit of the embedded revision log: writes made in one or two turns of the event loop share a commit,
readers and watchers see only committed writes, and a failed commit leaves no trace in memory."""

import asyncio
import sqlite3

import pytest

from dramock.storage.errors import KeyExists, StorageFailure
from dramock.storage.groupcommit import MAX_BATCH, track_writes
from dramock.storage.revlog import ADDED, MODIFIED, RevisionLog


def stamp(obj, rev):
    obj["rv"] = rev


@pytest.fixture
def db(tmp_path):
    return tmp_path / "t.db"


def committed_rows(db) -> list[tuple[int, str]]:
    """What another connection (a restart) would find: the committed rows."""
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT id, name FROM revlog ORDER BY id").fetchall()


def test_writes_in_one_turn_commit_together_and_watchers_hear_after_the_commit(db):
    async def scenario():
        s = RevisionLog(f"sqlite:///{db}", stamp)
        seen = []
        s.subscribe("b", lambda ev: seen.append((ev.type, ev.name, ev.revision, len(committed_rows(db)))))
        with track_writes() as written:
            s.create("b", "x", {})
            s.create("b", "y", {})
            s.update("b", "x", {"n": 1})
            # Accepted: writers already see them (the log stays serial) ...
            assert s.get("b", "x") == {"n": 1, "rv": 3} and s.revision == 3
            with pytest.raises(KeyExists):
                s.create("b", "y", {})
            # ... but nothing is committed or announced before the end of the next turn.
            assert committed_rows(db) == [] and seen == []
            assert len(written) == 1
            await s.wait_durable(written)
        assert committed_rows(db) == [(1, "x"), (2, "y"), (3, "x")]
        # Announced in order, each once every row of the batch was committed.
        assert seen == [(ADDED, "x", 1, 3), (ADDED, "y", 2, 3), (MODIFIED, "x", 3, 3)]
        s.close()
    asyncio.run(scenario())


def test_a_write_in_the_next_turn_joins_the_batch(db):
    async def scenario():
        s = RevisionLog(f"sqlite:///{db}", stamp)
        seen = []
        s.subscribe("b", lambda ev: seen.append((ev.name, len(committed_rows(db)))))
        with track_writes() as written:
            s.create("b", "x", {})
            await asyncio.sleep(0)  # the next turn of the loop
            assert committed_rows(db) == []
            s.create("b", "y", {})
            await s.wait_durable(written)
        # One commit: when the first event was announced, both rows were already in.
        assert seen == [("x", 2), ("y", 2)]
        s.close()
    asyncio.run(scenario())


def test_a_read_settles_what_is_pending(db):
    async def scenario():
        s = RevisionLog(f"sqlite:///{db}", stamp)
        s.create("b", "x", {})
        assert committed_rows(db) == []
        s.settle()  # what every read request does first
        assert committed_rows(db) == [(1, "x")]
        s.settle()  # nothing pending: nothing happens
        assert committed_rows(db) == [(1, "x")]
        s.close()
    asyncio.run(scenario())


def test_a_failed_commit_is_undone_in_memory_and_every_writer_hears_it(db):
    async def scenario():
        s = RevisionLog(f"sqlite:///{db}", stamp)
        with track_writes() as written:
            s.create("b", "keep", {"v": 1})
            await s.wait_durable(written)
        seen = []
        s.subscribe("b", seen.append)
        with track_writes() as first:
            s.update("b", "keep", {"v": 2})
            s.create("b", "new", {})
        with track_writes() as second:
            s.delete("b", "keep")
        # The database refuses the commit (another process broke the table).
        with sqlite3.connect(db) as conn:
            conn.execute("ALTER TABLE revlog RENAME TO gone")
        for written in (first, second):
            with pytest.raises(StorageFailure):
                await s.wait_durable(written)
        # Memory is as before the batch: values, revision, history; no watcher heard of it.
        assert s.get("b", "keep") == {"v": 1, "rv": 1} and s.get("b", "new") is None
        assert s.revision == 1 and [n for n, _ in s.list("b")] == ["keep"]
        assert s.events_since(0) and [e.revision for e in s.events_since(0)] == [1]
        assert seen == []
        with sqlite3.connect(db) as conn:
            conn.execute("ALTER TABLE gone RENAME TO revlog")
        # Storage is back: the next writes carry on from the last committed revision.
        with track_writes() as written:
            assert s.create("b", "new", {})["rv"] == 2
            await s.wait_durable(written)
        assert committed_rows(db) == [(1, "keep"), (2, "new")]
        s.close()
    asyncio.run(scenario())


def test_a_writer_that_goes_away_does_not_take_the_commit_with_it(db):
    """Writers of one batch wait for it each on their own: cancelling one (its client went away) leaves the
    others' wait and the commit alone; a wait that starts after the commit returns at once."""
    async def scenario():
        s = RevisionLog(f"sqlite:///{db}", stamp)

        async def write(name: str) -> int:
            with track_writes() as written:
                rv = s.create("b", name, {})["rv"]
                await s.wait_durable(written)
            return rv

        gone, staying = asyncio.create_task(write("gone")), asyncio.create_task(write("staying"))
        await asyncio.sleep(0)  # both wrote into the pending batch and wait
        assert committed_rows(db) == []
        gone.cancel()
        assert await staying == 2
        with pytest.raises(asyncio.CancelledError):
            await gone
        assert committed_rows(db) == [(1, "gone"), (2, "staying")]  # accepted writes commit regardless
        with track_writes() as written:
            s.create("b", "later", {})
        deadline = asyncio.get_running_loop().time() + 5
        while len(committed_rows(db)) < 3:  # committed before anyone waits for it
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.001)
        await asyncio.wait_for(s.wait_durable(written), 1)
        s.close()
    asyncio.run(scenario())


def test_a_full_batch_commits_at_once(db):
    async def scenario():
        s = RevisionLog(f"sqlite:///{db}", stamp)
        for i in range(MAX_BATCH + 1):
            s.create("b", f"k{i:03}", {})
        assert len(committed_rows(db)) == MAX_BATCH  # the last one waits for the end of the next turn
        s.settle()
        assert len(committed_rows(db)) == MAX_BATCH + 1
        s.close()
    asyncio.run(scenario())


def test_without_an_event_loop_each_write_commits_on_the_spot(db):
    s = RevisionLog(f"sqlite:///{db}", stamp)
    seen = []
    s.subscribe("b", seen.append)
    s.create("b", "x", {})
    assert committed_rows(db) == [(1, "x")] and len(seen) == 1
    s.close()


def test_closing_commits_what_is_pending(db):
    async def scenario():
        s = RevisionLog(f"sqlite:///{db}", stamp)
        s.create("b", "x", {})
        s.close()
    asyncio.run(scenario())
    assert committed_rows(db) == [(1, "x")]
