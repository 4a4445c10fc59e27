"""Hostile and malformed requests (issue 17): each gets an upstream-shaped 4xx Status, stores nothing, and
leaves the server responsive (its /readyz answers while the request is being processed)."""

from __future__ import annotations

import http.client
import json
import random
import re
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from dramock.apiserver import bodies
from dramock.jsonvalue import dumps_in_pieces
from tests.helpers import Server, start_server, stop, wait_for

CM = "/api/v1/namespaces/default/configmaps"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
PODS = "/api/v1/namespaces/default/pods"

BOMB = "\n".join(
    [f'{name}: &{name} [{", ".join(["*" + prev] * 9 if prev else ["lol"] * 9)}]'
     for name, prev in zip("abcdefghi", ["", *"abcdefgh"], strict=True)]).encode()


READYZ_BOUND = 0.1  # the issue's bound: /readyz answers within 100 ms while a hostile request is served
TRIALS = 5  # a request that holds the loop fails every trial; a loaded CI machine may spoil one or two


class _Prober:
    """Probes /readyz back to back on one keep-alive connection, in a thread, recording (start, end) of each."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.probes: list[tuple[float, float]] = []
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            while not self.done.is_set():
                start = time.perf_counter()
                conn.request("GET", "/readyz")
                resp = conn.getresponse()
                resp.read()
                assert resp.status == 200, resp.status
                self.probes.append((start, time.perf_counter()))
                self.done.wait(0.001)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e
        finally:
            conn.close()

    def __enter__(self) -> _Prober:
        self.thread.start()
        wait_for(lambda: len(self.probes) >= 3, 10, interval=0.005, what="the first /readyz probes")
        return self

    def __exit__(self, *_exc: object) -> None:
        self.done.set()
        self.thread.join(30)

    def slowest_between(self, t0: float, t1: float) -> float:
        """The slowest probe that was open at any time in [t0, t1], or that was the first to start after t0 (a
        request quicker than the pause between two probes overlaps none)."""
        first_after = next(end - start for start, end in self.probes if start >= t0)
        return max([end - start for start, end in self.probes if end > t0 and start < t1] + [first_after])


def _send(port: int, method: str, path: str, body: bytes,
          content_type: str) -> tuple[int, http.client.HTTPMessage, bytes, float, float]:
    """(code, headers, raw body, when the body was sent, when the answer began). The body is decoded later, by
    the caller, once the probes are judged: decoding megabytes here holds this process's interpreter lock and
    would delay the prober's own reading of an answer."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request(method, path, body, {"Content-Type": content_type})
        sent = time.perf_counter()
        resp = conn.getresponse()
        answered = time.perf_counter()
        raw = resp.read()
    finally:
        conn.close()
    return resp.status, resp.headers, raw, sent, answered


def _while_serving(server: Server, method: str, path: str, bodies: list[bytes],
                   content_type: str = "application/json") -> list[tuple[int, http.client.HTTPMessage, dict]]:
    """Send the request (one body per trial, all built beforehand: building them here would slow the prober
    in this process) while /readyz is probed back to back. Asserts that, while the request was being
    processed, every probe was answered within READYZ_BOUND, in at least one of the trials: a request that
    holds the event loop fails every trial; a scheduling hiccup of a loaded machine spoils one. Returns the
    answers of the trials that were sent (the last passed)."""
    answers, slowest = [], []
    with _Prober(server.port) as prober:
        for body in bodies:
            code, headers, raw, sent, answered = _send(server.port, method, path, body, content_type)
            answers.append((code, headers, raw))
            wait_for(lambda answered=answered: prober.probes[-1][0] > answered, 10, interval=0.002,
                     what="a probe after the answer")
            slowest.append(prober.slowest_between(sent, answered))
            if slowest[-1] < READYZ_BOUND:
                break
    assert prober.error is None, prober.error
    assert min(slowest) < READYZ_BOUND, f"/readyz took {[f'{s * 1000:.0f} ms' for s in slowest]} while served"
    return [(code, headers, json.loads(raw) if raw else {}) for code, headers, raw in answers]


def _hostile(server: Server, method: str, path: str, body: bytes,
             content_type: str = "application/json") -> tuple[int, http.client.HTTPMessage, dict]:
    """A refused request is refused the same way every time: the same body for each trial; its last answer."""
    return _while_serving(server, method, path, [body] * TRIALS, content_type)[-1]


def _names(server: Server, path: str) -> set[str]:
    return {o["metadata"]["name"] for o in server.request("GET", path)[2]["items"]}


def _assert_status(body: dict, code: int, reason: str) -> None:
    assert body.get("kind") == "Status" and body.get("code") == code and body.get("reason") == reason, body


def test_yaml_alias_bomb_is_refused(server: Server) -> None:
    before = _names(server, CM)
    code, _, body = _hostile(server, "POST", CM, BOMB, "application/yaml")
    assert code == 400, body
    _assert_status(body, 400, "BadRequest")
    assert body["message"] == "error converting YAML to JSON: yaml: document contains excessive aliasing"
    assert _names(server, CM) == before


def test_json_patch_self_copies_are_bounded(server: Server) -> None:
    server.request("POST", CM, {"metadata": {"name": "copy-target"}, "data": {"a": "x" * 100}})
    ops = [{"op": "add", "path": "/metadata/annotations", "value": {"a.example.com/x": "y" * 100}}]
    ops += [{"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/k{i}.example.com~1c"}
            for i in range(22)]
    code, _, body = _hostile(server, "PATCH", f"{CM}/copy-target", json.dumps(ops).encode(),
                             "application/json-patch+json")
    assert code == 422, body
    _assert_status(body, 422, "Invalid")
    assert "annotations" not in server.request("GET", f"{CM}/copy-target")[2]["metadata"]


def test_json_patch_operation_count_is_bounded(server: Server) -> None:
    server.request("POST", CM, {"metadata": {"name": "many-ops"}})
    ops = [{"op": "test", "path": "/metadata/name", "value": "many-ops"}] * 10001
    code, _, body = _hostile(server, "PATCH", f"{CM}/many-ops", json.dumps(ops).encode(),
                             "application/json-patch+json")
    assert code == 413, body
    _assert_status(body, 413, "RequestEntityTooLarge")
    assert body["message"].endswith("The allowed maximum operations in a JSON patch is 10000, got 10001")


@pytest.mark.parametrize("raw", [b'{"metadata":{"name":"nan"},"data":{"a":NaN}}',
                                 b'{"metadata":{"name":"big-nan"},"data":{"pad":"' + b"x" * 100_000 +
                                 b'","a":NaN}}',
                                 b'{"metadata":{"name":"inf"},"data":{"a":Infinity}}',
                                 b'{"metadata":{"name":"big"},"data":{"a":1e999}}'])
def test_numbers_json_cannot_carry_are_refused(server: Server, raw: bytes) -> None:
    code, _, body = _hostile(server, "POST", CM, raw)
    assert code == 400, body
    _assert_status(body, 400, "BadRequest")
    assert json.loads(raw)["metadata"]["name"] not in _names(server, CM)


def test_opaque_parameters_with_nan_are_refused(server: Server) -> None:
    raw = (b'{"metadata":{"name":"nan-class"},"spec":{"config":[{"opaque":{"driver":"gpu.example.com",'
           b'"parameters":{"x":NaN}}}]}}')
    code, _, body = _hostile(server, "POST", "/apis/resource.k8s.io/v1/deviceclasses", raw)
    assert code == 400, body
    _assert_status(body, 400, "BadRequest")
    assert server.request("GET", "/apis/resource.k8s.io/v1/deviceclasses/nan-class")[0] == 404


@pytest.mark.parametrize("pad", [0, 100_000])  # 100 kB: a big body, decoded in the worker thread
def test_deep_nesting_is_refused(server: Server, pad: int) -> None:
    deep = b'{"metadata":{"name":"deep","annotations":{"a.example.com/pad":"' + b"x" * pad + b'"}},' + \
        b'"spec":{"config":[{"opaque":{"driver":"d.example.com","parameters":' + \
        b'[' * 5000 + b']' * 5000 + b"}}]}}"
    code, _, body = _hostile(server, "POST", "/apis/resource.k8s.io/v1/deviceclasses", deep)
    assert code == 400, body
    _assert_status(body, 400, "BadRequest")
    assert "exceeded max depth" in body["message"]
    assert server.request("GET", "/apis/resource.k8s.io/v1/deviceclasses/deep")[0] == 404


def _labels_body(name: str, count: int, kind: str = "ConfigMap", **extra: object) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": kind, "metadata": {
        "name": name, "labels": {f"k{i}": "v" for i in range(count)}}, **extra}).encode()


def test_a_big_valid_object_does_not_hold_the_server(server: Server) -> None:
    """150,000 labels (2.3 MB of JSON, below the 3 MiB body limit) are valid: created, while /readyz keeps being
    answered; what is stored, served, listed and watched is the object as created."""
    count = 150_000
    names = [f"many-labels-{i}" for i in range(TRIALS)]
    bodies = [_labels_body(n, count) for n in names]
    rv = server.request("GET", CM)[2]["metadata"]["resourceVersion"]
    try:
        answers = _while_serving(server, "POST", CM, bodies)
        for (code, _, created), name in zip(answers, names, strict=False):
            assert code == 201, created
            assert created["metadata"]["name"] == name and len(created["metadata"]["labels"]) == count
            assert created["metadata"]["managedFields"][0]["operation"] == "Update"
            code, _, got = server.request("GET", f"{CM}/{name}")
            assert code == 200 and got == created
        listed = {o["metadata"]["name"]: o for o in server.request("GET", CM)[2]["items"]}
        assert {"apiVersion": "v1", "kind": "ConfigMap", **listed[names[0]]} == answers[0][2]  # items: no type
        # The watch event carries the object as stored.
        with urllib.request.urlopen(f"{server.url}{CM}?watch=1&resourceVersion={rv}&timeoutSeconds=5",
                                    timeout=30) as r:
            event = json.loads(r.readline())
        assert event["type"] == "ADDED" and event["object"] == answers[0][2]
        for name in names[:len(answers)]:
            assert server.request("DELETE", f"{CM}/{name}")[0] == 200
    finally:  # even when failing: megabytes left in the namespace would slow the tests that list it
        for name in names:
            server.request("DELETE", f"{CM}/{name}")


def test_a_big_update_does_not_hold_the_server(server: Server) -> None:
    """A PUT of a big object is computed off the event loop as a create is; what it stores is what it answers,
    an unchanged object writes nothing, and a stale resourceVersion is a conflict."""
    count = 150_000
    code, _, created = server.request("POST", CM, _labels_body("big-update", count))
    assert code == 201, created
    try:
        _update_big(server, created, count)
    finally:  # even when failing: megabytes left in the namespace would slow the tests that list it
        server.request("DELETE", f"{CM}/big-update")


def _update_big(server: Server, created: dict, count: int) -> None:
    """test_a_big_update_does_not_hold_the_server's trials and checks, on the object as created."""
    bodies = []
    for i in range(TRIALS):
        obj = json.loads(json.dumps(created))
        del obj["metadata"]["managedFields"]  # kept from the stored object; with them the body passes 3 MiB
        obj["metadata"]["labels"]["trial"] = str(i)
        obj["metadata"].pop("resourceVersion")  # unconditional: each trial replaces the last
        bodies.append(json.dumps(obj).encode())
    answers = _while_serving(server, "PUT", f"{CM}/big-update", bodies)
    code, _, updated = answers[-1]
    assert code == 200, updated
    assert updated["metadata"]["labels"]["trial"] == str(len(answers) - 1) and len(updated["metadata"]["labels"]) \
        == count + 1
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert server.request("GET", f"{CM}/big-update")[2] == updated
    # The same object again: nothing to write, the same resourceVersion.
    code, _, same = server.request("PUT", f"{CM}/big-update", bodies[len(answers) - 1])
    assert code == 200 and same == updated
    # A precondition on an older version: 409, nothing written.
    stale = json.loads(bodies[0])
    stale["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    code, _, answer = server.request("PUT", f"{CM}/big-update", json.dumps(stale).encode())
    assert code == 409, answer
    _assert_status(answer, 409, "Conflict")
    assert server.request("GET", f"{CM}/big-update")[2] == updated
    assert server.request("DELETE", f"{CM}/big-update")[0] == 200


def test_a_big_dry_run_stores_nothing(server: Server) -> None:
    code, _, body = server.request("POST", CM + "?dryRun=All", _labels_body("big-dry-run", 20_000))
    assert code == 201, body
    assert "resourceVersion" not in body["metadata"] and len(body["metadata"]["labels"]) == 20_000
    assert server.request("GET", f"{CM}/big-dry-run")[0] == 404


def test_a_big_invalid_object_is_refused(server: Server) -> None:
    body = json.loads(_labels_body("big-invalid", 20_000))
    body["metadata"]["labels"]["bad key!"] = "v"
    code, _, answer = server.request("POST", CM, json.dumps(body).encode())
    assert code == 422, answer
    _assert_status(answer, 422, "Invalid")
    assert answer["details"]["causes"][0]["field"] == "metadata.labels"
    assert server.request("GET", f"{CM}/big-invalid")[0] == 404


def test_a_big_object_that_admission_changes_is_stored_as_admitted(server: Server) -> None:
    """A Service's cluster IP is allocated by admission, after a big object was prepared: what is stored and
    served has it."""
    body = _labels_body("big-service", 5_000, kind="Service",
                        spec={"ports": [{"port": 80, "protocol": "TCP"}]})
    code, _, created = server.request("POST", "/api/v1/namespaces/default/services", body)
    assert code == 201, created
    assert created["spec"]["clusterIP"]
    got = server.request("GET", "/api/v1/namespaces/default/services/big-service")[2]
    assert got == created
    assert server.request("DELETE", "/api/v1/namespaces/default/services/big-service")[0] == 200


def test_lone_surrogate_becomes_replacement_character(server: Server) -> None:
    """Go's decoder replaces an unpaired surrogate with U+FFFD: stored, served, listed and deleted cleanly."""
    raw = b'{"metadata":{"name":"surrogate","annotations":{"a.example.com/x":"\\ud800"}}}'
    (code, _, body), = _while_serving(server, "POST", CM, [raw])
    assert code == 201, body
    assert body["metadata"]["annotations"]["a.example.com/x"] == "\ufffd"
    code, _, table = server.request("GET", CM, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert code == 200 and table["kind"] == "Table"
    assert server.request("DELETE", f"{CM}/surrogate")[0] == 200


def test_warning_for_a_field_name_with_a_newline_is_sent(server: Server) -> None:
    raw = b'{"metadata":{"name":"newline-field"},"bad\\nfield":1}'
    (code, headers, body), = _while_serving(server, "POST", CM + "?fieldValidation=Warn", [raw])
    assert code == 201, body
    assert headers["Warning"] == '299 - "unknown field \\"bad field\\""'


def test_a_negative_limit_is_no_limit(server: Server) -> None:
    code, _, body = _hostile(server, "GET", CM + "?limit=-1", b"")
    assert code == 200 and body["kind"] == "ConfigMapList" and not body["metadata"].get("continue"), body


@pytest.mark.parametrize("method,path,body,code", [
    ("POST", CLAIMS, {"metadata": {"name": "null-request"}, "spec": {"devices": {"requests": [None]}}}, 422),
    ("POST", PODS, {"metadata": {"name": "null-spec"}, "spec": None}, 422),
    ("POST", f"{PODS}/target/binding", {"target": "node-1"}, 400),
    ("DELETE", f"{PODS}/target", {"preconditions": "x"}, 400),
    ("DELETE", f"{PODS}/target", {"gracePeriodSeconds": "abc"}, 400),
])
def test_wrong_shapes_are_client_errors(server: Server, method: str, path: str, body: dict, code: int) -> None:
    server.request("POST", PODS, {"metadata": {"name": "target"}, "spec": {"containers": [{"name": "c",
                                                                                          "image": "i"}]}})
    got, _, answer = _hostile(server, method, path, json.dumps(body).encode())
    assert got == code, answer
    assert answer["kind"] == "Status" and answer["code"] == code
    pod = server.request("GET", f"{PODS}/target")[2]
    assert not pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp")


@pytest.mark.parametrize("token,code", [
    ("W10", 400),  # []
    ("bnVsbA", 400),  # null
    ("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MWU0MDAsInN0YXJ0IjoieCJ9", 400),  # rv 1e400
    ("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6OTk5OTk5OTksInN0YXJ0IjoieCJ9", 504),  # a future revision
])
def test_bad_continue_tokens(server: Server, token: str, code: int) -> None:
    got, _, body = _hostile(server, "GET", f"{CM}?limit=1&continue={token}", b"")
    assert got == code and body["kind"] == "Status", body


def test_generate_name_prefix_is_truncated(server: Server) -> None:
    prefix = "a" * 62  # 'a' is not in the random suffix's alphabet
    (code, _, body), = _while_serving(server, "POST", CM, [json.dumps({"metadata": {"generateName": prefix}}).encode()])
    assert code == 201, body
    name = body["metadata"]["name"]
    assert len(name) == 63 and name.startswith("a" * 58) and not name.startswith("a" * 59)


# ---------------------------------------------------------------- slow clients and connections


def _random_json(rng: random.Random, budget: list[int], depth: int = 0) -> object:
    """A JSON value of at most about budget[0] values, with containers big and small at every level."""
    budget[0] -= 1
    r = rng.random()
    if depth > 4 or r < 0.3 or budget[0] <= 0:
        return rng.choice([1, -2.5, "s", "\u00fc\n\"", None, True, False, 10**20])
    n = rng.choice([0, 1, 5, 2500]) if depth < 3 else rng.randint(0, 4)
    if r < 0.65:
        return {f"k{i}": _random_json(rng, budget, depth + 1) for i in range(n)}
    return [_random_json(rng, budget, depth + 1) for _ in range(n)]


def test_big_values_are_encoded_and_decoded_in_pieces_exactly() -> None:
    """The piecewise encoder and decoder used for big bodies give exactly what the C encoder and decoder do."""
    rng = random.Random(17)
    for _ in range(40):
        value = _random_json(rng, [20_000])
        text = json.dumps(value, separators=(",", ":"))
        assert dumps_in_pieces(value) == text
        assert bodies.load_json(text, in_pieces=True) == bodies.load_json(text)
    with pytest.raises(bodies.BodyError, match="looking for beginning of value"):
        bodies.load_json('{"a":[1,NaN]}', in_pieces=True)
    with pytest.raises(bodies.BodyError, match="exceeded max depth"):
        bodies.load_json("[" * 5000 + "]" * 5000, in_pieces=True)


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@pytest.mark.e2e
def test_a_watcher_that_reads_late_gets_every_event_in_order(tmp_path) -> None:
    """A client that stops reading for a while (well within the write timeout) congests its connection: the events
    written meanwhile wait and then arrive, all of them, in order, and live delivery resumes afterwards."""
    s = start_server(str(tmp_path))
    sock = socket.create_connection(("127.0.0.1", s.port))
    try:
        # A small receive window, still wide enough to read at full speed once the client reads (a tiny one
        # makes the reading itself slower than the write timeout allows).
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        rv = s.request("GET", CM)[2]["metadata"]["resourceVersion"]
        sock.sendall(f"GET {CM}?watch=1&resourceVersion={rv} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        wait_for(lambda: "apiserver_registered_watchers" in urllib.request.urlopen(s.url + "/metrics", timeout=10)
                 .read().decode(), 10, what="the watch to register")
        n = 100  # ~10 MB of events, unread while they are written: more than the socket buffers hold
        for i in range(n):
            code, _, _ = s.request("POST", CM, {"metadata": {"name": f"late-{i}"}, "data": {"blob": "x" * 100_000}})
            assert code == 201
        received, names, scanned = bytearray(), [], [0]
        name = re.compile(rb'"name":"late-(\d+)"')
        sock.settimeout(10)

        def read_until(count: int) -> bool:
            chunk = sock.recv(1 << 20)
            assert chunk, "the stream ended"
            received.extend(chunk)
            for m in name.finditer(received, scanned[0]):
                names.append(int(m[1]))
                scanned[0] = m.end()
            scanned[0] = max(scanned[0], len(received) - 32)  # a name cut off at the end is scanned again
            return len(names) >= count

        wait_for(lambda: read_until(n), 30, interval=0, what="every event written while the client did not read")
        assert names == list(range(n))
        code, _, _ = s.request("POST", CM, {"metadata": {"name": f"late-{n}"}})
        assert code == 201
        wait_for(lambda: read_until(n + 1), 10, interval=0, what="the next live event")
        assert names == list(range(n + 1))
    finally:
        sock.close()
        stop(s)


@pytest.mark.e2e
def test_a_watcher_that_reads_nothing_is_dropped(tmp_path) -> None:
    # A short event history: the objects that events pin are the watcher's, not the history's.
    s = start_server(str(tmp_path), "--watch-history-limit", "5")
    sock = socket.create_connection(("127.0.0.1", s.port))
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)

        def watchers() -> float:
            text = urllib.request.urlopen(s.url + "/metrics", timeout=10).read().decode()
            return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                       if line.startswith("apiserver_registered_watchers{") and 'kind="ConfigMap"' in line)

        def write_blobs(rounds: int) -> None:  # ~16 MB of events: more than socket buffers hold
            for i in range(rounds):
                blob = f"{i:08d}" + "x" * 200_000
                code, _, _ = s.request("PATCH", f"{CM}/big", {"data": {"blob": blob}},
                                       content_type="application/merge-patch+json")
                assert code == 200

        assert s.request("POST", CM, {"metadata": {"name": "big"}, "data": {"blob": ""}})[0] == 201
        write_blobs(80)  # the same writes without the watcher: the baseline has what serving them leaves
        baseline = _rss_kib(s.proc.pid)

        sock.sendall(f"GET {CM}?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        wait_for(lambda: watchers() == 1, 10, what="the watch to register")
        write_blobs(80)
        pinned = _rss_kib(s.proc.pid)
        margin = 4 * 1024
        assert pinned > baseline + 2 * margin, (baseline, pinned)  # the watcher does hold memory
        wait_for(lambda: watchers() == 0, 40, interval=0.5, what="the unresponsive watcher to be dropped")
        assert s.request("GET", CM + "?limit=1")[0] == 200
        # What the watcher held (its backlog, the unsent bytes) is released: the process shrinks back.
        seen: list[int] = []
        try:
            wait_for(lambda: seen.append(_rss_kib(s.proc.pid)) or seen[-1] <= baseline + margin, 20, interval=0.2)
        except AssertionError:
            raise AssertionError(f"RSS stayed at {seen[-1]} KiB: baseline {baseline} KiB (+ {margin} KiB allowed), "
                                 f"{pinned} KiB with the watcher") from None
    finally:
        sock.close()
        stop(s)


@pytest.mark.e2e
def test_half_sent_requests_are_closed_by_the_header_timeout(tmp_path) -> None:
    timeout = 2.0
    s = start_server(str(tmp_path), "--request-header-timeout", str(timeout))
    socks = []
    try:
        opened = time.monotonic()
        for _ in range(1000):
            c = socket.create_connection(("127.0.0.1", s.port))
            c.sendall(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nX-Slow: ")  # never finished
            c.setblocking(False)
            socks.append(c)
        all_open = time.monotonic()

        def closed(c: socket.socket) -> bool:
            try:
                return c.recv(1) == b""
            except BlockingIOError:
                return False
            except OSError:
                return True

        # Each is closed by its own deadline: the last one opened within the header timeout, plus slack for a
        # loaded machine; none of them waits for a keep-alive or shutdown timeout.
        wait_for(lambda: all(closed(c) for c in socks), (all_open - opened) + timeout + 8, interval=0.2,
                 what="the server to close them")
        # A complete request on a fresh connection is still served.
        assert s.request("GET", "/api/v1/namespaces")[0] == 200
    finally:
        for c in socks:
            c.close()
        stop(s)


@pytest.mark.e2e
def test_mutating_requests_beyond_the_limit_get_429(tmp_path) -> None:
    s = start_server(str(tmp_path), "--max-mutating-requests-inflight", "1")
    slow = socket.create_connection(("127.0.0.1", s.port))
    try:
        # A create whose body is still arriving holds the one mutating slot.
        slow.sendall(f"POST {CM} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     f"Content-Length: 1000\r\n\r\n{{".encode())

        def refused() -> tuple[int, dict, dict] | None:
            answer = s.request("POST", CM, {"metadata": {"name": "second"}})
            return answer if answer[0] == 429 else None

        code, headers, body = wait_for(refused, 10, what="a 429")
        assert headers["Retry-After"] == "1"
        assert body["reason"] == "TooManyRequests" and body["details"]["retryAfterSeconds"] == 1
        assert s.request("GET", CM)[0] == 200  # reads have their own limit
    finally:
        slow.close()
        stop(s)
    assert code == 429


@pytest.mark.parametrize("raw", [
    b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n",
    b"NOT-HTTP\r\n\r\n",
    b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 20000 + b"\r\n\r\n",
    b"POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
])
def test_malformed_http_gets_a_status(server: Server, raw: bytes) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as c:
        c.sendall(raw)
        data = b""
        while chunk := c.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    assert 400 <= status < 500, data[:300]
    doc = json.loads(body)
    assert doc["kind"] == "Status" and doc["code"] == status, doc


@pytest.mark.parametrize("text, duplicates", [
    ('{"a":1,"b":{"c":2},"a":3}', ["a"]),
    ('{"a":1,"b" : 2,"a":3}', ["a"]),  # blanks before a colon: counted the slow way
    ('{"a":":x","b":":y"}', []),  # values that begin with a colon
    ('{"a":":x","a":"y"}', ["a"]),
    ('{"a\\"":1,"a\\"":2}', ['a"']),  # escaped quotes in keys
    ('{"a":"\\\\","b":{"c":1,"c":2}}', ["b.c"]),
    ('{"k":[{"x":1},{"x":1,"x":2}]}', ["k[1].x"]),
])
def test_duplicate_keys_are_found_on_the_fast_path_too(text, duplicates):
    from dramock.apiserver import bodies

    value, dups = bodies.load_json(text.encode())
    assert dups == duplicates
    assert (value, dups) == bodies.load_json(text.encode(), in_pieces=True)
