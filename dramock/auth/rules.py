"""Matching a request against RBAC PolicyRules (upstream's rbac/v1 helpers: VerbMatches, APIGroupMatches,
ResourceMatches, ResourceNameMatches, NonResourceURLMatches)."""

from __future__ import annotations

from typing import Any

from dramock.auth.attributes import Attributes

Rule = dict[str, Any]


def _has(values: list[str] | None, want: str) -> bool:
    values = values or []
    return "*" in values or want in values


def resource_matches(rule: Rule, a: Attributes) -> bool:
    for r in rule.get("resources") or []:
        if r == "*" or r == a.combined_resource:
            return True
        if a.subresource and r == "*/" + a.subresource:
            return True
    return False


def rule_allows(a: Attributes, rule: Rule) -> bool:
    if not _has(rule.get("verbs"), a.verb):
        return False
    if a.resource_request:
        names = rule.get("resourceNames") or []
        return (_has(rule.get("apiGroups"), a.api_group) and resource_matches(rule, a)
                and (not names or a.name in names))
    for url in rule.get("nonResourceURLs") or []:
        if url == "*" or url == a.path or (url.endswith("*") and a.path.startswith(url[:-1])):
            return True
    return False


def rules_allow(a: Attributes, rules: list[Rule]) -> bool:
    return any(rule_allows(a, r) for r in rules)


def covers(owner: list[Rule], wanted: Rule) -> bool:
    """Whether the rules `owner` holds grant everything `wanted` grants (upstream's validation.Covers), checked
    by breaking `wanted` into single verb/group/resource/name (or URL) grants."""
    verbs = wanted.get("verbs") or []
    urls = wanted.get("nonResourceURLs") or []
    if urls:
        return all(_covers_url(owner, v, u) for v in verbs for u in urls)
    names = wanted.get("resourceNames") or [None]
    for v in verbs:
        for g in wanted.get("apiGroups") or []:
            for r in wanted.get("resources") or []:
                for n in names:
                    if not any(_covers_one(o, v, g, r, n) for o in owner):
                        return False
    return True


def _covers_one(o: Rule, verb: str, group: str, resource: str, name: str | None) -> bool:
    if not _has(o.get("verbs"), verb) or not _has(o.get("apiGroups"), group):
        return False
    res = o.get("resources") or []
    if "*" not in res and resource not in res:
        sub = resource.partition("/")[2]
        if not (sub and "*/" + sub in res):
            return False
    names = o.get("resourceNames") or []
    return not names or (name is not None and name in names)


def _covers_url(owner: list[Rule], verb: str, url: str) -> bool:
    for o in owner:
        if not _has(o.get("verbs"), verb):
            continue
        for u in o.get("nonResourceURLs") or []:
            if u == "*" or u == url or (u.endswith("*") and url.startswith(u[:-1])):
                return True
    return False
