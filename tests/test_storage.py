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
