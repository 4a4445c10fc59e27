"""The compiled structural walkers (structural.check) give exactly what the schema-interpreting walk
(structural._walk) gives: the same value, the same unknown fields and the same type errors in the same order,
on random bodies full of nulls, wrong types, unknown fields, out-of-range integers, timestamps and quantities."""

from __future__ import annotations

import copy
import random
from typing import Any

import orjson
import pytest

from dramock.schemas import defs, structural

ROOTS = [
    "io.k8s.api.resource.v1.ResourceClaim",
    "io.k8s.api.resource.v1.ResourceClaimTemplate",
    "io.k8s.api.resource.v1.ResourceSlice",
    "io.k8s.api.resource.v1.DeviceClass",
    "io.k8s.api.core.v1.Pod",
    "io.k8s.api.core.v1.Node",
    "io.k8s.api.apps.v1.Deployment",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
]

WRONG = ["x", "", 0, 7, -3, 2 ** 31, 2 ** 40, 2 ** 70, 1.5, 2.0, True, False, {}, [], {"zz": 1}, ["a", None]]
TIMES = ["2024-01-01T00:00:00Z", "2024-01-01T10:00:00.123456+02:00", "2024-02-30T00:00:00Z", "yesterday", "",
         "2024-01-01T00:00:00.1Z"]
QUANTITIES = ["1", "0", "1024Mi", "1.5", "100m", "2e3", "bad", "", 5, 1.5, "  3 "]


def value_for(schema: defs.Schema, rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if roll < 0.08:
        return None
    if roll < 0.14 or depth > 6:
        return copy.deepcopy(rng.choice(WRONG))
    ref = defs.ref_name(schema)
    if ref in ("io.k8s.apimachinery.pkg.apis.meta.v1.Time", "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"):
        return rng.choice(TIMES)
    if ref == "io.k8s.apimachinery.pkg.api.resource.Quantity":
        return rng.choice(QUANTITIES)
    resolved = defs.resolve(schema)
    if "oneOf" in resolved:
        return rng.choice(["http", 80, 2 ** 40, 1.5, None])
    props = resolved.get("properties")
    if props is not None:
        names = sorted(props)
        obj = {k: value_for(props[k], rng, depth + 1) for k in rng.sample(names, min(len(names), rng.randint(0, 5)))}
        if rng.random() < 0.2:
            obj["unknownField"] = {"nested": [1]}
        return obj
    add = resolved.get("additionalProperties")
    if isinstance(add, dict):
        return {f"k{i}": value_for(add, rng, depth + 1) for i in range(rng.randint(0, 2))}
    if "items" in resolved:
        return [value_for(resolved["items"], rng, depth + 1) for _ in range(rng.randint(0, 3))]
    types = defs.types_of(resolved)
    if "integer" in types:
        return rng.choice([1, 0, -5, 2 ** 31, 2 ** 62, 2 ** 64])
    if "number" in types:
        return rng.choice([1, 0.5, -2])
    if "boolean" in types:
        return rng.choice([True, False])
    if "string" in types:
        return rng.choice(["a", "", "dra.example.com"])
    return copy.deepcopy(rng.choice(WRONG))


def interpreted(obj: dict, definition: str) -> structural.DecodeReport:
    report = structural.DecodeReport()
    structural._walk(obj, defs.definition(definition), "", report, definition.rsplit(".", 1)[-1])
    return report


@pytest.mark.parametrize("definition", ROOTS)
def test_compiled_walk_matches_the_interpreted_walk(definition: str) -> None:
    rng = random.Random(definition)
    problems = 0
    for _ in range(300):
        body = value_for({"$ref": defs.REF_PREFIX + definition}, rng, 0)
        if not isinstance(body, dict):
            continue
        a, b = copy.deepcopy(body), copy.deepcopy(body)
        want = interpreted(a, definition)
        got = structural.check(b, definition)
        assert (b, got.unknown, got.type_errors) == (a, want.unknown, want.type_errors), body
        c = copy.deepcopy(body)  # again: a spec the first walk found clean is not walked again
        again = structural.check(c, definition)
        assert (c, again.unknown, again.type_errors) == (a, want.unknown, want.type_errors), body
        problems += bool(want.unknown or want.type_errors)
    assert problems > 50  # the bodies did exercise the error paths


def test_a_spec_walked_clean_once_is_not_walked_again_and_the_rest_still_is() -> None:
    definition = "io.k8s.api.resource.v1.ResourceClaim"
    spec = {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c", "count": 1}}]}}
    first = {"metadata": {"name": "a"}, "spec": copy.deepcopy(spec), "status": {}}
    assert structural.check(first, definition).unknown == []
    assert (definition, orjson.dumps(spec)) in structural._CLEAN_SPECS
    again = {"metadata": {"name": "b", "bogus": 1}, "spec": copy.deepcopy(spec), "status": {"x": 1}}
    report = structural.check(again, definition)
    assert report.unknown == ["metadata.bogus", "status.x"]
    assert again == {"metadata": {"name": "b"}, "spec": spec, "status": {}} and list(again) == list(first)
    # A spec with something to report is walked (and reported) every time.
    for _ in range(2):
        bad = {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c", "zz": 1}}]}}}
        assert structural.check(bad, definition).unknown == ["spec.devices.requests[0].exactly.zz"]


def test_an_unknown_field_and_a_wrong_type_are_reported_where_they_are() -> None:
    body = {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c", "count": "1",
                                                                       "bogus": 1}}]}}}
    report = structural.check(body, "io.k8s.api.resource.v1.ResourceClaim")
    assert report.unknown == ["spec.devices.requests[0].exactly.bogus"]
    assert report.type_errors == ["json: cannot unmarshal string into Go struct field "
                                  "ExactDeviceRequest.spec.devices.requests.exactly.count of type int64"]
    assert "bogus" not in body["spec"]["devices"]["requests"][0]["exactly"]
