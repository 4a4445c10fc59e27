"""Fuzzing the API server (issue 17): 20,000 hand-made hostile requests over every served resource, then
schemathesis against dramock's own OpenAPI v3. No 5xx, every error body a Status, /readyz responsive
throughout, and nothing stored by a refused request."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests import fuzz
from tests.helpers import Server, start_server, stop

pytestmark = pytest.mark.e2e

RUNTIME_CONFIG = "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true,resource.k8s.io/v1alpha3=true"


@pytest.fixture(scope="module")
def target(tmp_path_factory, starts_processes) -> Server:
    s = start_server(str(tmp_path_factory.mktemp("fuzz")), "--runtime-config", RUNTIME_CONFIG)
    yield s
    stop(s)


def _stored_fuzz_names(s: Server) -> set[str]:
    names = set()
    for gv, res in asyncio.run(_list_resources(s)):
        if "/" in res["name"] or "list" not in res["verbs"]:
            continue
        base = "/api/v1" if gv == "v1" else f"/apis/{gv}"
        code, _, body = s.request("GET", f"{base}/{res['name']}")
        assert code == 200, (gv, res["name"], body)
        names |= {o["metadata"]["name"] for o in body["items"] if o["metadata"]["name"].startswith(fuzz.PREFIX)}
    return names


async def _list_resources(s: Server):
    import aiohttp

    async with aiohttp.ClientSession() as session:
        return await fuzz._resources(session, s.url)


def test_hand_made_fuzzing(target: Server) -> None:
    report = asyncio.run(fuzz.run(target.url, requests=20_000, seed=17))
    assert report.requests == 20_000
    assert not report.server_errors, "\n".join(report.server_errors[:20])
    assert not report.not_status, "\n".join(report.not_status[:20])
    assert report.slowest_readyz < 1.0, report.slowest_readyz
    # Every client error class was exercised, and plenty of requests were valid enough to be stored.
    assert {400, 404, 415, 422} <= set(report.codes), report.codes
    assert len(report.created) > 300, report.codes
    stray = _stored_fuzz_names(target) - report.created
    assert not stray, f"stored although the server refused the request: {sorted(stray)[:20]}"


def test_schemathesis_against_our_openapi(target: Server, tmp_path) -> None:
    st = shutil.which("st") or os.path.join(os.path.dirname(sys.executable), "st")
    spec = f"{target.url}/openapi/v3/apis/resource.k8s.io/v1"
    res = subprocess.run([st, "run", spec, "--url", target.url, "-n", "3", "--seed", "17", "--no-shrink",
                          "--checks", "not_a_server_error", "--exclude-operation-id-regex", "^watch",
                          "--phases", "examples,coverage,fuzzing", "--request-timeout", "3",
                          "--report", "ndjson", "--report-dir", str(tmp_path), "--max-time", "120"],
                         capture_output=True, text=True, timeout=600)
    codes: dict[int, int] = {}
    other_errors = []
    for path in tmp_path.glob("*.ndjson"):
        for line in path.read_text().splitlines():
            event = json.loads(line)
            for interaction in (event.get("ScenarioFinished", {}).get("recorder", {}).get("interactions")
                                or {}).values():
                code = (interaction.get("response") or {}).get("status_code")
                codes[code] = codes.get(code, 0) + 1
            error = event.get("NonFatalError")
            # A list operation's `watch` parameter, set by schemathesis, opens a watch: it never ends by itself.
            if error and not (error.get("label", "").startswith("GET ") and "timed out" in json.dumps(error)):
                other_errors.append(error)
    assert sum(codes.values()) > 2000, (codes, res.stdout[-3000:])
    assert not any(c and c >= 500 for c in codes), (codes, res.stdout[-5000:])
    assert not other_errors, other_errors[:5]
    assert "not_a_server_error" not in res.stdout.split("FAILURES")[-1] or "FAILURES" not in res.stdout, \
        res.stdout[-5000:]
