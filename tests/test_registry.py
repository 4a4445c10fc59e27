"""The kind registry as an object: what one server serves is built from its own runtime config, gates and
namespace lookup, so two servers' registries never see each other's configuration (no module globals)."""

from __future__ import annotations

import pytest

from dramock.registry import Registry, RuntimeConfigError, parse_runtime_config
from dramock.registry.kinds import ALPHA_KINDS, GATED_FIELDS, QUOTA_EVALUATORS, STORED_KINDS
from dramock.registry.strategy import KnownValid
from dramock.schemas.featuregates import FeatureGates

RESOURCE = "resource.k8s.io"
ADMIN_LABEL = "resource.kubernetes.io/admin-access"


def _claim(namespace: str = "ns") -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": namespace},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu",
                                                                         "adminAccess": True}}]}}}


def test_registries_built_from_different_configs_are_independent() -> None:
    plain = Registry.build()
    beta = Registry.build({(RESOURCE, "v1beta2"): True, (RESOURCE, "v1alpha3"): True},
                          FeatureGates({"DRAResourcePoolStatus": True}))
    assert plain.versions_of(RESOURCE) == ["v1"]
    assert beta.versions_of(RESOURCE) == ["v1", "v1beta2", "v1alpha3"]
    assert plain.lookup(RESOURCE, "v1beta2", "resourceclaims") is None
    claims = beta.lookup(RESOURCE, "v1beta2", "resourceclaims")
    assert claims is not None and claims.version == "v1beta2"
    assert beta.lookup(RESOURCE, "v1alpha3", "resourcepoolstatusrequests") is not None
    # Building the second did not change the first.
    assert plain.lookup(RESOURCE, "v1alpha3", "devicetaintrules") is None
    assert [k.plural for k in plain.kinds_in(RESOURCE, "v1")] == [
        "deviceclasses", "resourceslices", "resourceclaims", "resourceclaimtemplates", "devicetaintrules"]


def test_alpha_kind_needs_its_version_and_its_gate() -> None:
    only_version = Registry.build({(RESOURCE, "v1alpha3"): True}, FeatureGates({"DRAResourcePoolStatus": False}))
    assert only_version.lookup(RESOURCE, "v1alpha3", "resourcepoolstatusrequests") is None
    assert only_version.lookup(RESOURCE, "v1alpha3", "devicetaintrules") is not None
    only_gate = Registry.build({}, FeatureGates({"DRAResourcePoolStatus": True}))
    assert RESOURCE + "/v1alpha3" not in {f"{g}/{v}" for g, v in only_gate.group_versions}


def test_strategies_see_their_registrys_gates() -> None:
    on = Registry.build(gates=FeatureGates({"DRAAdminAccess": True}))
    off = Registry.build(gates=FeatureGates({"DRAAdminAccess": False}))
    kept, dropped = _claim(), _claim()
    kind_on, kind_off = on.lookup(RESOURCE, "v1", "resourceclaims"), off.lookup(RESOURCE, "v1", "resourceclaims")
    assert kind_on is not None and kind_off is not None
    on.strategy(kind_on).prepare_for_create(kept)
    off.strategy(kind_off).prepare_for_create(dropped)
    assert kept["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] is True
    assert "adminAccess" not in dropped["spec"]["devices"]["requests"][0]["exactly"]
    assert on.strategy(kind_on) is on.strategy(kind_on)  # one strategy per kind and registry


def test_admin_access_asks_the_registrys_namespace_lookup() -> None:
    labels = {"admin": {ADMIN_LABEL: "true"}}
    with_ns = Registry.build(gates=FeatureGates({"DRAAdminAccess": True}), namespace_labels=labels.get)
    without = Registry.build(gates=FeatureGates({"DRAAdminAccess": True}))
    for reg, namespace, forbidden in ((with_ns, "admin", False), (with_ns, "other", True), (without, "admin", True)):
        kind = reg.lookup(RESOURCE, "v1", "resourceclaims")
        assert kind is not None
        causes = reg.strategy(kind).validate(_claim(namespace))
        fields = [c["field"] for c in causes if c["reason"] == "FieldValueForbidden"]
        assert fields == (["spec.devices.requests[0].adminAccess"] if forbidden else []), (namespace, causes)


def test_runtime_config_is_parsed_as_kube_apiserver_does() -> None:
    assert parse_runtime_config("resource.k8s.io/v1beta1=true, resource.k8s.io/v1beta2") == {
        (RESOURCE, "v1beta1"): True, (RESOURCE, "v1beta2"): True}
    assert parse_runtime_config("resource.k8s.io/v1beta1=false") == {(RESOURCE, "v1beta1"): False}
    with pytest.raises(RuntimeConfigError, match="unknown api groups example.com/v1"):
        parse_runtime_config("example.com/v1=true")
    with pytest.raises(RuntimeConfigError, match="invalid value of resource.k8s.io/v1beta1: maybe"):
        parse_runtime_config("resource.k8s.io/v1beta1=maybe")


def test_the_list_registers_each_resource_once_with_consistent_rules() -> None:
    gvrs = [(k.group, k.version, k.plural) for k in STORED_KINDS]
    assert len(gvrs) == len(set(gvrs))
    definitions = {k.kind: k.definition for k in (*STORED_KINDS, *ALPHA_KINDS)}
    for row in GATED_FIELDS:  # each kind's rows resolve against that kind's own definition
        assert row.root == definitions[row.kind], row
    assert set(QUOTA_EVALUATORS) == {"pods", "resourceclaims.resource.k8s.io"}


def test_known_valid_remembers_acceptance_only() -> None:
    memo, calls = KnownValid(), []

    def check(content: dict) -> list:
        def validate() -> list:
            calls.append(content)
            return [] if content["ok"] else [{"field": "x", "reason": "FieldValueInvalid"}]
        return memo.check(content, validate)

    assert check({"ok": True}) == check({"ok": True}) == [] and len(calls) == 1
    assert check({"ok": False}) == check({"ok": False}) == [{"field": "x", "reason": "FieldValueInvalid"}]
    assert len(calls) == 3


def test_a_claim_spec_found_valid_once_is_still_checked_where_anything_differs() -> None:
    labels = {"ns": {ADMIN_LABEL: "true"}}
    reg = Registry.build(gates=FeatureGates({"DRAAdminAccess": True}), namespace_labels=labels.get)
    kind = reg.lookup(RESOURCE, "v1", "resourceclaims")
    assert kind is not None
    strategy = reg.strategy(kind)

    def causes(claim: dict) -> list:
        strategy.default(claim)  # as a create does first
        return strategy.validate(claim)

    assert causes(_claim()) == []
    # The same spec again: its object metadata and the namespace rule are checked each time.
    renamed = _claim()
    renamed["metadata"]["name"] = "Not_A_Name"
    assert [c["field"] for c in causes(renamed)] == ["metadata.name"]
    assert [c["field"] for c in causes(_claim("other"))] == ["spec.devices.requests[0].adminAccess"]
    # A different spec is validated afresh, every time.
    for _ in range(2):
        bad = _claim()
        bad["spec"]["devices"]["requests"][0]["name"] = "Not_A_Name"
        assert [c["field"] for c in causes(bad)] == ["spec.devices.requests[0].name"]
