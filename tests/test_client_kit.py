"""The client package's shared pieces: conflict retry (client-go's util/retry) and discovery
(`ServerPreferredResources`), against a real `apiserver` process where a server is involved."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from dramock.client.discovery import server_legacy_resources, server_preferred_resources
from dramock.client.rest import APIStatusError, Client
from dramock.client.retry import DEFAULT_BACKOFF, DEFAULT_RETRY, Backoff, on_error, retry_on_conflict
from dramock.timefmt import format_time, now, now_micro, parse_seconds
from tests.helpers import Server, create, make_ns, start_server, stop

# ---------------------------------------------------------------- unit tier


def test_default_backoffs_are_client_go_values():
    assert (DEFAULT_RETRY.steps, DEFAULT_RETRY.duration, DEFAULT_RETRY.factor, DEFAULT_RETRY.jitter) == \
        (5, 0.010, 1.0, 0.1)
    assert (DEFAULT_BACKOFF.steps, DEFAULT_BACKOFF.duration, DEFAULT_BACKOFF.factor, DEFAULT_BACKOFF.jitter) == \
        (4, 0.010, 5.0, 0.1)
    pauses = Backoff(steps=4, duration=1.0, factor=5.0).sleeps()
    assert pauses == [1.0, 5.0, 25.0]  # one fewer pause than attempts, growing by the factor
    assert all(0.010 <= p <= 0.011 for p in DEFAULT_RETRY.sleeps()) and len(DEFAULT_RETRY.sleeps()) == 4


def _failing(codes: list[int]):
    calls: list[int] = []

    async def fn() -> str:
        calls.append(1)
        if codes:
            code = codes.pop(0)
            raise APIStatusError(code, {"kind": "Status", "code": code, "reason": "Conflict" if code == 409 else ""})
        return "done"
    return fn, calls


def test_retry_on_conflict_retries_only_conflicts():
    fast = Backoff(steps=5, duration=0.0)
    fn, calls = _failing([409, 409])
    assert asyncio.run(retry_on_conflict(fn, fast)) == "done" and len(calls) == 3
    fn, calls = _failing([409] * 10)
    with pytest.raises(APIStatusError) as e:
        asyncio.run(retry_on_conflict(fn, fast))
    assert e.value.code == 409 and len(calls) == 5  # the last conflict, after `steps` attempts
    fn, calls = _failing([409, 404])
    with pytest.raises(APIStatusError) as e:
        asyncio.run(retry_on_conflict(fn, fast))
    assert e.value.code == 404 and len(calls) == 2  # any other error at once
    fn, calls = _failing([500, 500])
    assert asyncio.run(on_error(fast, lambda e: isinstance(e, APIStatusError) and e.code == 500, fn)) == "done"


def test_time_formats():
    from datetime import UTC, datetime, timedelta, timezone
    t = datetime(2026, 8, 26, 10, 0, 5, 123456, tzinfo=UTC)
    assert format_time(t) == "2026-08-26T10:00:05Z"
    assert format_time(t.astimezone(timezone(timedelta(hours=2)))) == "2026-08-26T10:00:05Z"
    assert len(now()) == 20 and now().endswith("Z") and now()[10] == "T"
    assert len(now_micro()) == 27 and now_micro()[19] == "."
    assert parse_seconds("2026-08-26T10:00:05Z") == t.replace(microsecond=0).timestamp()
    assert parse_seconds("2026-08-26T10:00:05.123456Z") == t.replace(microsecond=0).timestamp()
    assert parse_seconds("") is None and parse_seconds("yesterday") is None


# ---------------------------------------------------------------- against a server


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory, starts_processes) -> Iterator[Server]:
    s = start_server(str(tmp_path_factory.mktemp("clientkit")))
    yield s
    stop(s)


async def _both(url: str):
    client = Client(url, "test-clientkit")
    try:
        return await server_preferred_resources(client), await server_legacy_resources(client)
    finally:
        await client.close()


def test_discovery_finds_served_resources_once_each(apiserver: Server):
    aggregated, legacy = asyncio.run(_both(apiserver.url))
    assert {r.group_resource for r in aggregated} == {r.group_resource for r in legacy}
    assert len(aggregated) == len({r.group_resource for r in aggregated})  # each resource once
    assert set(aggregated) == set(legacy)  # the same versions, kinds, scopes, verbs and subresources
    by = {r.group_resource: r for r in aggregated}
    role = by[("rbac.authorization.k8s.io", "roles")]
    assert (role.kind, role.version, role.namespaced) == ("Role", "v1", True)
    assert role.supports("list", "watch", "delete", "deletecollection")
    assert by[("", "namespaces")].namespaced is False and "finalize" in by[("", "namespaces")].subresources
    assert by[("resource.k8s.io", "resourceclaims")].version == "v1"  # the preferred version
    assert not by[("authorization.k8s.io", "selfsubjectaccessreviews")].supports("list")
    assert by[("", "pods")].path("ns1", "p", "status") == "/api/v1/namespaces/ns1/pods/p/status"
    assert role.path("ns1") == "/apis/rbac.authorization.k8s.io/v1/namespaces/ns1/roles"


def test_retry_on_conflict_against_the_server(apiserver: Server):
    ns = make_ns(apiserver, "retry")
    path = f"/api/v1/namespaces/{ns}/configmaps"
    stale = create(apiserver, path, {"metadata": {"name": "cm"}, "data": {"n": "0"}})
    apiserver.request("PUT", f"{path}/cm", {**stale, "data": {"n": "1"}})  # someone else writes meanwhile

    async def run() -> tuple[dict, int]:
        client = Client(apiserver.url, "test-clientkit")
        tries = [0]

        async def bump() -> dict:
            tries[0] += 1
            obj = stale if tries[0] == 1 else await client.request("GET", f"{path}/cm")
            obj["data"]["n"] = str(int(obj["data"]["n"]) + 10)
            return await client.request("PUT", f"{path}/cm", obj)
        try:
            return await retry_on_conflict(bump), tries[0]
        finally:
            await client.close()
    out, tries = asyncio.run(run())
    assert tries == 2 and out["data"]["n"] == "11"  # the stale write got a 409; the fresh one won


def test_garbage_collector_rediscovery_starts_and_stops_monitors(apiserver: Server):
    from dramock.controllers.garbagecollector import GarbageCollector

    async def run() -> None:
        client = Client(apiserver.url, "test-clientkit")
        stop = asyncio.Event()
        gc = GarbageCollector(client, ignored=frozenset({("", "events"), ("", "configmaps")}))
        try:
            assert await gc.sync_monitors(stop) is True
            watched = {r.group_resource for r in gc.kinds}
            assert ("", "configmaps") not in watched and ("rbac.authorization.k8s.io", "roles") in watched
            assert ("", "events") not in watched and ("", "pods") in watched
            assert ("authorization.k8s.io", "selfsubjectaccessreviews") not in watched  # no list/watch/delete
            assert await gc.sync_monitors(stop) is False  # nothing new
            gc.ignored = frozenset()
            assert await gc.sync_monitors(stop) is True
            cms = next(m for m in gc.monitors.values() if m.resource.group_resource == ("", "configmaps"))
            await asyncio.wait_for(cms.informer.synced.wait(), 30)
            gc.ignored = frozenset({("", "configmaps")})
            assert await gc.sync_monitors(stop) is True
            assert ("", "configmaps") not in {r.group_resource for r in gc.kinds}
            assert cms.task is not None
            await asyncio.gather(cms.task, return_exceptions=True)
            assert cms.task.done()
        finally:
            stop.set()
            for m in gc.monitors.values():
                if m.task is not None:
                    m.task.cancel()
            await asyncio.gather(*(m.task for m in gc.monitors.values() if m.task is not None),
                                 return_exceptions=True)
            await client.close()
    asyncio.run(run())
