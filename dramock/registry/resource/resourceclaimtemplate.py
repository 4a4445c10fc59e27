"""resource.k8s.io ResourceClaimTemplate (upstream's pkg/registry/resource/resourceclaimtemplate)."""

from __future__ import annotations

from typing import Any

from dramock.registry.kind import Kind
from dramock.registry.printing import Printer, age, name
from dramock.registry.resource.common import (
    GROUP,
    admin_access,
    claim_spec_gated_fields,
    default_claim_requests,
    name_and_age_columns,
)
from dramock.registry.strategy import Strategy
from dramock.schemas import validation as semantic
from dramock.schemas.validation.field import Cause

Obj = dict[str, Any]

# The strategy calls resourceclaimspec.DropDisabledFields on spec.spec.
GATED_FIELDS = tuple(claim_spec_gated_fields("spec.spec", "ResourceClaimTemplate", "resourceclaimspec (template)"))


class ResourceClaimTemplateStrategy(Strategy):
    gated_fields = GATED_FIELDS

    def default(self, obj: Obj) -> None:
        default_claim_requests(((obj.get("spec") or {}).get("spec") or {}).get("devices"))

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        requests = (((obj.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests")
        return admin_access(self, obj, requests) + self.known_valid.check(
            obj.get("spec"), lambda: semantic.validate_resource_claim_template(obj, gates=self.gates))

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return semantic.validate_resource_claim_template_update(new, old, gates=self.gates)


PRINTER = Printer(name_and_age_columns, lambda o, now: [name(o), age(o, now)])

KIND = Kind(GROUP, "v1", "ResourceClaimTemplate", "resourceclaimtemplates", True,
            return_deleted_object=True, strategy=ResourceClaimTemplateStrategy, printer=PRINTER)
