"""The /dramock/faults endpoint: fault rules (dramock.faults) of a running server.

GET lists the rules (with how often each fired), POST adds ({"rule": R}, {"rules": [...]}, or the rules as
text/plain lines), DELETE clears them (or one: /dramock/faults/ID). POST /dramock/faults/fire is a kubelet shim
asking whether one of its faults fires now ({"type", "node", "driver"} -> {"fired": rule or null}).
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from dramock import errors
from dramock.apiserver import codec
from dramock.faults import Faults, RuleError, parse_rule

Obj = dict[str, Any]


async def serve(faults: Faults, request: web.Request, rest: list[str]) -> web.Response:
    if rest == ["fire"] and request.method == "POST":
        ask = await _json_body(request)
        rule = faults.for_kubelet(str(ask.get("type", "")), str(ask.get("node", "")), str(ask.get("driver", "")))
        return _json({"fired": rule.describe() | {"params": rule.params} if rule else None})
    if len(rest) > 1:
        raise errors.path_not_found()
    if rest:
        if request.method != "DELETE" or not rest[0].isdigit():
            raise errors.path_not_found()
        if not faults.remove(int(rest[0])):
            raise errors.APIError(404, "NotFound", f"fault rule {rest[0]} not found", {})
        return _json(_rule_list(faults.describe()))
    if request.method == "GET":
        return _json(_rule_list(faults.describe()))
    if request.method == "DELETE":
        faults.clear()
        return _json(_rule_list([]))
    if request.method != "POST":
        raise errors.APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested "
                              "resource", {})
    if codec.media_type(request.headers.get("Content-Type", "")) == "text/plain":
        texts: list[Any] = [line for line in (await request.text()).splitlines() if line.strip()]
    else:
        doc = await _json_body(request)
        texts = ([doc["rule"]] if "rule" in doc else []) + list(doc.get("rules") or [])
    if not texts or not all(isinstance(t, str) for t in texts):
        raise errors.bad_request('the body must be {"rule": "TYPE:key=value,..."} or {"rules": [...]}')
    try:
        for t in texts:  # all or none
            parse_rule(t)
    except RuleError as e:
        raise errors.bad_request(f"invalid fault rule: {e}")
    added = [faults.add(t) for t in texts]
    return _json(_rule_list([r.describe() for r in added]), status=201)


def _rule_list(items: list[Obj]) -> Obj:
    return {"kind": "FaultRuleList", "apiVersion": "dramock.io/v1", "items": items}


def _json(obj: Obj, status: int = 200) -> web.Response:
    return web.Response(status=status, text=codec.dumps(obj), content_type="application/json")


async def _json_body(request: web.Request) -> Obj:
    try:
        doc = json.loads(await request.read() or b"{}")
    except ValueError as e:
        raise errors.bad_request(f"invalid JSON body: {e}")
    if not isinstance(doc, dict):
        raise errors.bad_request("the body must be a JSON object")
    return doc
