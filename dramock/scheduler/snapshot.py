"""A cluster as the scheduler sees it, held in memory: what `dramock explain` (served by the API server) and
`dramock simulate` (offline, from `kubectl get ... -o yaml`) read. Plain v1 objects, grouped by kind."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

Obj = dict[str, Any]

# Kind -> Snapshot field. Everything else in an input file is ignored (namespaces, events, ...).
FIELDS = {"Node": "nodes", "Pod": "pods", "ResourceClaim": "claims", "ResourceClaimTemplate": "templates",
          "DeviceClass": "classes", "ResourceSlice": "slices", "DeviceTaintRule": "taint_rules"}
NAMESPACED = {"Pod", "ResourceClaim", "ResourceClaimTemplate"}
# The names `--remove KIND/NS/NAME` accepts for each kind (singular, plural, as kubectl spells them).
ALIASES = {alias: kind for kind in FIELDS
           for alias in (kind.lower(), kind.lower() + "s", kind.lower() + "es")}
ALIASES.update({"no": "Node", "po": "Pod"})
# Storage buckets of the API server, per kind (dramock.registry Kind.storage_bucket).
BUCKETS = {"Node": "nodes", "Pod": "pods", "ResourceClaim": "resource.k8s.io/resourceclaims",
           "ResourceClaimTemplate": "resource.k8s.io/resourceclaimtemplates",
           "DeviceClass": "resource.k8s.io/deviceclasses", "ResourceSlice": "resource.k8s.io/resourceslices",
           "DeviceTaintRule": "resource.k8s.io/devicetaintrules"}


class SnapshotError(ValueError):
    pass


@dataclass
class Snapshot:
    nodes: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    claims: list[Obj] = field(default_factory=list)
    templates: list[Obj] = field(default_factory=list)
    classes: list[Obj] = field(default_factory=list)
    slices: list[Obj] = field(default_factory=list)
    taint_rules: list[Obj] = field(default_factory=list)

    @classmethod
    def of(cls, objects: Iterable[Obj]) -> Snapshot:
        snap = cls()
        for obj in objects:
            snap.add(obj)
        return snap

    def add(self, obj: Obj) -> None:
        """Add (or replace, by kind/namespace/name) an object; a v1 List adds its items."""
        if not isinstance(obj, dict):
            raise SnapshotError(f"expected an object, got {type(obj).__name__}")
        kind = obj.get("kind") or ""
        if kind.endswith("List") and isinstance(obj.get("items"), list):
            item_kind = kind[:-4]
            for item in obj["items"]:
                if isinstance(item, dict) and not item.get("kind") and item_kind in FIELDS:
                    item = {**item, "kind": item_kind}
                self.add(item)
            return
        name = FIELDS.get(kind)
        if name is None:
            return
        md = obj.get("metadata") or {}
        if not md.get("name"):
            raise SnapshotError(f"a {kind} without metadata.name")
        if kind in NAMESPACED and not md.get("namespace"):  # as kubectl apply: the default namespace
            md = {**md, "namespace": "default"}
            obj = {**obj, "metadata": md}
        bucket: list[Obj] = getattr(self, name)
        key = (md.get("namespace") or "", md["name"])
        for i, old in enumerate(bucket):
            if _key(old) == key:
                bucket[i] = obj
                return
        bucket.append(obj)

    def remove(self, spec: str) -> None:
        """`KIND/NS/NAME` (namespaced) or `KIND/NAME`; the kind as kubectl spells it (pod, pods, resourceclaim)."""
        parts = spec.split("/")
        kind = ALIASES.get(parts[0].lower()) if parts else None
        if kind is None or len(parts) not in (2, 3) or not all(parts):
            raise SnapshotError(f"--remove {spec!r}: expected KIND/NAMESPACE/NAME or KIND/NAME with KIND one of "
                                f"{', '.join(sorted(k.lower() for k in FIELDS))}")
        key = (parts[1], parts[2]) if len(parts) == 3 else ("", parts[1])
        bucket: list[Obj] = getattr(self, FIELDS[kind])
        kept = [o for o in bucket if _key(o) != key]
        if len(kept) == len(bucket):
            raise SnapshotError(f"--remove {spec!r}: no such {kind} in the snapshot")
        bucket[:] = kept

    def pod(self, namespace: str, name: str) -> Obj | None:
        return _find(self.pods, namespace, name)

    def claim(self, namespace: str, name: str) -> Obj | None:
        return _find(self.claims, namespace, name)

    def template(self, namespace: str, name: str) -> Obj | None:
        return _find(self.templates, namespace, name)

    def node(self, name: str) -> Obj | None:
        return _find(self.nodes, "", name)

    def class_map(self) -> dict[str, Obj]:
        return {c["metadata"]["name"]: c for c in self.classes}

    def copy(self) -> Snapshot:
        return Snapshot(**{name: copy.deepcopy(getattr(self, name)) for name in FIELDS.values()})


def from_store(store: Any) -> Snapshot:
    """The API server's current objects (its RevisionLog), for the explain endpoint."""
    snap = Snapshot()
    for kind, bucket in BUCKETS.items():
        getattr(snap, FIELDS[kind]).extend({**obj, "kind": kind} for _, obj in store.list(bucket))
    return snap


def load_documents(text: str, source: str = "<input>") -> list[Obj]:
    """Every YAML/JSON document of a file (kubectl's `-o yaml` List, or `---`-separated manifests)."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as e:
        raise SnapshotError(f"{source}: not YAML: {e}") from None
    for d in docs:
        if not isinstance(d, dict):
            raise SnapshotError(f"{source}: expected objects, found a {type(d).__name__}")
    return docs


def _key(obj: Obj) -> tuple[str, str]:
    md = obj.get("metadata") or {}
    return md.get("namespace") or "", md.get("name") or ""


def _find(objs: list[Obj], namespace: str, name: str) -> Obj | None:
    for o in objs:
        if _key(o) == (namespace, name):
            return o
    return None
