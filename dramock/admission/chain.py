"""The admission chain every write passes after validation and before storage.

Plugins so far: NamespaceLifecycle, then ResourceQuota (last, as upstream: it charges the quota in the same
tick as the storage write). Node restriction joins as its issue lands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from dramock import errors
from dramock.admission.quota import QuotaAdmission
from dramock.admission.serviceip import DEFAULT_SERVICE_CIDR, ServiceIPAllocator
from dramock.registry import Registry
from dramock.storage.revlog import RevisionLog

if TYPE_CHECKING:
    from dramock.registry.kind import Kind

Obj = dict[str, Any]

# Namespaces that exist from the start and may never be deleted.
IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class Target(Protocol):
    """What admission needs to know of a request."""

    kind: Kind
    namespace: str | None
    name: str | None
    subresource: str


class Admission:
    def __init__(self, store: RevisionLog, registry: Registry, service_cidr: str = DEFAULT_SERVICE_CIDR):
        self.store = store
        self.quota = QuotaAdmission(store, registry.quota_evaluators)
        self.service_ips = ServiceIPAllocator(store, service_cidr)
        # Plugins that judge the requesting user (NodeRestriction, RBAC escalation, claim status authorization):
        # objects with admit(call, obj, old) (obj None on delete, old None on create).
        self.plugins: list[Any] = []

    def admit_create(self, call: Target, obj: Obj) -> None:
        self._namespace_lifecycle(call, creating=True)
        for p in self.plugins:
            p.admit(call, obj, None)
        if call.kind.plural == "services" and call.kind.group == "":
            self.service_ips.allocate(obj)
        self.quota.admit(call, obj, None)

    def changes_object(self, call: Target) -> bool:
        """Whether admit_create may change the object it admits (every plugin that does must be named here):
        an object prepared and encoded before admission is then encoded again."""
        return call.kind.plural == "services" and call.kind.group == ""

    def admit_update(self, call: Target, obj: Obj, old: Obj) -> None:
        self._namespace_lifecycle(call, creating=False)
        for p in self.plugins:
            p.admit(call, obj, old)
        self.quota.admit(call, obj, old)

    def admit_delete(self, call: Target, old: Obj) -> None:
        if call.kind.plural == "namespaces" and call.kind.group == "" and call.name in IMMORTAL_NAMESPACES:
            raise errors.forbidden("namespaces", "", call.name or "", "this namespace may not be deleted")
        for p in self.plugins:
            p.admit(call, None, old)

    def _namespace_lifecycle(self, call: Target, creating: bool) -> None:
        if not call.kind.namespaced or not call.namespace:
            return
        ns = self.store.get("namespaces", call.namespace)
        if ns is None:
            raise errors.not_found("namespaces", "", call.namespace)
        if creating and (ns.get("status") or {}).get("phase") == "Terminating":
            # Events may still be written into a terminating namespace, as upstream allows.
            if call.kind.plural == "events":
                return
            raise errors.forbidden(
                call.kind.plural, call.kind.group, call.name or "",
                f"unable to create new content in namespace {call.namespace} because it is being terminated",
            ).with_cause("NamespaceTerminating", "metadata.namespace",
                         f"namespace {call.namespace} is being terminated")
