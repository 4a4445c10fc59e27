"""Fault injection: rules that make the API server or a kubelet shim misbehave on purpose, so a driver's tests
can see whether it copes (retries, relists, re-registers, stays idempotent).

A rule is one string, `TYPE[:key=value,key=value,...]`:

    api:verb=create,resource=resourceslices,code=500,rate=50%
    api:verb=update,resource=resourceclaims/status,code=429,retry-after=1,rate=0.2
    api:resource=pods,user-agent=dramock-kubelet*,latency=300ms
    watch-close:resource=resourceclaims,after=5s
    watch-gone:resource=resourceslices,count=1
    kubelet-restart:node=node-1
    node-not-ready:node=node-1,for=10s
    prepare-timeout:driver=gpu.example.com,count=1
    prepare-error:node=node-2,count=2

Types and their keys:

- `api`: a request gets an error Status (shaped as upstream's for the code) and/or an added latency.
  `verb` (get, list, watch, create, update, patch, delete, deletecollection; several joined with `|`),
  `resource` (plural, optionally `.group`; as in an audit policy `pods` is the resource itself,
  `pods/status` a subresource and `pods/*` any of them), `subresource`, `namespace`, `name`,
  `user-agent` (a glob), `code` (409, 429, 500, 503 or 504; default 500 unless only `latency` is given),
  `retry-after` (seconds, sent with 429/503/504; default 1 for 429), `latency` (e.g. `200ms`, `2s`).
- `watch-close`: a matching watch ends cleanly `after` seconds (default 0) after it opened, as a server
  timeout does; the client watches again. Keys: `resource`, `namespace`, `user-agent`, `after`.
- `watch-gone`: a matching watch gets an ERROR event `410 Expired` (too old resource version) `after`
  seconds and ends; the client must relist. Same keys as `watch-close`.
- `kubelet-restart`: the kubelet shim of `node` (default: every node) restarts: drops its plugin
  registrations, deletes the node's ResourceSlices and registers every driver again (GetInfo,
  NotifyRegistrationStatus). Prepared claims are remembered, as upstream's checkpoint does.
- `node-not-ready`: the kubelet shim of `node` reports Ready=False for `for` seconds (default 10).
- `prepare-timeout`: a NodePrepareResources call (of `driver` on `node`) reaches the driver, but the kubelet
  loses the answer as if its deadline passed (DeadlineExceeded) and retries the call later.
- `prepare-error`: a NodePrepareResources call fails before reaching the driver (Unavailable); retried.

Every rule also takes `rate` (probability per matching request, `0.2` or `20%`; default 1) and `count`
(how many times it fires at most; default unlimited, 1 for `kubelet-restart` and `node-not-ready`).

The API server holds the rules (`dramock serve --inject RULE`, repeatable; `GET/POST/DELETE /dramock/faults`
while running). Kubelet shims ask it with `POST /dramock/faults/fire` whether a kubelet-side fault fires,
so that every injected fault is decided, logged and counted (`dramock_injected_faults_total{rule,type}` on
`/metrics`) in one place.
"""

from __future__ import annotations

import fnmatch
import logging
import random
import re
from dataclasses import dataclass, field
from typing import Any

from dramock import errors

log = logging.getLogger("dramock.faults")

API = "api"
WATCH_CLOSE = "watch-close"
WATCH_GONE = "watch-gone"
KUBELET_RESTART = "kubelet-restart"
NODE_NOT_READY = "node-not-ready"
PREPARE_TIMEOUT = "prepare-timeout"
PREPARE_ERROR = "prepare-error"
KUBELET_TYPES = (KUBELET_RESTART, NODE_NOT_READY, PREPARE_TIMEOUT, PREPARE_ERROR)
TYPES = (API, WATCH_CLOSE, WATCH_GONE, *KUBELET_TYPES)
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
CODES = (409, 429, 500, 503, 504)

_COMMON_KEYS = {"rate", "count"}
_KEYS = {
    API: {"verb", "resource", "subresource", "namespace", "name", "user-agent", "code", "retry-after", "latency"},
    WATCH_CLOSE: {"resource", "namespace", "user-agent", "after"},
    WATCH_GONE: {"resource", "namespace", "user-agent", "after"},
    KUBELET_RESTART: {"node"},
    NODE_NOT_READY: {"node", "for"},
    PREPARE_TIMEOUT: {"node", "driver"},
    PREPARE_ERROR: {"node", "driver"},
}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m)?$")


class RuleError(ValueError):
    """A rule that does not parse; the message says which part."""


def parse_duration(text: str) -> float:
    m = _DURATION.match(text.strip())
    if not m:
        raise RuleError(f"invalid duration {text!r} (want e.g. 250ms, 2s, 1m or seconds)")
    value = float(m.group(1))
    return value * {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}[m.group(2)]


def parse_rate(text: str) -> float:
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise RuleError(f"invalid rate {text!r} (want e.g. 0.2 or 20%)")
    if not 0 <= value <= 1:
        raise RuleError(f"rate {text!r} is not between 0 and 1 (0% and 100%)")
    return value


@dataclass
class Rule:
    type: str
    text: str
    params: dict[str, str]
    rate: float = 1.0
    count: int | None = None
    id: int = 0
    fired: int = 0

    # --- parsed views of the params ---

    def get(self, key: str, default: str = "") -> str:
        return self.params.get(key, default)

    @property
    def code(self) -> int | None:
        if "code" in self.params:
            return int(self.params["code"])
        return None if self.type == API and "latency" in self.params else 500

    @property
    def latency(self) -> float:
        return parse_duration(self.params["latency"]) if "latency" in self.params else 0.0

    @property
    def retry_after(self) -> int | None:
        if "retry-after" in self.params:
            return int(self.params["retry-after"])
        return 1 if self.code == 429 else None

    def seconds(self, key: str, default: float) -> float:
        return parse_duration(self.params[key]) if key in self.params else default

    def exhausted(self) -> bool:
        return self.count is not None and self.fired >= self.count

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "rule": self.text, "type": self.type, "fired": self.fired,
                "remaining": None if self.count is None else max(self.count - self.fired, 0)}

    # --- matching ---

    def matches_resource(self, resource: str, group: str, subresource: str) -> bool:
        want = self.params.get("resource")
        want_sub = self.params.get("subresource")
        if want:
            base, _, sub = want.partition("/")
            plural, _, want_group = base.partition(".")
            if plural not in ("*", resource) or (want_group and want_group != group):
                return False
            if want_sub is None:
                want_sub = sub if sub else ""
        if want_sub is not None and want_sub != "*" and want_sub != subresource:
            return False
        return True

    def matches_request(self, verb: str, resource: str, group: str, subresource: str, namespace: str,
                        name: str, user_agent: str) -> bool:
        verbs = self.params.get("verb")
        if verbs and verbs != "*" and verb not in verbs.split("|"):
            return False
        if not self.matches_resource(resource, group, subresource):
            return False
        for key, value in (("namespace", namespace), ("name", name)):
            if key in self.params and self.params[key] != value:
                return False
        ua = self.params.get("user-agent")
        return not ua or fnmatch.fnmatchcase(user_agent, ua)

    def matches_kubelet(self, node: str, driver: str) -> bool:
        return all(k not in self.params or self.params[k] == v for k, v in (("node", node), ("driver", driver)))


def parse_rule(text: str) -> Rule:
    """Parse `TYPE[:key=value,...]` (see the module doc); raises RuleError."""
    text = text.strip()
    head, _, rest = text.partition(":")
    type_ = head.strip()
    if type_ not in TYPES:
        raise RuleError(f"unknown fault type {type_!r} in {text!r} (known: {', '.join(TYPES)})")
    params: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise RuleError(f"expected key=value, got {item!r} in {text!r}")
        if key not in _KEYS[type_] | _COMMON_KEYS:
            raise RuleError(f"{type_} rules take no key {key!r} (keys: "
                            f"{', '.join(sorted(_KEYS[type_] | _COMMON_KEYS))})")
        params[key] = value.strip()
    rule = Rule(type_, text, params)
    if "rate" in params:
        rule.rate = parse_rate(params.pop("rate"))
    if "count" in params:
        try:
            rule.count = int(params.pop("count"))
        except ValueError:
            raise RuleError(f"count must be an integer in {text!r}")
    elif type_ in (KUBELET_RESTART, NODE_NOT_READY):
        rule.count = 1
    for verb in filter(None, params.get("verb", "").split("|")):
        if verb not in VERBS and verb != "*":
            raise RuleError(f"unknown verb {verb!r} in {text!r} (known: {', '.join(VERBS)})")
    try:
        code = rule.code
        if code is not None and code not in CODES:
            raise RuleError(f"code {code} is not one of {', '.join(map(str, CODES))} in {text!r}")
        for key in ("latency", "after", "for"):
            if key in params:
                parse_duration(params[key])
        if "retry-after" in params:
            int(params["retry-after"])
    except ValueError as e:
        raise RuleError(f"{e} in {text!r}") if not isinstance(e, RuleError) else e
    return rule


def api_error(rule: Rule, resource: str, group: str, name: str) -> errors.APIError:
    """The error a rule answers, as upstream's apiserver would answer that code."""
    code = rule.code or 500
    retry_after = rule.retry_after
    details: dict[str, Any] = {}
    if code == 409:
        return errors.conflict(resource, group, name, errors.STALE_OBJECT)
    if code == 429:
        e = errors.APIError(429, "TooManyRequests", "Too many requests, please try again later.",
                            {"retryAfterSeconds": retry_after or 1})
    elif code == 503:
        e = errors.APIError(503, "ServiceUnavailable", "the server is currently unable to handle the request",
                            {"retryAfterSeconds": retry_after} if retry_after else None)
    elif code == 504:
        e = errors.APIError(504, "Timeout", "Timeout: request did not complete within requested timeout - "
                            "context deadline exceeded", {"retryAfterSeconds": retry_after} if retry_after else None)
    else:
        why = f"dramock injected fault {rule.id}: {rule.text}"
        details = {"causes": [{"message": why}]}
        if retry_after:
            details["retryAfterSeconds"] = retry_after
        e = errors.APIError(500, "InternalError", f"Internal error occurred: {why}", details)
    e.retry_after = retry_after
    return e


@dataclass
class Faults:
    """The rules of one API server (used from its event loop only). `counter` is a prometheus Counter labelled
    (rule, type), or None."""

    counter: Any = None
    rng: random.Random = field(default_factory=random.Random)
    rules: list[Rule] = field(default_factory=list)
    _next_id: int = 1

    def add(self, text: str) -> Rule:
        rule = parse_rule(text)
        rule.id = self._next_id
        self._next_id += 1
        self.rules.append(rule)
        log.info("fault rule %d added: %s", rule.id, rule.text)
        return rule

    def remove(self, rule_id: int) -> bool:
        before = len(self.rules)
        self.rules = [r for r in self.rules if r.id != rule_id]
        return len(self.rules) != before

    def clear(self) -> None:
        self.rules = []
        log.info("fault rules cleared")

    def describe(self) -> list[dict[str, Any]]:
        return [r.describe() for r in self.rules]

    def _fire(self, rule: Rule, what: str) -> bool:
        if rule.exhausted() or (rule.rate < 1 and self.rng.random() >= rule.rate):
            return False
        rule.fired += 1
        log.info("injected fault %d (%s) on %s", rule.id, rule.text, what)
        if self.counter is not None:
            self.counter.labels(rule.text, rule.type).inc()
        return True

    def for_request(self, verb: str, resource: str, group: str, subresource: str, namespace: str, name: str,
                    user_agent: str) -> Rule | None:
        """The first `api` rule that matches and fires for this request."""
        for rule in list(self.rules):
            if rule.type == API and rule.matches_request(verb, resource, group, subresource, namespace, name,
                                                          user_agent):
                what = f"{verb} {resource}{'/' + subresource if subresource else ''} {namespace}/{name} ({user_agent})"
                if self._fire(rule, what):
                    return rule
        return None

    def for_watch(self, resource: str, group: str, namespace: str, user_agent: str) -> Rule | None:
        """The first watch rule that matches and fires for a new watch."""
        for rule in list(self.rules):
            if rule.type in (WATCH_CLOSE, WATCH_GONE) and \
                    rule.matches_request("watch", resource, group, "", namespace, "", user_agent):
                if self._fire(rule, f"watch {resource} {namespace} ({user_agent})"):
                    return rule
        return None

    def for_kubelet(self, type_: str, node: str, driver: str = "") -> Rule | None:
        """The first kubelet-side rule of `type_` that matches and fires (asked by a kubelet shim)."""
        for rule in list(self.rules):
            if rule.type == type_ and rule.matches_kubelet(node, driver):
                if self._fire(rule, f"node {node}" + (f" driver {driver}" if driver else "")):
                    return rule
        return None
