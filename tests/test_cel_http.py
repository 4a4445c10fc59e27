"""Malformed CEL selectors are refused at create with 422 on the expression's path, for every place
a selector can stand (DeviceClass, ResourceClaim exactly / firstAvailable, ResourceClaimTemplate)."""

from __future__ import annotations

import itertools

import pytest

from tests.test_cel import MALFORMED

_names = itertools.count()


def _class(expr: str) -> tuple[str, dict, str]:
    return ("/apis/resource.k8s.io/v1/deviceclasses",
            {"metadata": {"name": f"cel-bad-{next(_names)}"}, "spec": {"selectors": [{"cel": {"expression": expr}}]}},
            "spec.selectors[0].cel.expression")


def _claim(expr: str) -> tuple[str, dict, str]:
    return ("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
            {"metadata": {"name": f"cel-bad-{next(_names)}"}, "spec": {"devices": {"requests": [
                {"name": "r", "exactly": {"deviceClassName": "c", "selectors": [{"cel": {"expression": expr}}]}}]}}},
            "spec.devices.requests[0].exactly.selectors[0].cel.expression")


def _subrequest(expr: str) -> tuple[str, dict, str]:
    return ("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
            {"metadata": {"name": f"cel-bad-{next(_names)}"}, "spec": {"devices": {"requests": [
                {"name": "r", "firstAvailable": [
                    {"name": "s", "deviceClassName": "c", "selectors": [{"cel": {"expression": expr}}]}]}]}}},
            "spec.devices.requests[0].firstAvailable[0].selectors[0].cel.expression")


def _template(expr: str) -> tuple[str, dict, str]:
    return ("/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates",
            {"metadata": {"name": f"cel-bad-{next(_names)}"}, "spec": {"spec": {"devices": {"requests": [
                {"name": "r", "exactly": {"deviceClassName": "c", "selectors": [{"cel": {"expression": expr}}]}}]}}}},
            "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression")


PLACES = [_class, _claim, _subrequest, _template]


@pytest.mark.parametrize("i,expr", list(enumerate(m[0] for m in MALFORMED)), ids=[m[0][:40] for m in MALFORMED])
def test_malformed_selector_is_invalid_at_its_path(server, i, expr):
    path, body, field = PLACES[i % len(PLACES)](expr)
    code, _, status = server.request("POST", path, body)
    assert (code, status["reason"]) == (422, "Invalid"), status
    causes = status["details"]["causes"]
    assert [(c["field"], c["reason"]) for c in causes if "cel" in c["field"]] in (
        [(field, "FieldValueInvalid")], [(field, "FieldValueForbidden")]), causes
    assert server.request("GET", f"{path}/{body['metadata']['name']}")[0] == 404


def test_enough_malformed_expressions():
    assert len(MALFORMED) >= 20


def test_exponential_expression_is_refused_by_the_cost_estimate(server):
    expr = "true"
    for var in "abcdefg":  # 10^7 iterations in the worst case: far over the 1,000,000 budget
        expr = f"[1,2,3,4,5,6,7,8,9,10].all({var}, {expr})"
    path, body, field = _class(expr)
    code, _, status = server.request("POST", path, body)
    assert code == 422
    assert status["details"]["causes"][0] == {"reason": "FieldValueForbidden", "field": field,
                                              "message": "Forbidden: too complex, exceeds cost limit"}
