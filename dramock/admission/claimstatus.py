"""DRAResourceClaimGranularStatusAuthorization (beta in 1.37, on): who writes a ResourceClaim's
status.devices. Besides `update`/`patch` on resourceclaims/status, the writer needs, on the synthetic
subresource `resourceclaims/driver` named after each driver whose entries change, either
`associated-node:<verb>` (its credential is bound to the node the claim is allocated on) or
`arbitrary-node:<verb>`."""

from __future__ import annotations

from typing import Any

from dramock import errors
from dramock.auth import user as users
from dramock.auth.attributes import ALLOW, Attributes, forbidden_message
from dramock.auth.authorizer import Authorizer
from dramock.schemas.validation.field import Cause, forbidden

Obj = dict[str, Any]


def _devices_by_driver(claim: Obj | None) -> dict[str, list]:
    out: dict[str, list] = {}
    for d in ((claim or {}).get("status") or {}).get("devices") or []:
        out.setdefault(d.get("driver", ""), []).append(d)
    return out


def _allocated_node(claim: Obj | None) -> str:
    """The node a claim's allocation is limited to (a single-node selector on metadata.name), or ""."""
    terms = ((((claim or {}).get("status") or {}).get("allocation") or {}).get("nodeSelector") or {}) \
        .get("nodeSelectorTerms") or []
    for t in terms:
        for f in t.get("matchFields") or []:
            if f.get("key") == "metadata.name" and f.get("operator") == "In" and len(f.get("values") or []) == 1:
                return f["values"][0]
    return ""


class ClaimStatusAuthorization:
    """Upstream runs these checks in the status strategy's ValidateUpdate, so a refusal is a 422 Invalid whose
    causes are Forbidden field errors (on `status` for binding, on `status.devices` for a driver)."""

    def __init__(self, authorizer: Authorizer, enabled: bool = True) -> None:
        self.authorizer = authorizer
        self.enabled = enabled

    def admit(self, call, obj: Obj | None, old: Obj | None) -> None:
        user = getattr(call, "user", None)
        kind = call.kind
        if not self.enabled or user is None or users.privileged(user) or obj is None or old is None:
            return
        if kind.group != "resource.k8s.io" or kind.plural != "resourceclaims" or call.subresource != "status":
            return
        verb = "patch" if call.verb == "patch" else "update"
        causes = self._binding(user, verb, obj, old) + self._drivers(user, verb, call.namespace or "", obj, old)
        if causes:
            raise errors.invalid("ResourceClaim", kind.group, call.name or "", causes)

    def _binding(self, user, verb: str, obj: Obj, old: Obj) -> list[Cause]:
        """status.allocation and status.reservedFor: `<verb>` on resourceclaims/binding. Upstream asks without a
        namespace or name, so only a ClusterRole grants it."""
        new_status, old_status = obj.get("status") or {}, old.get("status") or {}
        if all(new_status.get(f) == old_status.get(f) for f in ("allocation", "reservedFor")):
            return []
        attrs = Attributes(user, verb, api_group="resource.k8s.io", resource="resourceclaims", subresource="binding")
        return self._refused("status", attrs)

    def _drivers(self, user, verb: str, namespace: str, obj: Obj, old: Obj) -> list[Cause]:
        """status.devices, per driver whose entries change: arbitrary-node:<verb>, or associated-node:<verb> for a
        credential bound to the node the claim is allocated on."""
        new, before = _devices_by_driver(obj), _devices_by_driver(old)
        node = _allocated_node(obj) or _allocated_node(old)
        user_node = (user.extra.get(users.EXTRA_NODE_NAME) or [""])[0] or (user.node_name or "")
        causes: list[Cause] = []
        for driver in sorted(set(new) | set(before)):
            if new.get(driver) == before.get(driver):
                continue
            arbitrary, associated = (Attributes(user, f"{scope}:{verb}", namespace=namespace,
                                                api_group="resource.k8s.io", resource="resourceclaims",
                                                subresource="driver", name=driver)
                                     for scope in ("arbitrary-node", "associated-node"))
            on_its_node = bool(node) and user_node == node
            causes += self._refused("status.devices", *((arbitrary, associated) if on_its_node else (arbitrary,)))
        return causes

    def _refused(self, path: str, *alternatives: Attributes) -> list[Cause]:
        """No cause when any alternative is allowed; else one Forbidden naming the last one asked."""
        for attrs in alternatives:
            decision, reason = self.authorizer.authorize(attrs)
            if decision == ALLOW:
                return []
        return [forbidden(path, forbidden_message(attrs) + (f": {reason}" if reason else ""))]
