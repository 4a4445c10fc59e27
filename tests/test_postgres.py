"""Two API servers on one real PostgreSQL: shared revisions, cross-replica watches, conditional writes and
quota decided by the database, and a replica killed without losing acknowledged writes."""

from __future__ import annotations

import itertools
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.helpers import Server, start_server, stop, wait_for, watch_lines
from tests.pgserver import start_postgres

pytestmark = pytest.mark.e2e

_ids = itertools.count()
RES = "/apis/resource.k8s.io/v1"


@pytest.fixture(scope="module")
def pg(starts_processes):
    p = start_postgres()
    yield p
    p.stop()


@pytest.fixture(scope="module")
def replicas(pg, tmp_path_factory):
    a = start_server(str(tmp_path_factory.mktemp("a")), "--database-url", pg.url)
    try:
        b = start_server(str(tmp_path_factory.mktemp("b")), "--database-url", pg.url)
    except BaseException:
        stop(a)
        raise
    yield a, b
    stop(a)
    stop(b)


def _ns(srv: Server) -> str:
    name = f"pg-{next(_ids)}"
    code, _, body = srv.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    assert code == 201, body
    return name


def _cm(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_a_write_on_a_is_readable_on_b_within_a_second(replicas):
    a, b = replicas
    ns = _ns(a)
    code, _, created = a.request("POST", f"/api/v1/namespaces/{ns}/configmaps", _cm("x", v="1"))
    assert code == 201
    start = time.monotonic()
    wait_for(lambda: b.request("GET", f"/api/v1/namespaces/{ns}/configmaps/x")[0] == 200, timeout=1.0,
             interval=0.01, what="the write on B")
    _, _, seen = b.request("GET", f"/api/v1/namespaces/{ns}/configmaps/x")
    assert seen["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert time.monotonic() - start < 1.0
    # Revisions are global: a write on B comes after A's.
    code, _, on_b = b.request("POST", f"/api/v1/namespaces/{ns}/configmaps", _cm("y"))
    assert int(on_b["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


def _watch(srv: Server, path: str, rv: str, stop_after: int, timeout: float = 30) -> list[dict]:
    return watch_lines(f"{srv.url}{path}?watch=1&resourceVersion={rv}&allowWatchBookmarks=false", stop_after, timeout)


def test_watch_on_b_sees_every_write_from_both_replicas_in_order_exactly_once(replicas):
    """...and a watch resumed from its last resourceVersion, on either replica, continues without a gap."""
    a, b = replicas
    ns = _ns(a)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    _, _, listed = b.request("GET", path)
    start_rv = listed["metadata"]["resourceVersion"]
    acked: dict[int, str] = {}  # resourceVersion -> name, from both replicas
    lock = threading.Lock()

    def write(srv: Server, tag: str) -> None:
        for i in range(60):
            name = f"{tag}-{i % 10}"
            if i < 10:
                code, _, body = srv.request("POST", path, _cm(name, i=str(i)))
            else:  # unconditional updates of the same keys from both replicas
                code, _, body = srv.request("PUT", f"{path}/{name}", _cm(name, i=str(i)))
            assert code in (200, 201), body
            with lock:
                acked[int(body["metadata"]["resourceVersion"])] = name

    first_half: list[dict] = []
    reader = threading.Thread(target=lambda: first_half.extend(_watch(b, path, start_rv, 50)))
    reader.start()
    writers = [threading.Thread(target=write, args=(srv, tag)) for srv, tag in ((a, "a"), (b, "b"))]
    for t in writers:
        t.start()
    reader.join(60)
    for t in writers:
        t.join(60)
    assert len(first_half) == 50
    # Reconnect from the last revision seen, to the other replica: the rest, nothing missing, nothing repeated.
    last = first_half[-1]["object"]["metadata"]["resourceVersion"]
    second_half = _watch(a, path, last, len(acked) - 50)
    events = first_half + second_half
    revisions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert revisions == sorted(acked), "every acknowledged write, in revision order, exactly once"
    assert [e["object"]["metadata"]["name"] for e in events] == [acked[r] for r in revisions]
    assert [e["type"] for e in events].count("ADDED") == 20


def test_read_modify_write_from_50_clients_over_both_replicas_loses_no_update(replicas):
    a, b = replicas
    ns = _ns(a)
    url = f"/api/v1/namespaces/{ns}/configmaps/counter"
    assert a.request("POST", f"/api/v1/namespaces/{ns}/configmaps", _cm("counter", n="0"))[0] == 201
    wait_for(lambda: b.request("GET", url)[0] == 200, timeout=1, what="the counter on B")
    conflicts = itertools.count()

    def increment(client: int) -> None:
        srv = (a, b)[client % 2]
        other = (b, a)[client % 2]
        for _ in range(3):
            while True:
                # Read on one replica and write on the other half the time: a stale read must be refused.
                code, _, obj = (srv if next(conflicts) % 2 else other).request("GET", url)
                assert code == 200
                obj["data"]["n"] = str(int(obj["data"]["n"]) + 1)
                code, _, body = srv.request("PUT", url, obj)
                if code == 200:
                    break
                assert code == 409 and body["reason"] == "Conflict", body

    with ThreadPoolExecutor(50) as pool:
        list(pool.map(increment, range(50)))
    for srv in (a, b):
        wait_for(lambda srv=srv: srv.request("GET", url)[2]["data"]["n"] == "150", timeout=5,
                 what="150 increments on both replicas")


def test_patches_without_precondition_over_both_replicas_lose_nothing(replicas):
    """A patch computed from one replica's copy while the other replica changed the object is computed
    again (upstream's GuaranteedUpdate), not written over the other's change."""
    a, b = replicas
    ns = _ns(a)
    url = f"/api/v1/namespaces/{ns}/configmaps/merged"
    assert a.request("POST", f"/api/v1/namespaces/{ns}/configmaps", _cm("merged"))[0] == 201
    wait_for(lambda: b.request("GET", url)[0] == 200, timeout=1, what="the object on B")

    def patch(i: int) -> None:
        code, _, body = (a, b)[i % 2].request("PATCH", url, {"data": {f"k{i}": str(i)}},
                                               content_type="application/merge-patch+json")
        assert code == 200, body

    with ThreadPoolExecutor(20) as pool:
        list(pool.map(patch, range(60)))
    for srv in (a, b):
        wait_for(lambda srv=srv: len(srv.request("GET", url)[2].get("data") or {}) == 60, timeout=2,
                 what="all 60 patched keys on both replicas")


def test_quota_admits_exactly_its_hard_limit_across_replicas(replicas):
    a, b = replicas
    ns = _ns(a)
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
             "spec": {"hard": {"count/resourceclaims.resource.k8s.io": "5"}}}
    code, _, created = a.request("POST", f"/api/v1/namespaces/{ns}/resourcequotas", quota)
    assert code == 201, created
    # No controller runs here: the status is written as the quota controller would.
    created["status"] = {"hard": {"count/resourceclaims.resource.k8s.io": "5"},
                         "used": {"count/resourceclaims.resource.k8s.io": "0"}}
    code, _, body = a.request("PUT", f"/api/v1/namespaces/{ns}/resourcequotas/q/status", created)
    assert code == 200, body
    wait_for(lambda: "used" in (b.request("GET", f"/api/v1/namespaces/{ns}/resourcequotas/q")[2].get("status")
                                or {}), timeout=2, what="the quota status on B")

    def create(i: int) -> int:
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": f"c{i}"},
                 "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}}
        code, _, body = (a, b)[i % 2].request("POST", f"{RES}/namespaces/{ns}/resourceclaims", claim)
        assert code in (201, 403), body
        if code == 403:
            assert "exceeded quota: q" in body["message"], body
        return code

    with ThreadPoolExecutor(20) as pool:
        codes = list(pool.map(create, range(20)))
    assert codes.count(201) == 5 and codes.count(403) == 15
    for srv in (a, b):
        def used(srv=srv):
            q = srv.request("GET", f"/api/v1/namespaces/{ns}/resourcequotas/q")[2]
            return q["status"]["used"]["count/resourceclaims.resource.k8s.io"] == "5"
        wait_for(used, timeout=2, what="used 5 on both replicas")
        assert len(srv.request("GET", f"{RES}/namespaces/{ns}/resourceclaims")[2]["items"]) == 5


def test_generate_name_is_unique_across_replicas(replicas):
    a, b = replicas
    ns = _ns(a)

    def create(i: int) -> str:
        code, _, body = (a, b)[i % 2].request("POST", f"/api/v1/namespaces/{ns}/configmaps",
                                               {"metadata": {"generateName": "g-"}})
        assert code == 201, body
        return body["metadata"]["name"]

    with ThreadPoolExecutor(10) as pool:
        names = list(pool.map(create, range(60)))
    assert len(set(names)) == 60
    wait_for(lambda: len(b.request("GET", f"/api/v1/namespaces/{ns}/configmaps")[2]["items"]) == 60, timeout=2,
             what="60 objects on B")


def test_kubectl_works_against_either_replica(replicas):
    a, b = replicas
    ns = _ns(a)
    a.kubectl("-n", ns, "create", "configmap", "from-a", "--from-literal=k=v")
    wait_for(lambda: b.kubectl("-n", ns, "get", "configmap", "from-a", check=False).returncode == 0, timeout=2,
             what="kubectl get on B")
    b.kubectl("-n", ns, "label", "configmap", "from-a", "side=b")
    wait_for(lambda: a.kubectl("-n", ns, "get", "configmap", "from-a", "-o", "jsonpath={.metadata.labels.side}"
                               ).stdout == "b", timeout=2, what="B's label on A")
    out = b.kubectl("-n", ns, "get", "configmaps", "-o", "name").stdout.split()
    assert "configmap/from-a" in out


def test_kill9_of_a_leaves_b_serving_with_nothing_acknowledged_lost(pg, tmp_path):
    (tmp_path / "ka").mkdir()
    (tmp_path / "kb").mkdir()
    a = start_server(str(tmp_path / "ka"), "--database-url", pg.url)
    b = None
    try:
        b = start_server(str(tmp_path / "kb"), "--database-url", pg.url)
        ns = _ns(a)
        path = f"/api/v1/namespaces/{ns}/configmaps"
        acked: dict[str, str] = {}
        stopping = threading.Event()

        def writer(srv: Server, tag: str) -> None:
            i = 0
            while not stopping.is_set():
                try:
                    code, _, body = srv.request("POST", path, _cm(f"{tag}-{i}"))
                except OSError:
                    return  # the replica was killed
                if code == 201:
                    acked[body["metadata"]["name"]] = body["metadata"]["resourceVersion"]
                i += 1

        threads = [threading.Thread(target=writer, args=(srv, tag)) for srv, tag in ((a, "a"), (b, "b"))]
        for t in threads:
            t.start()
        wait_for(lambda: sum(1 for k in list(acked) if k.startswith("a-")) >= 100, what="100 writes on A")
        a.kill9()
        wait_for(lambda: sum(1 for k in list(acked) if k.startswith("b-")) >= 200, what="B keeps writing")
        stopping.set()
        for t in threads:
            t.join(30)

        def all_there():
            items = b.request("GET", path)[2]["items"]
            stored = {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in items}
            return all(stored.get(k) == v for k, v in acked.items())
        wait_for(all_there, timeout=5, what="every acknowledged write on B")
        assert b.request("POST", path, _cm("after"))[0] == 201
    finally:
        stop(a)
        if b is not None:
            stop(b)


def test_a_revision_nobody_commits_is_filled_and_following_goes_on(pg):
    from dramock.storage.revlog import RevisionLog

    def stamp(obj, rev):
        obj["rv"] = rev

    one = RevisionLog(pg.url, stamp, fill_delay=0.2)
    two = RevisionLog(pg.url, stamp, fill_delay=0.2)
    try:
        seen: list[int] = []
        two.subscribe("gaps", lambda ev: seen.append(ev.revision))
        first = one.create("gaps", "x", {})["rv"]
        with one.engine.begin() as conn:  # a writer that took a revision and died before committing
            lost = conn.exec_driver_sql("SELECT nextval('revlog_revision_seq')").scalar()
        after = one.update("gaps", "x", {"n": 1})["rv"]
        assert (first, after) == (lost - 1, lost + 1)
        two.follow()
        assert seen == [first]  # stops before the gap: a late commit could still fill it
        wait_for(lambda: two.follow() or two.revision >= after, timeout=2, what="the gap filled")
        assert seen == [first, after] and two.get("gaps", "x") == {"n": 1, "rv": after}
        one.follow()
        assert one.revision >= after and one.get("gaps", "x") == {"n": 1, "rv": after}
        # Only one replica compacts at a time; both agree on the outcome.
        one.compact(after)
        two.compact(after)
        while one.compact_step() or two.compact_step():
            pass
        with one.engine.begin() as conn:
            left = conn.exec_driver_sql("SELECT count(*) FROM revlog WHERE name = 'x' OR bucket = ''").scalar()
        assert left == 1
    finally:
        one.close()
        two.close()
