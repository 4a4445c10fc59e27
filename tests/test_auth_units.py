"""dramock.auth without a server: rule matching, coverage for escalation checks, the token file, ServiceAccount
JWTs, the authorizer chain and upstream's 403 messages."""

from __future__ import annotations

import datetime

import jwt
import pytest

from dramock.auth import bootstrap_policy, tokens
from dramock.auth.attributes import ALLOW, DENY, NO_OPINION, Attributes, forbidden
from dramock.auth.authn import user_from_peercert
from dramock.auth.authorizer import Authorizer, ModeError, parse_modes
from dramock.auth.rules import covers, rule_allows
from dramock.auth.user import UserInfo

BOB = UserInfo("bob", groups=["system:authenticated"])


class FakeStore:
    """Buckets of objects, as RevisionLog.get/list read them."""

    def __init__(self, objects: dict[str, dict[str, dict]]):
        self.objects = objects

    def get(self, bucket, key):
        return self.objects.get(bucket, {}).get(key)

    def list(self, bucket):
        return sorted(self.objects.get(bucket, {}).items())


def test_rule_matching_follows_upstream():
    rule = {"verbs": ["get"], "apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"]}
    a = Attributes(BOB, "get", api_group="resource.k8s.io", resource="resourceclaims", subresource="status")
    assert rule_allows(a, rule)
    assert not rule_allows(Attributes(BOB, "get", api_group="resource.k8s.io", resource="resourceclaims"), rule)
    assert rule_allows(a, {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/status"]})
    named = {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["p1"]}
    assert rule_allows(Attributes(BOB, "get", resource="pods", name="p1"), named)
    assert not rule_allows(Attributes(BOB, "list", resource="pods"), named)
    assert not rule_allows(Attributes(BOB, "get", resource="pods"), named)  # a name rule never matches no name
    url = {"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}
    assert rule_allows(Attributes(BOB, "get", resource_request=False, path="/apis/resource.k8s.io"), url)
    assert not rule_allows(Attributes(BOB, "get", resource_request=False, path="/api"), url)


def test_covers_breaks_rules_into_single_grants():
    held = [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "secrets"]},
            {"verbs": ["*"], "apiGroups": ["resource.k8s.io"], "resources": ["*/status"]}]
    assert covers(held, {"verbs": ["get"], "apiGroups": [""], "resources": ["pods", "secrets"]})
    assert covers(held, {"verbs": ["update"], "apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"]})
    assert not covers(held, {"verbs": ["get", "delete"], "apiGroups": [""], "resources": ["pods"]})
    assert not covers(held, {"verbs": ["get"], "apiGroups": ["*"], "resources": ["pods"]})
    assert covers([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]}],
                  {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]})
    assert not covers([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]}],
                      {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]})


def test_forbidden_messages_are_upstreams():
    e = forbidden(Attributes(BOB, "update", namespace="ns", api_group="resource.k8s.io", resource="resourceclaims",
                             subresource="status", name="c"), "")
    assert e.code == 403 and e.reason == "Forbidden"
    assert e.message == ('resourceclaims.resource.k8s.io "c" is forbidden: User "bob" cannot update resource '
                         '"resourceclaims/status" in API group "resource.k8s.io" in the namespace "ns"')
    e = forbidden(Attributes(BOB, "list", resource="nodes"), "")
    assert e.message == ('nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the '
                         'cluster scope')
    e = forbidden(Attributes(BOB, "get", resource_request=False, path="/metrics"), "")
    assert e.message == 'forbidden: User "bob" cannot get path "/metrics"'


def test_token_file(tmp_path):
    path = tmp_path / "tokens.csv"
    path.write_text('t1,alice,100,"a,b"\nt2,bob,101\n\n')
    got = tokens.load_token_file(str(path))
    assert got["t1"] == UserInfo("alice", "100", ["a", "b"]) and got["t2"] == UserInfo("bob", "101", [])
    path.write_text("t3,carol\n")
    with pytest.raises(tokens.TokenFileError):
        tokens.load_token_file(str(path))


def test_service_account_tokens_are_validated_with_upstreams_claims(tmp_path):
    issuer = tokens.ServiceAccountIssuer.from_data_dir(str(tmp_path))
    sa = {"metadata": {"name": "drv", "namespace": "ns", "uid": "u1"}}
    node = {"metadata": {"name": "node-1", "uid": "n1"}}
    objects = {("serviceaccounts", "ns/drv"): sa}
    token, expiry = issuer.issue("ns", sa, [], 3600, node=node)
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["iss"] == claims["aud"][0] == "https://kubernetes.default.svc.cluster.local"
    assert claims["sub"] == "system:serviceaccount:ns:drv"
    assert claims["kubernetes.io"] == {"namespace": "ns", "serviceaccount": {"name": "drv", "uid": "u1"},
                                       "node": {"name": "node-1", "uid": "n1"}}
    assert expiry > datetime.datetime.now(datetime.UTC)
    u = issuer.validate(token, lambda b, k: objects.get((b, k)))
    assert u is not None and u.name == "system:serviceaccount:ns:drv"
    assert u.groups == ["system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"]
    assert u.extra["authentication.kubernetes.io/node-name"] == ["node-1"]
    # The same key from the data dir validates it again; a re-created ServiceAccount does not.
    again = tokens.ServiceAccountIssuer.from_data_dir(str(tmp_path))
    assert again.validate(token, lambda b, k: objects.get((b, k))) is not None
    assert issuer.validate(token, lambda b, k: {"metadata": {"name": "drv", "uid": "u2"}}) is None
    other_audience, _ = issuer.issue("ns", sa, ["vault"], 3600)
    assert issuer.validate(other_audience, lambda b, k: objects.get((b, k))) is None
    assert issuer.validate(token + "x", lambda b, k: objects.get((b, k))) is None


def test_peer_certificate_user():
    cert = {"subject": ((("organizationName", "system:nodes"),), (("commonName", "system:node:n1"),))}
    u = user_from_peercert(cert)
    assert u == UserInfo("system:node:n1", groups=["system:nodes"]) and u.node_name == "n1"
    assert user_from_peercert({}) is None


def _with_bootstrap(extra: dict[str, dict[str, dict]] | None = None) -> FakeStore:
    objects: dict[str, dict[str, dict]] = {}
    for plural, obj in bootstrap_policy.objects():
        objects.setdefault(f"rbac.authorization.k8s.io/{plural}", {})[obj["metadata"]["name"]] = obj
    for bucket, items in (extra or {}).items():
        objects.setdefault(bucket, {}).update(items)
    return FakeStore(objects)


def test_authorizer_chain_and_bootstrap_policy():
    authz = Authorizer(parse_modes("Node,RBAC"), _with_bootstrap())
    anon = UserInfo("system:anonymous", groups=["system:unauthenticated"])
    assert authz.authorize(Attributes(anon, "get", resource_request=False, path="/version"))[0] == ALLOW
    assert authz.authorize(Attributes(anon, "get", resource_request=False, path="/apis"))[0] == NO_OPINION
    assert authz.authorize(Attributes(BOB, "get", resource_request=False, path="/apis"))[0] == ALLOW
    assert authz.authorize(Attributes(BOB, "create", api_group="authorization.k8s.io",
                                      resource="selfsubjectaccessreviews"))[0] == ALLOW
    assert authz.authorize(Attributes(BOB, "list", resource="pods", namespace="default"))[0] == NO_OPINION
    root = UserInfo("root", groups=["system:masters"])
    assert authz.authorize(Attributes(root, "delete", resource="nodes", name="n"))[0] == ALLOW
    # The aggregated `view` role gets its rules from system:aggregate-to-view.
    view = authz.rbac.cluster_role_rules(authz.rbac._cluster_roles()["view"], authz.rbac._cluster_roles())
    assert any("resourceclaims" in r.get("resources", []) for r in view)
    assert Authorizer(["AlwaysDeny"], _with_bootstrap()).authorize(Attributes(BOB, "get", resource="pods"))[0] == DENY
    with pytest.raises(ModeError):
        parse_modes("Webhook")


def test_node_authorizer_sees_only_its_own_slices_and_claims():
    slices = {"s1": {"metadata": {"name": "s1"}, "spec": {"nodeName": "node-1"}},
              "s2": {"metadata": {"name": "s2"}, "spec": {"nodeName": "node-2"}}}
    pods = {"default/p": {"metadata": {"name": "p", "namespace": "default"},
                          "spec": {"nodeName": "node-1", "resourceClaims": [{"name": "g", "resourceClaimName": "c"}]}}}
    authz = Authorizer(["Node", "RBAC"], _with_bootstrap({"resource.k8s.io/resourceslices": slices, "pods": pods}))
    node1 = UserInfo("system:node:node-1", groups=["system:nodes", "system:authenticated"])

    def decide(verb, resource, name="", namespace="", selector=None):
        return authz.authorize(Attributes(node1, verb, namespace=namespace, api_group="resource.k8s.io",
                                          resource=resource, name=name, field_selector=selector or {}))[0]

    assert decide("get", "resourceslices", "s1") == ALLOW
    assert decide("update", "resourceslices", "s2") == NO_OPINION
    assert decide("list", "resourceslices", selector={"spec.nodeName": "node-1"}) == ALLOW
    assert decide("list", "resourceslices") == DENY
    assert decide("get", "resourceclaims", "c", "default") == ALLOW
    assert decide("get", "resourceclaims", "other", "default") == NO_OPINION
    # Not a node: the Node authorizer has no opinion, RBAC decides.
    assert authz.node.authorize(Attributes(BOB, "get", api_group="resource.k8s.io", resource="resourceslices",
                                           name="s1"))[0] == NO_OPINION
