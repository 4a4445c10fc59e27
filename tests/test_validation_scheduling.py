"""scheduling.k8s.io/v1beta1 PodGroup and Workload validation (dramock/schemas/validation/scheduling.py): the
DRAWorkloadResourceClaims fields and the scheduling policy, one case per rule, plus the gated-field drops."""

from __future__ import annotations

import copy

import pytest

from dramock.registry.gatedfields import drop_disabled_fields as drop_rows
from dramock.registry.scheduling import podgroup, workload
from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.validation import scheduling as v

_ROWS = {"PodGroup": podgroup.PodGroupStrategy.gated_fields, "Workload": workload.WorkloadStrategy.gated_fields}


def drop_disabled_fields(kind: str, new: dict, old: dict | None, gates: FeatureGates) -> None:
    drop_rows(_ROWS[kind], new, old, gates)


def _group(claims: list | None = None, **spec) -> dict:
    out: dict = {"metadata": {"name": "g", "namespace": "ns"},
                 "spec": {"schedulingPolicy": {"basic": {}}, **spec}}
    if claims is not None:
        out["spec"]["resourceClaims"] = claims
    return out


def _errs(causes: list[dict]) -> list[tuple[str, str, str]]:
    return [(c["field"], c["reason"], c["message"]) for c in causes]


def test_valid_pod_group_with_claims():
    assert v.validate_pod_group(_group([{"name": "gpu", "resourceClaimTemplateName": "gpu-tpl"},
                                        {"name": "nic", "resourceClaimName": "shared-nic"}])) == []


@pytest.mark.parametrize("claim, expected", [
    ({"resourceClaimName": "c"}, [("spec.resourceClaims[0].name", "FieldValueRequired", "Required value")]),
    ({"name": "Not_A_Label", "resourceClaimName": "c"},
     [("spec.resourceClaims[0].name", "FieldValueInvalid", None)]),
    ({"name": "a"}, [("spec.resourceClaims[0]", "FieldValueInvalid",
                      'Invalid value: scheduling.PodGroupResourceClaim{Name:"a", ResourceClaimName:(*string)(nil), '
                      'ResourceClaimTemplateName:(*string)(nil)}: must specify one of: `resourceClaimName`, '
                      '`resourceClaimTemplateName`')]),
    ({"name": "a", "resourceClaimName": "c", "resourceClaimTemplateName": "t"},
     [("spec.resourceClaims[0]", "FieldValueInvalid",
       'Invalid value: scheduling.PodGroupResourceClaim{Name:"a", ResourceClaimName:"c", '
       'ResourceClaimTemplateName:"t"}: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be '
       'specified')]),
    ({"name": "a", "resourceClaimName": "Bad_Name"}, [("spec.resourceClaims[0].resourceClaimName",
                                                       "FieldValueInvalid", None)]),
    ({"name": "a", "resourceClaimTemplateName": "Bad_Name"},
     [("spec.resourceClaims[0].resourceClaimTemplateName", "FieldValueInvalid", None)]),
])
def test_pod_group_claim_rules(claim, expected):
    got = _errs(v.validate_pod_group(_group([claim])))
    assert [(f, r) for f, r, _ in got] == [(f, r) for f, r, _ in expected]
    for (_, _, msg), (_, _, want) in zip(got, expected, strict=True):
        if want is not None:
            assert msg == want


def test_pod_group_claim_names_unique_and_at_most_four():
    claims = [{"name": "a", "resourceClaimName": "c"}] * 2
    assert _errs(v.validate_pod_group(_group(claims))) == [
        ("spec.resourceClaims[1].name", "FieldValueDuplicate", 'Duplicate value: "a"')]
    many = [{"name": f"c{i}", "resourceClaimName": "c"} for i in range(5)]
    assert _errs(v.validate_pod_group(_group(many))) == [
        ("spec.resourceClaims", "FieldValueTooMany", "Too many: 5: must have at most 4 items")]


@pytest.mark.parametrize("policy, field", [
    (None, "spec.schedulingPolicy"),
    ({}, "spec.schedulingPolicy"),
    ({"basic": {}, "gang": {"minCount": 1}}, "spec.schedulingPolicy"),
    ({"gang": {"minCount": 0}}, "spec.schedulingPolicy.gang.minCount"),
])
def test_pod_group_policy(policy, field):
    pg = _group()
    pg["spec"]["schedulingPolicy"] = policy
    assert [c["field"] for c in v.validate_pod_group(pg)] == [field]


def test_pod_group_claims_and_policy_are_immutable():
    old = _group([{"name": "gpu", "resourceClaimTemplateName": "t"}])
    new = copy.deepcopy(old)
    new["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = "other"
    assert [c["field"] for c in v.validate_pod_group_update(new, old)] == ["spec.resourceClaims"]
    new = copy.deepcopy(old)
    new["spec"]["schedulingPolicy"] = {"gang": {"minCount": 2}}
    assert [c["field"] for c in v.validate_pod_group_update(new, old)] == ["spec.schedulingPolicy"]
    gang = _group(schedulingPolicy={"gang": {"minCount": 2}})
    bigger = copy.deepcopy(gang)
    bigger["spec"]["schedulingPolicy"]["gang"]["minCount"] = 3  # minCount stays mutable
    assert v.validate_pod_group_update(bigger, gang) == []


def test_pod_group_status_names_spec_claims():
    pg = _group([{"name": "gpu", "resourceClaimTemplateName": "t"}])
    pg["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "g-gpu-x1"},
                                              {"name": "other", "resourceClaimName": "Bad_Name"},
                                              {"name": "gpu"}]}
    assert [(c["field"], c["reason"]) for c in v.validate_pod_group_status_update(pg, pg)] == [
        ("status.resourceClaimStatuses[1].name", "FieldValueInvalid"),
        ("status.resourceClaimStatuses[1].resourceClaimName", "FieldValueInvalid"),
        ("status.resourceClaimStatuses[2].name", "FieldValueDuplicate"),
    ]


def test_workload_templates():
    wl = {"metadata": {"name": "w", "namespace": "ns"},
          "spec": {"podGroupTemplates": [
              {"name": "t", "schedulingPolicy": {"basic": {}}, "resourceClaims": [{"name": "a"}]},
              {"name": "t", "schedulingPolicy": {"basic": {}}}]}}
    assert [c["field"] for c in v.validate_workload(wl)] == [
        "spec.podGroupTemplates[0].resourceClaims[0]", "spec.podGroupTemplates[1].name"]
    assert [c["field"] for c in v.validate_workload({"spec": {}})] == ["spec.podGroupTemplates"]
    ok = {"spec": {"podGroupTemplates": [{"name": "t", "schedulingPolicy": {"basic": {}},
                                          "resourceClaims": [{"name": "a", "resourceClaimName": "c"}]}]}}
    changed = copy.deepcopy(ok)
    changed["spec"]["podGroupTemplates"][0]["resourceClaims"] = []
    assert [c["field"] for c in v.validate_workload_update(changed, ok)] == [
        "spec.podGroupTemplates[0].resourceClaims"]


def test_gate_off_drops_the_claims_unless_already_used():
    off, on = FeatureGates({"DRAWorkloadResourceClaims": False}), FeatureGates({"DRAWorkloadResourceClaims": True})
    pg = _group([{"name": "gpu", "resourceClaimTemplateName": "t"}])
    kept = copy.deepcopy(pg)
    drop_disabled_fields("PodGroup", kept, None, on)
    assert kept["spec"]["resourceClaims"]
    dropped = copy.deepcopy(pg)
    drop_disabled_fields("PodGroup", dropped, None, off)
    assert "resourceClaims" not in dropped["spec"]
    update = copy.deepcopy(pg)
    drop_disabled_fields("PodGroup", update, pg, off)  # the stored group already uses them
    assert update["spec"]["resourceClaims"]
    wl = {"spec": {"podGroupTemplates": [{"name": "t", "resourceClaims": [{"name": "a", "resourceClaimName": "c"}]}]}}
    drop_disabled_fields("Workload", wl, None, off)
    assert "resourceClaims" not in wl["spec"]["podGroupTemplates"][0]
