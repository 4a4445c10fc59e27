"""DRAResourceClaimGranularStatusAuthorization (beta in 1.37, on): who writes a ResourceClaim's
status.devices. Besides `update`/`patch` on resourceclaims/status, the writer needs, on the synthetic
subresource `resourceclaims/driver` named after each driver whose entries change, either
`associated-node:<verb>` (its credential is bound to the node the claim is allocated on) or
`arbitrary-node:<verb>`."""

from __future__ import annotations

from typing import Any

from dramock import errors
from dramock.auth import user as users
from dramock.auth.attributes import Attributes, forbidden_message
from dramock.auth.authorizer import Authorizer

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
    def __init__(self, authorizer: Authorizer, enabled: bool = True) -> None:
        self.authorizer = authorizer
        self.enabled = enabled

    def admit(self, call, obj: Obj | None, old: Obj | None) -> None:
        user = getattr(call, "user", None)
        kind = call.kind
        if not self.enabled or user is None or users.MASTERS in user.groups or obj is None or old is None:
            return
        if kind.group != "resource.k8s.io" or kind.plural != "resourceclaims" or call.subresource != "status":
            return
        new, before = _devices_by_driver(obj), _devices_by_driver(old)
        verb = "patch" if call.verb == "patch" else "update"
        node = _allocated_node(obj) or _allocated_node(old)
        for driver in sorted(set(new) | set(before)):
            if new.get(driver) == before.get(driver):
                continue
            attrs = [Attributes(user, f"{scope}:{verb}", namespace=call.namespace or "",
                                api_group=kind.group, resource="resourceclaims", subresource="driver", name=driver)
                     for scope in ("arbitrary-node", "associated-node")]
            if self.authorizer.allowed(attrs[0]):
                continue
            user_node = (user.extra.get(users.EXTRA_NODE_NAME) or [""])[0] or (user.node_name or "")
            if node and user_node == node and self.authorizer.allowed(attrs[1]):
                continue
            raise errors.forbidden(kind.plural, kind.group, call.name or "",
                                   f"{forbidden_message(attrs[1])} (or {attrs[0].verb}): changing status.devices "
                                   f'of driver "{driver}" requires it')
