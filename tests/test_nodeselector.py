"""The one NodeSelector matcher (dramock.schemas.nodeselector) and its users, the scheduler and the allocator:
upstream's semantics, above all that an empty selector or an empty term matches nothing."""

from __future__ import annotations

from dramock.scheduler.allocator import allocate
from dramock.scheduler.plugins.dynamicresources import MSG_NOT_AVAILABLE, allocated_claims_reason
from dramock.scheduler.plugins.nodefit import matches_node_affinity
from dramock.scheduler.types import AllocationInput
from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.nodeselector import node_selector_matches, node_selector_term_matches

NODE = {"metadata": {"name": "n1", "labels": {"zone": "a", "gpus": "8"}}}


def sel(*terms: dict) -> dict:
    return {"nodeSelectorTerms": list(terms)}


def test_empty_selector_and_empty_term_match_nothing() -> None:
    assert not node_selector_matches({}, NODE)
    assert not node_selector_matches(sel(), NODE)
    assert not node_selector_matches(sel({}), NODE)
    assert not node_selector_matches(sel({"matchExpressions": [], "matchFields": []}), NODE)
    assert not node_selector_term_matches({}, NODE)
    assert not node_selector_matches(None, NODE)
    assert not node_selector_matches(sel({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}), None)
    # An empty term does not stop another term from matching.
    assert node_selector_matches(sel({}, {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}),
                                 NODE)


def test_operators_and_fields() -> None:
    def expr(**r: object) -> dict:
        return sel({"matchExpressions": [r]})

    assert node_selector_matches(expr(key="zone", operator="In", values=["a", "b"]), NODE)
    assert not node_selector_matches(expr(key="zone", operator="NotIn", values=["a"]), NODE)
    assert node_selector_matches(expr(key="rack", operator="NotIn", values=["x"]), NODE)
    assert node_selector_matches(expr(key="zone", operator="Exists"), NODE)
    assert node_selector_matches(expr(key="rack", operator="DoesNotExist"), NODE)
    assert node_selector_matches(expr(key="gpus", operator="Gt", values=["4"]), NODE)
    assert not node_selector_matches(expr(key="gpus", operator="Lt", values=["4"]), NODE)
    assert not node_selector_matches(expr(key="zone", operator="Gt", values=["4"]), NODE)  # "a" is no integer
    # Requirements upstream cannot parse make their term match nothing.
    assert not node_selector_matches(expr(key="zone", operator="Near", values=["a"]), NODE)
    assert not node_selector_matches(expr(key="rack", operator="NotIn", values=[]), NODE)
    assert not node_selector_matches(expr(key="zone", operator="Exists", values=["a"]), NODE)
    assert not node_selector_matches(expr(key="gpus", operator="Gt", values=["4", "5"]), NODE)
    assert not node_selector_matches(expr(key="gpus", operator="Gt", values=["four"]), NODE)
    # Fields: metadata.name with In / NotIn and exactly one value.
    assert node_selector_matches(sel({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}),
                                 NODE)
    assert not node_selector_matches(sel({"matchFields": [{"key": "metadata.name", "operator": "NotIn",
                                                           "values": ["n1"]}]}), NODE)
    assert not node_selector_matches(sel({"matchFields": [{"key": "metadata.name", "operator": "In",
                                                           "values": ["n1", "n2"]}]}), NODE)
    assert not node_selector_matches(sel({"matchFields": [{"key": "metadata.name", "operator": "Exists"}]}), NODE)
    # Labels and fields of one term are ANDed.
    assert not node_selector_matches(sel({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
                                          "matchFields": [{"key": "metadata.name", "operator": "In",
                                                           "values": ["n2"]}]}), NODE)


def test_scheduler_empty_selectors() -> None:
    """The scheduler: no required affinity or no allocation nodeSelector means any node; an empty one none."""
    assert matches_node_affinity({"spec": {}}, NODE)
    assert not matches_node_affinity(
        {"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}}}, NODE)
    anywhere = {"status": {"allocation": {"devices": {"results": []}}}}
    assert allocated_claims_reason(NODE, [anywhere], "u") == (None, None)
    nowhere = {"status": {"allocation": {"devices": {"results": []}, "nodeSelector": {"nodeSelectorTerms": []}}}}
    assert allocated_claims_reason(NODE, [nowhere], "u") == (MSG_NOT_AVAILABLE, nowhere)


def test_allocator_empty_slice_selector() -> None:
    """The allocator: a slice whose nodeSelector has no terms (or only an empty one) is seen from no node."""
    cls = {"metadata": {"name": "gpu"}, "spec": {}}
    claim = {"metadata": {"name": "c", "namespace": "d", "uid": "c1"},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}}

    def outcome(selector: dict) -> object:
        slc = {"metadata": {"name": "s"}, "spec": {"driver": "gpu.example.com", "nodeSelector": selector,
                                                   "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                                                   "devices": [{"name": "g0"}]}}
        return allocate(AllocationInput(claims=[claim], node=NODE, slices=[slc], classes={"gpu": cls},
                                        gates=FeatureGates())).fits

    assert outcome(sel({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}))
    assert not outcome(sel())
    assert not outcome(sel({}))
