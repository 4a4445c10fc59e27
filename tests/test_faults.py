"""Fault injection (dramock.faults): the rule syntax, the /dramock/faults endpoint, and the bundled components
coping with injected API errors as client-go components do."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from conftest import start_server, stop, wait_for

from dramock.faults import RuleError, parse_rule

SLICE_CREATE_500 = "api:verb=create,resource=resourceslices,code=500,rate=50%"
CLAIM_STATUS_429 = "api:verb=update|patch,resource=resourceclaims/status,code=429,rate=20%"


def metric(text: str, name: str, **labels: str) -> float:
    """Sum of the samples of `name` whose labels include `labels`."""
    total = 0.0
    for line in text.splitlines():
        m = re.match(rf"^{re.escape(name)}\{{(.*)\}} (\S+)$", line)
        if not m:
            continue
        have = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1)))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(m.group(2))
    return total


def test_rule_syntax():
    r = parse_rule("api:verb=update|patch,resource=resourceclaims/status,code=429,rate=20%")
    assert (r.type, r.rate, r.code, r.retry_after, r.count) == ("api", 0.2, 429, 1, None)
    assert r.matches_request("patch", "resourceclaims", "resource.k8s.io", "status", "ns", "c", "x")
    assert not r.matches_request("patch", "resourceclaims", "resource.k8s.io", "", "ns", "c", "x")
    assert not r.matches_request("create", "resourceclaims", "resource.k8s.io", "status", "ns", "c", "x")
    lat = parse_rule("api:resource=pods/*,user-agent=dramock-kubelet*,latency=250ms")
    assert (lat.code, lat.latency) == (None, 0.25)
    assert lat.matches_request("get", "pods", "", "status", "", "", "dramock-kubelet/node-1")
    assert not lat.matches_request("get", "pods", "", "", "", "", "kubectl/v1.32")
    assert parse_rule("kubelet-restart:node=node-1").count == 1
    assert parse_rule("watch-gone:resource=resourceslices.resource.k8s.io").matches_request(
        "watch", "resourceslices", "resource.k8s.io", "", "", "", "")
    for bad, why in [("boom", "unknown fault type"), ("api:code=418", "code 418"), ("api:rate=2", "between"),
                     ("api:verb=frob", "unknown verb"), ("node-not-ready:code=500", "no key 'code'"),
                     ("api:latency=soon", "invalid duration"), ("api:count", "expected key=value")]:
        with pytest.raises(RuleError, match=why):
            parse_rule(bad)


@pytest.mark.e2e
def test_bad_rule_is_refused_by_the_cli(tmp_path):
    res = subprocess.run([sys.executable, "-m", "dramock", "apiserver", "--data-dir", str(tmp_path),
                          "--inject", "api:code=418"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "invalid argument for --inject" in res.stderr and "code 418" in res.stderr


def test_endpoint_adds_lists_fires_and_clears(fresh_server):
    s = fresh_server
    code, _, body = s.request("POST", "/dramock/faults", {"rule": "api:verb=get,resource=configmaps,name=x,"
                                                                  "code=503,retry-after=2,count=1"})
    assert code == 201 and body["items"][0]["rule"].startswith("api:verb=get")
    code, headers, status = s.request("GET", "/api/v1/namespaces/default/configmaps/x")
    assert code == 503 and headers["Retry-After"] == "2"
    assert status["reason"] == "ServiceUnavailable" and status["details"]["retryAfterSeconds"] == 2
    code, _, status = s.request("GET", "/api/v1/namespaces/default/configmaps/x")
    assert code == 404  # count=1: spent
    _, _, listed = s.request("GET", "/dramock/faults")
    assert listed["items"][0]["fired"] == 1 and listed["items"][0]["remaining"] == 0

    s.request("POST", "/dramock/faults", {"rules": ["api:verb=create,resource=configmaps,code=409",
                                                    "api:verb=create,resource=secrets,code=504",
                                                    "api:verb=list,resource=pods,code=500"]})
    code, _, st = s.request("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "y"}})
    assert (code, st["reason"]) == (409, "Conflict")
    assert st["message"].startswith("Operation cannot be fulfilled on configmaps")
    code, _, st = s.request("POST", "/api/v1/namespaces/default/secrets", {"metadata": {"name": "y"}})
    assert (code, st["reason"], st["message"].startswith("Timeout: ")) == (504, "Timeout", True)
    code, _, st = s.request("GET", "/api/v1/pods")
    assert (code, st["reason"], st["kind"]) == (500, "InternalError", "Status")
    assert "dramock injected fault" in st["message"]

    code, _, st = s.request("POST", "/dramock/faults", {"rule": "api:code=418"})
    assert code == 400 and st["reason"] == "BadRequest" and "code 418" in st["message"]
    s.request("DELETE", "/dramock/faults")
    assert s.request("GET", "/dramock/faults")[2]["items"] == []
    assert s.request("GET", "/api/v1/pods")[0] == 200
    text = urllib_get(s.url + "/metrics")
    assert metric(text, "dramock_injected_faults_total", type="api") == 4


def urllib_get(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def test_watch_gone_forces_a_relist(fresh_server):
    s = fresh_server
    s.request("POST", "/dramock/faults", {"rule": "watch-gone:resource=configmaps,after=0.2s,count=1"})
    res = s.kubectl("get", "--raw", "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=1",
                    timeout=30)
    events = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    assert events[-1]["type"] == "ERROR" and events[-1]["object"]["code"] == 410
    assert events[-1]["object"]["reason"] == "Expired"


POD = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: one-gpu, namespace: {ns}}}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {{deviceClassName: gpu.example.com}}
"""


def pod(ns: str, i: int) -> str:
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: p{i}, namespace: {ns}}}
spec:
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: one-gpu}}]
  containers: [{{name: c, image: busybox, resources: {{claims: [{{name: gpu}}]}}}}]
"""


@pytest.mark.e2e
def test_components_cope_with_injected_api_errors(tmp_path):
    """50 % of ResourceSlice creates fail with 500 and 20 % of claim status writes get 429: the example driver
    still publishes every slice, every pod still runs, and /metrics counts what was injected."""
    s = start_server(str(tmp_path), "--nodes", "2", "--inject", SLICE_CREATE_500, "--inject", CLAIM_STATUS_429,
                     "--inject-seed", "4", command="serve")
    try:
        def slices():
            out = s.kubectl("get", "resourceslices", "-o", "json").stdout
            return sorted(i["spec"]["nodeName"] for i in json.loads(out)["items"])
        wait_for(lambda: slices() == ["node-1", "node-2"], timeout=60, what="both nodes' slices")
        s.kubectl("create", "namespace", "faulty")
        s.kubectl("apply", "-f", "-", input=POD.format(ns="faulty") + "".join(pod("faulty", i) for i in range(12)))

        def phases():
            out = json.loads(s.kubectl("get", "pods", "-n", "faulty", "-o", "json").stdout)
            return [p.get("status", {}).get("phase") for p in out["items"]]
        wait_for(lambda: phases() == ["Running"] * 12, timeout=120, what="all pods Running")
        text = urllib_get(s.url + "/metrics")
        slice_faults = metric(text, "dramock_injected_faults_total", rule=SLICE_CREATE_500)
        claim_faults = metric(text, "dramock_injected_faults_total", rule=CLAIM_STATUS_429)
        assert slice_faults >= 1 and claim_faults >= 1
        # What /metrics counts is what the server answered.
        assert slice_faults == metric(text, "apiserver_request_total", verb="CREATE", resource="resourceslices",
                                      code="500")
        assert claim_faults == metric(text, "apiserver_request_total", resource="resourceclaims",
                                      subresource="status", code="429")
        log = open(s.data_dir + ".log").read()
        assert "injected fault 1" in log and "injected fault 2" in log
    finally:
        stop(s)


def _events(s, ns: str, reason: str) -> list[dict]:
    out = json.loads(s.kubectl("get", "events", "-n", ns, "-o", "json").stdout)
    return [e for e in out["items"] if e.get("reason") == reason]


@pytest.mark.e2e
def test_kubelet_side_faults(tmp_path):
    """prepare-error and prepare-timeout are retried by the kubelet (the driver is asked again and stays
    idempotent); node-not-ready flips the node's Ready condition for a while; all are counted."""
    s = start_server(str(tmp_path), "--nodes", "1", "--inject", "prepare-error:driver=gpu.example.com,count=1",
                     "--inject", "prepare-timeout:node=node-1,count=1", command="serve")
    try:
        s.kubectl("create", "namespace", "kf")
        s.kubectl("apply", "-f", "-", input=POD.format(ns="kf") + pod("kf", 0))
        wait_for(lambda: json.loads(s.kubectl("get", "pod", "-n", "kf", "p0", "-o", "json").stdout)
                 .get("status", {}).get("phase") == "Running", timeout=60, what="p0 Running")
        failures = " | ".join(e["message"] for e in _events(s, "kf", "FailedPrepareDynamicResources"))
        assert "UNAVAILABLE: dramock injected fault 1" in failures
        assert "DEADLINE_EXCEEDED: dramock injected fault 2" in failures
        assert [r["remaining"] for r in s.request("GET", "/dramock/faults")[2]["items"]] == [0, 0]

        s.request("POST", "/dramock/faults", {"rule": "node-not-ready:node=node-1,for=1s"})

        def ready() -> str:
            node = json.loads(s.kubectl("get", "node", "node-1", "-o", "json").stdout)
            return next(c for c in node["status"]["conditions"] if c["type"] == "Ready")["status"]
        wait_for(lambda: ready() == "False", timeout=20, what="node-1 NotReady")
        wait_for(lambda: ready() == "True", timeout=20, what="node-1 Ready again")
        text = urllib_get(s.url + "/metrics")
        for type_ in ("prepare-error", "prepare-timeout", "node-not-ready"):
            assert metric(text, "dramock_injected_faults_total", type=type_) == 1, type_
    finally:
        stop(s)


def test_watch_close_makes_informers_watch_again(fresh_server):
    s = fresh_server
    s.request("POST", "/dramock/faults", {"rule": "watch-close:resource=configmaps,user-agent=kubectl*,after=0.3s"})
    res = s.kubectl("get", "--raw", "/api/v1/namespaces/default/configmaps?watch=1", timeout=30)
    assert res.returncode == 0  # the stream ended by itself, cleanly
    assert s.request("GET", "/dramock/faults")[2]["items"][0]["fired"] == 1
