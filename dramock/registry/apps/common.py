"""Pieces the workload kinds (apps/v1, batch/v1) share: pod-template defaulting, the update-strategy
defaults, the pod-template columns of their tables and their Strategy base (defaulting and validation
hooks). Upstream's pkg/registry/apps/* and pkg/registry/batch/job."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dramock.registry.core.podspec import default_pod_template
from dramock.registry.printing import col
from dramock.registry.strategy import Strategy
from dramock.schemas import labelselector
from dramock.schemas.validation.field import Cause

Obj = dict[str, Any]
APPS = "io.k8s.api.apps.v1."


def workload_spec(obj: Obj) -> Obj:
    """The object's spec with its pod template defaulted ({} when the spec is not an object)."""
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        default_pod_template(spec.get("template"))
        return spec
    return {}


def default_update_strategy(spec: Obj, **rolling_update: Any) -> None:
    """updateStrategy defaults to RollingUpdate, whose parameters default to `rolling_update`."""
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            ru = strategy.setdefault("rollingUpdate", {})
            if isinstance(ru, dict):
                for key, value in rolling_update.items():
                    ru.setdefault(key, value)
    spec.setdefault("revisionHistoryLimit", 10)


class WorkloadStrategy(Strategy):
    """A workload's defaulting and validation, as functions its module names."""

    defaults: Callable[[Obj], None] = staticmethod(lambda obj: None)
    validation: Callable[[Obj], list[Cause]] = staticmethod(lambda obj: [])
    update_validation: Callable[[Obj, Obj], list[Cause]] = staticmethod(lambda new, old: [])

    def default(self, obj: Obj) -> None:
        type(self).defaults(obj)

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return type(self).validation(obj)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return type(self).validation(new) + type(self).update_validation(new, old)


# ---------------------------------------------------------------- printing


def containers_col() -> Obj:
    return col("Containers", "string", "Names of each container in the template.", priority=1)


def images_col() -> Obj:
    return col("Images", "string", "Images referenced by each container in the template.", priority=1)


def selector_col() -> Obj:
    return col("Selector", "string", "The label selector of the pods.", priority=1)


def template_cells(o: Obj) -> list[str]:
    cs = (((o.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    return [",".join(c.get("name", "") for c in cs), ",".join(c.get("image", "") for c in cs)]


def selector(o: Obj) -> str:
    sel = (o.get("spec") or {}).get("selector")
    return labelselector.to_string(sel) if sel else "<none>"


def status_int(o: Obj, key: str) -> int:
    return int((o.get("status") or {}).get(key) or 0)


def spec_int(o: Obj, key: str) -> int:
    return int((o.get("spec") or {}).get(key) or 0)
