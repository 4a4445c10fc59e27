"""The `Registry`: the kinds one server serves and their strategies, built once from the runtime config
(`--runtime-config`), the feature gates and the namespace-label lookup the DRA admin-access rule needs, and
passed to whatever serves them (routing, REST, discovery, OpenAPI)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping

from dramock.registry.kind import Kind
from dramock.registry.kinds import (
    ALPHA_KINDS,
    OPTIONAL_VERSIONS,
    QUOTA_EVALUATORS,
    STORED_KINDS,
    known_group_versions,
)
from dramock.registry.quota import Evaluator
from dramock.registry.strategy import NamespaceLabels, Strategy, no_namespaces
from dramock.schemas.featuregates import FeatureGates

RuntimeConfig = Mapping[tuple[str, str], bool]


class RuntimeConfigError(ValueError):
    pass


def parse_runtime_config(spec: str) -> dict[tuple[str, str], bool]:
    """`resource.k8s.io/v1beta1=true,...` -> {(group, version): enabled}, as kube-apiserver parses it."""
    out: dict[tuple[str, str], bool] = {}
    known = known_group_versions()
    for part in filter(None, (p.strip() for p in (spec or "").split(","))):
        gv, _, value = part.partition("=")
        value = value or "true"
        if value.lower() not in ("true", "false"):
            raise RuntimeConfigError(f"invalid value of {gv}: {value}, err: strconv.ParseBool")
        group, _, version = gv.rpartition("/")
        if (group, version) not in known:
            raise RuntimeConfigError(f"unknown api groups {gv}")
        out[(group, version)] = value.lower() == "true"
    return out


def served_kinds(runtime_config: RuntimeConfig, gates: FeatureGates) -> tuple[Kind, ...]:
    """The stored kinds, plus the optional versions the runtime config turns on with the alpha kinds whose
    gates are on."""
    kinds = list(STORED_KINDS)
    for gv, names in OPTIONAL_VERSIONS.items():
        if runtime_config.get(gv):
            kinds += [dataclasses.replace(k, version=gv[1]) for k in STORED_KINDS
                      if k.group == gv[0] and k.kind in names]
            kinds += [k for k in ALPHA_KINDS if (k.group, k.version) == gv and gates.enabled(k.gate)]
    return tuple(kinds)


class Registry:
    """What one server serves: its kinds (in discovery order), lookups over them, and one strategy per kind."""

    def __init__(self, kinds: tuple[Kind, ...], gates: FeatureGates,
                 namespace_labels: NamespaceLabels = no_namespaces):
        self.kinds = kinds
        self.gates = gates
        self.namespace_labels = namespace_labels
        # (group, version) pairs in the order discovery lists them; the core group is "".
        self.group_versions: tuple[tuple[str, str], ...] = tuple(dict.fromkeys((k.group, k.version) for k in kinds))
        self._versions_of: dict[str, list[str]] = {}  # group -> its versions, both in discovery order
        for g, v in self.group_versions:
            self._versions_of.setdefault(g, []).append(v)
        self._by_gvr = {(k.group, k.version, k.plural): k for k in kinds}
        self._strategies: dict[Kind, Strategy] = {}
        # The kinds with their own quota usage rules, by group-resource (every other kind counts objects).
        self.quota_evaluators: Mapping[str, Evaluator] = QUOTA_EVALUATORS

    @classmethod
    def build(cls, runtime_config: RuntimeConfig | None = None, gates: FeatureGates | None = None,
              namespace_labels: NamespaceLabels = no_namespaces) -> Registry:
        gates = gates or FeatureGates()
        return cls(served_kinds(runtime_config or {}, gates), gates, namespace_labels)

    @staticmethod
    @functools.cache
    def default() -> Registry:
        """The kinds served with no runtime config and the default gates, without namespace lookups (for
        tools and tests that build documents outside a server)."""
        return Registry.build()

    def lookup(self, group: str, version: str, plural: str) -> Kind | None:
        return self._by_gvr.get((group, version, plural))

    def kinds_in(self, group: str, version: str) -> list[Kind]:
        return [k for k in self.kinds if k.group == group and k.version == version]

    def groups(self) -> list[str]:
        """Non-core groups in discovery order."""
        return [g for g in self._versions_of if g]

    def versions_of(self, group: str) -> list[str]:
        return list(self._versions_of.get(group, ()))

    def serves(self, group: str, version: str | None = None) -> bool:
        """Whether the group (in that version) is served: asked on every request, so without building lists."""
        versions = self._versions_of.get(group)
        return versions is not None and (version is None or version in versions)

    def by_kind(self, api_version: str, kind: str) -> Kind | None:
        for k in self.kinds:
            if k.api_version == api_version and k.kind == kind:
                return k
        return None

    def strategy(self, kind: Kind) -> Strategy:
        """The kind's strategy, made once with this server's gates and namespace lookup."""
        s = self._strategies.get(kind)
        if s is None:
            s = self._strategies[kind] = kind.strategy(kind, self.gates, self.namespace_labels)
        return s
