"""Kubernetes `Status` errors, built in one place with upstream's reasons, codes and messages."""

from __future__ import annotations

from typing import Any


class APIError(Exception):
    """An error answered to the client as a `Status` object."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None,
                 retry_after: int | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.retry_after = retry_after  # seconds, sent as a Retry-After header (429, 503, 504)

    def with_cause(self, reason: str, field: str, message: str) -> APIError:
        details = self.details if self.details is not None else {}
        details.setdefault("causes", []).append({"reason": reason, "message": message, "field": field})
        self.details = details
        return self

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            out["details"] = self.details
        return out


def _details(name: str | None, group: str, kind: str, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    d["kind"] = kind
    d.update(extra)
    return d


def qualified(plural: str, group: str) -> str:
    """`resourceclaims.resource.k8s.io` or `pods`: upstream's GroupResource string."""
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> APIError:
    return APIError(404, "NotFound", f'{qualified(plural, group)} "{name}" not found',
                    _details(name, group, plural))


def already_exists(plural: str, group: str, name: str) -> APIError:
    return APIError(409, "AlreadyExists", f'{qualified(plural, group)} "{name}" already exists',
                    _details(name, group, plural))


def conflict(plural: str, group: str, name: str, why: str) -> APIError:
    return APIError(409, "Conflict",
                    f'Operation cannot be fulfilled on {qualified(plural, group)} "{name}": {why}',
                    _details(name, group, plural))


STALE_OBJECT = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(kind: str, group: str, name: str, causes: list[dict[str, str]]) -> APIError:
    """422 Invalid. Each cause: {"reason": "FieldValueInvalid", "message": ..., "field": ...}."""
    qualified_kind = f"{kind}.{group}" if group else kind
    # Like upstream's ToAggregate: identical messages are reported once.
    messages = list(dict.fromkeys(
        f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes))
    summary = ", ".join(messages)
    if len(messages) > 1:
        summary = f"[{summary}]"
    return APIError(422, "Invalid", f'{qualified_kind} "{name}" is invalid: {summary}',
                    _details(name, group, kind, causes=causes))


def bad_request(message: str, causes: list[dict[str, str]] | None = None) -> APIError:
    return APIError(400, "BadRequest", message, {"causes": causes} if causes else None)


def gone(message: str) -> APIError:
    return APIError(410, "Expired", message)


TOO_OLD_RESOURCE_VERSION = "too old resource version"


def too_old_resource_version(requested: int, oldest: int) -> APIError:
    return APIError(410, "Expired",
                    f"{TOO_OLD_RESOURCE_VERSION}: {requested} ({oldest})")


def method_not_allowed(verb: str, plural: str, group: str) -> APIError:
    return APIError(405, "MethodNotAllowed",
                    f"{verb} is not supported on resources of kind {qualified(plural, group)!r}",
                    _details(None, group, plural))


def unsupported_media_type(content_type: str) -> APIError:
    return APIError(415, "UnsupportedMediaType", f'the body of the request was in an unknown format - '
                    f'accepted media types include: application/json, application/yaml, '
                    f'application/vnd.kubernetes.protobuf, application/apply-patch+yaml, '
                    f'application/json-patch+json, application/merge-patch+json, '
                    f'application/strategic-merge-patch+json (got {content_type!r})')


def not_acceptable(message: str) -> APIError:
    return APIError(406, "NotAcceptable", message)


def request_entity_too_large(limit: int) -> APIError:
    return APIError(413, "RequestEntityTooLarge",
                    f"Request entity too large: limit is {limit}")


def forbidden(plural: str, group: str, name: str, why: str) -> APIError:
    target = f'{qualified(plural, group)} "{name}"' if name else qualified(plural, group)
    return APIError(403, "Forbidden", f"{target} is forbidden: {why}", _details(name, group, plural))


def internal(message: str) -> APIError:
    return APIError(500, "InternalError", f"Internal error occurred: {message}")


def path_not_found() -> APIError:
    return APIError(404, "NotFound", "the server could not find the requested resource",
                    {})
