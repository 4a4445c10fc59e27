"""Fields a ResourceSlice device shares with an allocation result: binding conditions and
skipNodeOperations."""

from __future__ import annotations

from typing import Any

from dramock.schemas.validation.field import (
    Cause,
    _list,
    _str,
    child,
    duplicate,
    index,
    invalid_list,
    invalid_value,
    not_supported,
)
from dramock.schemas.validation.names import validate_label_name
from dramock.schemas.validation.resource.common import validate_slice
from dramock.schemas.validation.resource.limits import (
    BINDING_CONDITIONS_MAX_SIZE,
    BINDING_FAILURE_CONDITIONS_MAX_SIZE,
    SKIP_NODE_OPERATIONS,
)


def _validate_binding_parameters(conditions: Any, failure_conditions: Any, path: str) -> list[Cause]:
    bc = [_str(c) for c in _list(conditions)] if conditions is not None else None
    bfc = [_str(c) for c in _list(failure_conditions)] if failure_conditions is not None else None
    errs = validate_slice(bc or [], BINDING_CONDITIONS_MAX_SIZE, validate_label_name,
                          child(path, "bindingConditions"))
    errs += validate_slice(bfc or [], BINDING_FAILURE_CONDITIONS_MAX_SIZE, validate_label_name,
                           child(path, "bindingFailureConditions"))
    seen: set[str] = set()
    for i, c in enumerate(bc or []):
        if c in seen:
            errs.append(duplicate(index(child(path, "bindingConditions"), i), c))
        seen.add(c)
    seen_failure: set[str] = set()
    for i, c in enumerate(bfc or []):
        if c in seen_failure:
            errs.append(duplicate(index(child(path, "bindingFailureConditions"), i), c))
        seen_failure.add(c)
        if c in set(bc or []):
            errs.append(invalid_value(index(child(path, "bindingFailureConditions"), i), c,
                                      "bindingFailureConditions must not overlap with bindingConditions"))
    if not bc and bfc:
        errs.append(invalid_list(child(path, "bindingConditions"), "string", bc,
                                 "bindingConditions are required to use bindingFailureConditions"))
    if not bfc and bc:
        errs.append(invalid_list(child(path, "bindingFailureConditions"), "string", bfc,
                                 "bindingFailureConditions are required to use bindingConditions"))
    return errs


def _validate_skip_node_operations(ops: Any, path: str) -> list[Cause]:
    if ops is None:
        return []
    items = [_str(o) for o in _list(ops)]
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, op in enumerate(items):
        if op not in SKIP_NODE_OPERATIONS:
            errs.append(not_supported(index(path, i), op, SKIP_NODE_OPERATIONS))
        if op in seen:
            errs.append(duplicate(index(path, i), op))
        seen.add(op)
    if "NodePrepareResources" in seen and "NodeUnprepareResources" not in seen and "*" not in seen:
        errs.append(invalid_list(path, "resource.SkipNodeOperation", items,
                                 "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also "
                                 "skipped"))
    return errs
