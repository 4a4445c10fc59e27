"""The kinds' rules, one module per kind (upstream's pkg/registry/<group>/<resource>): each holds the kind's
`Kind` entry, its strategy (defaulting, prepare-for-create/update, status, warnings, the calls into its
validation module under `dramock/schemas/validation`), its gated fields, its table and, where it has one, its
quota evaluator. `kinds.py` is the list that registers them; `Registry` is what one server serves, built
from its configuration and passed down.

Generic machinery: `kind` (the entry), `strategy` (the base strategy), `gatedfields` (the dropper),
`printing` (the table builder), `quota` (resource lists, scopes, evaluators)."""

from dramock.registry.kind import Kind
from dramock.registry.registry import Registry, RuntimeConfigError, parse_runtime_config

__all__ = ["Kind", "Registry", "RuntimeConfigError", "parse_runtime_config"]
