"""What a request asks to do (upstream's authorizer.Attributes), the decisions authorizers give, and the
Status a refusal becomes."""

from __future__ import annotations

from dataclasses import dataclass, field

from dramock import errors
from dramock.auth.user import UserInfo

ALLOW, DENY, NO_OPINION = "Allow", "Deny", "NoOpinion"


@dataclass
class Attributes:
    user: UserInfo
    verb: str
    resource_request: bool = True
    namespace: str = ""
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""  # non-resource requests
    field_selector: dict[str, str] = field(default_factory=dict)  # spec.nodeName=… requirements, for Node

    @property
    def combined_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def forbidden_message(a: Attributes) -> str:
    """upstream's responsewriters.forbiddenMessage."""
    if not a.resource_request:
        return f'User "{a.user.name}" cannot {a.verb} path "{a.path}"'
    if a.namespace:
        return (f'User "{a.user.name}" cannot {a.verb} resource "{a.combined_resource}" in API group '
                f'"{a.api_group}" in the namespace "{a.namespace}"')
    return (f'User "{a.user.name}" cannot {a.verb} resource "{a.combined_resource}" in API group "{a.api_group}" '
            f"at the cluster scope")


def forbidden(a: Attributes, reason: str) -> errors.APIError:
    """The 403 of responsewriters.Forbidden: the message, then the authorizers' reason when they gave one."""
    why = forbidden_message(a) + (f": {reason}" if reason else "")
    if not a.resource_request:
        return errors.APIError(403, "Forbidden", f"forbidden: {why}", {})
    return errors.forbidden(a.resource, a.api_group, a.name, why)


def unauthorized() -> errors.APIError:
    return errors.APIError(401, "Unauthorized", "Unauthorized")
