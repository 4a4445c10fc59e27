"""The official Kubernetes 1.37 type definitions, as shipped by the PyPI package `kubernetes-validate`.

Everything that needs to know the shape of an API type (structural validation, patch merge keys,
managedFields, OpenAPI documents) navigates these definitions through this module.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

import kubernetes_validate

SCHEMA_VERSION_DIR = "v1.37.0-local"
REF_PREFIX = "#/$defs/"

Schema = dict[str, Any]


@functools.cache
def definitions() -> dict[str, Schema]:
    """All `$defs` of the 1.37 schema set, keyed by definition name (io.k8s.api.core.v1.Pod)."""
    base = os.path.dirname(kubernetes_validate.__file__)
    path = os.path.join(base, "kubernetes-json-schema", SCHEMA_VERSION_DIR, "_definitions.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)["$defs"]


def definition(name: str) -> Schema:
    return definitions()[name]


def resolve(schema: Schema | None) -> Schema:
    """Follow `$ref`s until a concrete schema. Unknown or empty schemas resolve to {}."""
    while schema and "$ref" in schema:
        schema = definitions()[schema["$ref"][len(REF_PREFIX):]]
    return schema or {}


def ref_name(schema: Schema | None) -> str | None:
    if schema and "$ref" in schema:
        return schema["$ref"][len(REF_PREFIX):]
    return None


def types_of(schema: Schema) -> set[str]:
    """The JSON types a schema admits, without the "null" the local schema flavour adds everywhere."""
    t = schema.get("type")
    if t is None:
        return set()
    if isinstance(t, str):
        return {t}
    return {x for x in t if x != "null"}


def is_object(schema: Schema) -> bool:
    return "object" in types_of(schema) and "properties" in schema


def is_map(schema: Schema) -> bool:
    return "object" in types_of(schema) and "additionalProperties" in schema and "properties" not in schema


def is_list(schema: Schema) -> bool:
    return "array" in types_of(schema)


def child(schema: Schema | None, field: str) -> Schema:
    """The resolved schema of `field` inside an object (or map value) schema; {} when unknown."""
    s = resolve(schema)
    props = s.get("properties")
    if props is not None and field in props:
        return resolve(props[field])
    add = s.get("additionalProperties")
    if isinstance(add, dict):
        return resolve(add)
    return {}


def field_schema(schema: Schema | None, field: str) -> Schema:
    """The unresolved property schema (keeps x-kubernetes-* list extensions that sit beside `items`)."""
    s = resolve(schema)
    return (s.get("properties") or {}).get(field) or {}


def items(schema: Schema | None) -> Schema:
    return resolve(resolve(schema).get("items"))


def list_type(prop: Schema) -> str:
    """"map", "set" or "atomic" as structured-merge-diff sees the list (atomic when unannotated)."""
    return prop.get("x-kubernetes-list-type") or ("map" if prop.get("x-kubernetes-list-map-keys") else "atomic")


def list_map_keys(prop: Schema) -> list[str]:
    return list(prop.get("x-kubernetes-list-map-keys") or [])


def patch_merge_key(prop: Schema) -> str | None:
    return prop.get("x-kubernetes-patch-merge-key")


def patch_strategies(prop: Schema) -> set[str]:
    return set(filter(None, (prop.get("x-kubernetes-patch-strategy") or "").split(",")))


def kind_definition(group: str, version: str, kind: str) -> str | None:
    """The definition name whose x-kubernetes-group-version-kind is (group, version, kind)."""
    return _gvk_index().get((group, version, kind))


@functools.cache
def _gvk_index() -> dict[tuple[str, str, str], str]:
    out: dict[tuple[str, str, str], str] = {}
    for name, s in definitions().items():
        for gvk in s.get("x-kubernetes-group-version-kind") or []:
            key = (gvk.get("group", ""), gvk["version"], gvk["kind"])
            # DeleteOptions and friends carry many GVKs; the first definition listing a GVK wins.
            out.setdefault(key, name)
    return out
