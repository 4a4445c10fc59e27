"""The revision log: global revisions, conditional writes, tombstones, history, compaction, restart."""

import pytest

from dramock.storage.revlog import (
    ADDED,
    DELETED,
    MODIFIED,
    Compacted,
    KeyExists,
    KeyNotFound,
    RevisionConflict,
    RevisionLog,
)


def stamp(obj, rev):
    obj["rv"] = rev


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path}/t.db"


def test_revisions_are_global_and_strictly_increasing(url):
    s = RevisionLog(url, stamp)
    a = s.create("b1", "x", {"v": 1})
    b = s.create("b2", "x", {"v": 1})
    c = s.update("b1", "x", {"v": 2})
    assert (a["rv"], b["rv"], c["rv"]) == (1, 2, 3)
    assert s.revision == 3
    assert s.get("b1", "x") == {"v": 2, "rv": 3}


def test_conditional_writes(url):
    s = RevisionLog(url, stamp)
    s.create("b", "x", {})
    with pytest.raises(KeyExists):
        s.create("b", "x", {})
    with pytest.raises(RevisionConflict):
        s.update("b", "x", {}, expected=99)
    s.update("b", "x", {"n": 1}, expected=1)
    with pytest.raises(RevisionConflict):
        s.delete("b", "x", expected=1)
    s.delete("b", "x", expected=2)
    with pytest.raises(KeyNotFound):
        s.update("b", "x", {})
    assert s.get("b", "x") is None


def test_history_replays_exactly_later_events_with_tombstones(url):
    s = RevisionLog(url, stamp)
    s.create("b", "x", {"n": 0})
    s.update("b", "x", {"n": 1})
    s.create("other", "y", {})
    s.delete("b", "x")
    evs = s.events_since(1, "b")
    assert [(e.type, e.revision) for e in evs] == [(MODIFIED, 2), (DELETED, 4)]
    assert evs[-1].obj["n"] == 1 and evs[-1].obj["rv"] == 4  # tombstone carries the last value


def test_list_at_old_revision_and_paging(url):
    s = RevisionLog(url, stamp)
    for i in range(5):
        s.create("b", f"ns/o{i}", {"i": i})
    s.delete("b", "ns/o1")
    s.update("b", "ns/o2", {"i": 22})
    assert [n for n, _ in s.list("b", "ns/")] == ["ns/o0", "ns/o2", "ns/o3", "ns/o4"]
    at5 = dict(s.list("b", "ns/", at=5))
    assert sorted(at5) == ["ns/o0", "ns/o1", "ns/o2", "ns/o3", "ns/o4"] and at5["ns/o2"]["i"] == 2
    assert [n for n, _ in s.list("b", "ns/", start_after="ns/o2")] == ["ns/o3", "ns/o4"]


def test_compaction_makes_old_revisions_gone_and_survives_restart(url):
    s = RevisionLog(url, stamp)
    for i in range(10):
        s.create("b", f"k{i}", {})
    s.delete("b", "k0")
    s.compact(8)
    with pytest.raises(Compacted):
        s.events_since(3)
    assert [e.revision for e in s.events_since(8)] == [9, 10, 11]
    s.close()
    s2 = RevisionLog(url, stamp)
    assert s2.revision == 11 and s2.compacted == 8
    assert s2.get("b", "k0") is None and s2.get("b", "k9") == {"rv": 10}
    with pytest.raises(Compacted):
        s2.events_since(7)
    assert [e.type for e in s2.events_since(8)] == [ADDED, ADDED, DELETED]
    assert s2.create("b", "new", {})["rv"] == 12


def test_revision_never_goes_backwards_after_deleting_everything(url):
    s = RevisionLog(url, stamp)
    s.create("b", "x", {})
    s.delete("b", "x")
    s.compact(2)
    s.close()
    s2 = RevisionLog(url, stamp)
    assert s2.revision == 2
    assert s2.create("b", "x", {})["rv"] == 3


def test_watchers_are_called_in_revision_order(url):
    s = RevisionLog(url, stamp)
    seen = []
    s.subscribe("b", lambda ev: seen.append((ev.type, ev.revision)))
    s.create("b", "x", {})
    s.create("c", "x", {})
    s.update("b", "x", {})
    assert seen == [(ADDED, 1), (MODIFIED, 3)]


def test_restart_after_more_writes_than_the_history_limit(url):
    """The old start-up compacted inside its own read transaction and crashed once the log passed the limit."""
    s = RevisionLog(url, stamp, history=5)
    for i in range(40):
        key = f"k{i % 7}"
        s.create("b", key, {"i": i}) if s.get("b", key) is None else s.update("b", key, {"i": i})
    s.delete("b", "k3")
    s.close()
    s2 = RevisionLog(url, stamp, history=5)
    assert s2.revision == 41 and s2.compacted == 36
    assert s2.get("b", "k3") is None and s2.get("b", "k4") == {"i": 39, "rv": 40}
    assert [e.revision for e in s2.events_since(36)] == [37, 38, 39, 40, 41]
    with pytest.raises(Compacted):
        s2.events_since(35)
    # A key deleted before the replayed history can be created again (its tombstone is remembered).
    assert s2.create("b", "k3", {})["rv"] == 42
    s2.close()


def test_compaction_is_bounded_batches_and_survives_restart(url):
    s = RevisionLog(url, stamp, history=10)
    s.create("b", "x", {"n": 0})
    for n in range(1, 100):
        s.update("b", "x", {"n": n})
    s.create("b", "gone", {})
    s.delete("b", "gone")
    assert s.compacted == 92  # memory already follows the history limit
    steps = 0
    while s.compact_step(batch=25):
        steps += 1
    assert steps == 3  # 92 revisions, 25 a step: 4 steps, the last reporting nothing more
    with s.engine.connect() as c:
        ids = [r[0] for r in c.exec_driver_sql("SELECT id FROM revlog ORDER BY id")]
    assert ids == list(range(92, 103))  # the newest row of x at or below 92, then the history
    s.reclaim()
    s.close()
    s2 = RevisionLog(url, stamp, history=10)
    assert s2.get("b", "x") == {"n": 99, "rv": 100} and s2.get("b", "gone") is None and s2.revision == 102
    assert s2.create("b", "gone", {})["rv"] == 103


def test_database_errors_do_not_carry_sql(url):
    from dramock.storage.revlog import StorageFailure

    s = RevisionLog(url, stamp)
    s.create("b", "x", {})
    with s.engine.begin() as c:
        c.exec_driver_sql("DROP TABLE revlog")
    with pytest.raises(StorageFailure) as e:
        s.create("b", "y", {})
    assert "INSERT" not in str(e.value) and "revlog" not in str(e.value)
    assert s.get("b", "y") is None and s.revision == 1  # memory never shows an uncommitted write


def test_compaction_gives_disk_space_back(tmp_path):
    import os
    import sqlite3

    path = tmp_path / "space.db"
    s = RevisionLog(f"sqlite:///{path}", stamp, history=100)
    for i in range(50):
        s.create("b", f"k{i}", {"blob": "x" * 2000})
    for i in range(3000):
        s.update("b", f"k{i % 50}", {"blob": "y" * 2000, "i": i})
    s.reclaim()
    grown = os.path.getsize(path)
    while s.compact_step():
        pass
    s.reclaim()
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA freelist_count").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM revlog").fetchone() == (150,)  # 50 live rows + the history
    finally:
        db.close()
    assert os.path.getsize(path) < grown / 5
    assert os.path.getsize(f"{path}-wal") == 0  # checkpointed and truncated
    s.close()


def test_a_database_from_before_prev_revision_is_migrated(tmp_path):
    import sqlite3

    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE revlog (id INTEGER NOT NULL PRIMARY KEY, bucket VARCHAR NOT NULL, name VARCHAR NOT NULL,
                             created BOOLEAN NOT NULL, deleted BOOLEAN NOT NULL, value TEXT NOT NULL);
        CREATE INDEX revlog_key ON revlog (bucket, name, id);
        CREATE TABLE meta ("key" VARCHAR NOT NULL PRIMARY KEY, value INTEGER NOT NULL);
        INSERT INTO revlog VALUES (1, 'b', 'x', 1, 0, '{"rv":1}'), (2, 'b', 'x', 0, 0, '{"rv":2}'),
                                  (3, 'b', 'y', 1, 0, '{"rv":3}'), (4, 'b', 'y', 0, 1, '{"rv":4}');
    """)
    db.commit()
    db.close()
    s = RevisionLog(f"sqlite:///{path}", stamp)
    assert s.get("b", "x") == {"rv": 2} and s.get("b", "y") is None and s.revision == 4
    assert s.create("b", "y", {})["rv"] == 5 and s.update("b", "x", {}, expected=2)["rv"] == 6
    s.compact(6)
    while s.compact_step():
        pass
    with s.engine.connect() as c:
        assert [tuple(r) for r in c.exec_driver_sql("SELECT id, prev_revision FROM revlog ORDER BY id")] == \
            [(5, 4), (6, 2)]
    s.close()


def test_an_embedded_database_keeps_one_index_on_the_log(tmp_path):
    """SQLite indexes hold the rowid (the revision): the unique key index also finds a key's newest row, so
    the (bucket, name, id) index of older databases is dropped rather than written on every commit."""
    import sqlite3

    path = tmp_path / "d.db"
    s = RevisionLog(f"sqlite:///{path}", stamp)
    s.create("b", "x", {})
    s.close()
    db = sqlite3.connect(path)
    db.execute("CREATE INDEX revlog_key ON revlog (bucket, name, id)")  # as databases made before had it
    db.commit()
    db.close()
    s = RevisionLog(f"sqlite:///{path}", stamp)
    assert s.get("b", "x") == {"rv": 1}
    assert s.update("b", "x", {}, expected=1)["rv"] == 2
    s.close()
    db = sqlite3.connect(path)
    try:
        indexes = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index' "
                                            "AND tbl_name = 'revlog'")}
        plan = " ".join(str(r) for r in db.execute(
            "EXPLAIN QUERY PLAN SELECT max(id) FROM revlog WHERE id <= 2 GROUP BY bucket, name"))
    finally:
        db.close()
    assert indexes == {"revlog_key_prev"}
    assert "COVERING INDEX revlog_key_prev" in plan  # start-up's newest-row-per-key query reads no table rows


def test_compaction_keeping_pace_with_writes_keeps_the_log_bounded(url):
    """A range compacted while its rows were still current must not keep them once they are superseded."""
    s = RevisionLog(url, stamp, history=10)
    for i in range(5):
        s.create("b", f"k{i}", {})
    for i in range(2000):
        s.update("b", f"k{i % 5}", {"i": i})
        s.compact_step(batch=3)  # the background compactor right behind the history
    with s.engine.connect() as c:
        rows = c.exec_driver_sql("SELECT count(*) FROM revlog").scalar()
    assert rows <= 5 + 10 + 3, rows
    s.close()


def test_values_loaded_at_start_up_read_as_objects_everywhere(url):
    s = RevisionLog(url, stamp, history=3)
    for i in range(6):
        s.create("b", f"ns/o{i}", {"i": i})
    s.close()
    s2 = RevisionLog(url, stamp, history=3)
    assert dict(s2.list("b", "ns/")) == {f"ns/o{i}": {"i": i, "rv": i + 1} for i in range(6)}
    s2.update("b", "ns/o1", {"i": 11})
    at = dict(s2.list("b", "ns/", at=6))  # o1 from history, the rest as loaded
    assert at["ns/o1"] == {"i": 1, "rv": 2} and at["ns/o4"] == {"i": 4, "rv": 5}
    ev = s2.delete("b", "ns/o2")
    assert ev == {"i": 2, "rv": 8} and s2.events_since(7)[0].prev == {"i": 2, "rv": 3}
    s2.close()


def test_page_is_the_head_of_list_and_counts_the_rest(url):
    s = RevisionLog(url, stamp)
    # Neighbours on both sides of the prefix: "ns" and "ns." sort around "ns/" names, "ns0/" after them.
    for name in ("ns", "ns.x", "ns0/a", "ns/a", "ns/b", "ns/c", "ns/d", "nt/a", "a/a"):
        s.create("b", name, {"n": name})
    s.update("b", "ns/b", {"n": "b2"})
    for prefix in ("", "ns/", "ns0/", "nz/"):
        for start_after in ("", "ns/a", "ns/b", "ns/d", "ns/bb", "m", "zz"):
            for at in (None, 10):
                whole = list(s.list("b", prefix, start_after, at))
                for limit in (1, 2, 3, 100):
                    assert s.page("b", prefix, start_after, at, limit) == (whole[:limit], max(len(whole) - limit, 0))
    assert s.page("b", "ns/", "ns/a", 9, 1) == ([("ns/b", {"n": "ns/b", "rv": 5})], 2)  # as it was at 9


def test_page_reads_only_its_own_objects(url):
    s = RevisionLog(url, stamp)
    for i in range(50):
        s.create("b", f"ns/o{i:02d}", {"i": i})
    s.close()
    s2 = RevisionLog(url, stamp, history=3)  # values loaded at start-up (not replayed) stay JSON text until read
    items, rest = s2.page("b", "ns/", "ns/o09", None, 5)
    assert [n for n, _ in items] == [f"ns/o{i}" for i in range(10, 15)] and rest == 35
    read = [n for n, v in s2.bucket("b").objects.items() if not isinstance(v, str)]
    assert read == [n for n, _ in items] + ["ns/o47", "ns/o48", "ns/o49"]  # the page, and the replayed history
    s2.close()
