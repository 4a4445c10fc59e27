"""ResourcePoolStatusRequest (resource.k8s.io/v1alpha3, DRAResourcePoolStatus, KEP-5677)."""

from __future__ import annotations

from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.validation.field import (
    Cause,
    Obj,
    _dict,
    _list,
    _str,
    child,
    index,
    invalid_value,
    required,
    semantic_equal,
    too_many,
)
from dramock.schemas.validation.meta import validate_conditions
from dramock.schemas.validation.resource.names import validate_driver_name, validate_pool_name

RESOURCE_POOL_STATUS_REQUEST_LIMIT_MAX = 1000
RESOURCE_POOL_STATUS_REQUEST_MAX_POOLS = 1000
RESOURCE_POOL_STATUS_REQUEST_MAX_CONDITIONS = 10


def validate_resource_pool_status_request(obj: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    spec = _dict(obj.get("spec"))
    errs: list[Cause] = []
    if not spec.get("driver"):
        errs.append(required("spec.driver"))
    else:
        errs += validate_driver_name(_str(spec["driver"]), "spec.driver")
    if spec.get("poolName") is not None:
        errs += validate_pool_name(_str(spec["poolName"]), "spec.poolName")
    limit = spec.get("limit")
    if isinstance(limit, int) and limit < 1:
        errs.append(invalid_value("spec.limit", limit, "must be greater than or equal to 1"))
    elif isinstance(limit, int) and limit > RESOURCE_POOL_STATUS_REQUEST_LIMIT_MAX:
        errs.append(invalid_value("spec.limit", limit,
                                  f"must be less than or equal to {RESOURCE_POOL_STATUS_REQUEST_LIMIT_MAX}"))
    return errs


def validate_resource_pool_status_request_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None
                                                 ) -> list[Cause]:
    """The spec is immutable."""
    if not semantic_equal(new.get("spec"), old.get("spec")):
        return [invalid_value("spec", new.get("spec"), "field is immutable")]
    return []


def validate_resource_pool_status_request_status_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None
                                                        ) -> list[Cause]:
    """A status once set is final (the request is complete); a new one names its pool count."""
    if old.get("status") is not None:
        if not semantic_equal(new.get("status"), old.get("status")):
            return [invalid_value("status", new.get("status"), "field is immutable")]
        return []
    status = new.get("status")
    if status is None:
        return []
    status = _dict(status)
    errs: list[Cause] = []
    count = status.get("poolCount")
    if count is None:
        errs.append(required("status.poolCount"))
    elif isinstance(count, int) and count < 0:
        errs.append(invalid_value("status.poolCount", count, "must be greater than or equal to 0"))
    pools = _list(status.get("pools"))
    if len(pools) > RESOURCE_POOL_STATUS_REQUEST_MAX_POOLS:
        errs.append(too_many("status.pools", len(pools), RESOURCE_POOL_STATUS_REQUEST_MAX_POOLS))
    for i, pool in enumerate(pools):
        p = index("status.pools", i)
        pool = _dict(pool)
        if not pool.get("driver"):
            errs.append(required(child(p, "driver")))
        else:
            errs += validate_driver_name(_str(pool["driver"]), child(p, "driver"))
        if not pool.get("poolName"):
            errs.append(required(child(p, "poolName")))
        else:
            errs += validate_pool_name(_str(pool["poolName"]), child(p, "poolName"))
    conditions = _list(status.get("conditions"))
    errs += validate_conditions(conditions, "status.conditions")
    if len(conditions) > RESOURCE_POOL_STATUS_REQUEST_MAX_CONDITIONS:
        errs.append(too_many("status.conditions", len(conditions), RESOURCE_POOL_STATUS_REQUEST_MAX_CONDITIONS))
    return errs
