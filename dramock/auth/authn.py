"""Authentication of the secure port, in kube-apiserver's order: an X.509 client certificate the client CA
verified (CN = user, O = groups), then a bearer token (--token-auth-file, then ServiceAccount JWTs), else
system:anonymous when --anonymous-auth allows it. Then the Impersonate-* headers, each checked against the
authorizer with the `impersonate` verb."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dramock import errors
from dramock.auth import user as users
from dramock.auth.attributes import ALLOW, Attributes, forbidden, unauthorized
from dramock.auth.tokens import ServiceAccountIssuer
from dramock.auth.user import UserInfo


@dataclass
class AuthnConfig:
    tokens: dict[str, UserInfo] = field(default_factory=dict)  # --token-auth-file
    anonymous: bool = True  # --anonymous-auth


def _with_authenticated(u: UserInfo) -> UserInfo:
    if users.AUTHENTICATED not in u.groups and u.name != users.ANONYMOUS:
        u.groups = [*u.groups, users.AUTHENTICATED]
    return u


def user_from_peercert(cert: Mapping[str, Any] | None) -> UserInfo | None:
    """The user of a verified client certificate (ssl's getpeercert() dict), as upstream's CommonNameUserConversion."""
    if not cert:
        return None
    name, groups = "", []
    for rdn in cert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                name = value
            elif key == "organizationName":
                groups.append(value)
    return UserInfo(name, groups=groups) if name else None


class Authenticator:
    def __init__(self, config: AuthnConfig, issuer: ServiceAccountIssuer, lookup: Callable[[str, str], Any]):
        self.config = config
        self.issuer = issuer
        self.lookup = lookup

    def authenticate(self, peercert: Mapping[str, Any] | None, authorization: str) -> UserInfo:
        """The request's user, or a 401 APIError."""
        u = user_from_peercert(peercert)
        if u is not None:
            return _with_authenticated(u)
        scheme, _, token = authorization.partition(" ")
        if authorization:
            token = token.strip()
            if scheme.lower() != "bearer" or not token:
                raise unauthorized()
            static = self.config.tokens.get(token)
            if static is not None:
                return _with_authenticated(UserInfo(static.name, static.uid, list(static.groups)))
            sa = self.issuer.validate(token, self.lookup)
            if sa is not None:
                return sa
            raise unauthorized()
        if self.config.anonymous:
            return users.anonymous()
        raise unauthorized()


def impersonate(requester: UserInfo, headers, authorize: Callable[[Attributes], tuple[str, str]]) -> UserInfo:
    """Apply Impersonate-User / -Group / -Uid / -Extra-* (upstream's WithImpersonation filter)."""
    name = headers.get("Impersonate-User", "")
    groups = headers.getall("Impersonate-Group", [])
    uid = headers.get("Impersonate-Uid", "")
    extra: dict[str, list[str]] = {}
    for key in headers:
        if key.lower().startswith("impersonate-extra-"):
            extra.setdefault(key[len("impersonate-extra-"):].lower(), []).extend(headers.getall(key))
    if not name:
        if groups or uid or extra:
            raise errors.APIError(500, "InternalError", "Internal error occurred: requested "
                                  f"{groups or uid or extra} without impersonating a user", {})
        return requester

    def check(resource: str, target: str, namespace: str = "", group: str = "", sub: str = "") -> None:
        a = Attributes(requester, "impersonate", namespace=namespace, api_group=group, resource=resource,
                       subresource=sub, name=target)
        if authorize(a)[0] != ALLOW:
            raise forbidden(a, "")

    sa = users.split_service_account(name)
    if sa is not None:
        check("serviceaccounts", sa[1], namespace=sa[0])
    else:
        check("users", name)
    for g in groups:
        check("groups", g)
    if uid:
        check("uids", uid, group="authentication.k8s.io")
    for key, values in extra.items():
        for v in values:
            check("userextras", v, group="authentication.k8s.io", sub=key)
    out_groups = list(groups)
    if sa is not None and not groups:
        out_groups = users.service_account_groups(sa[0])
    u = UserInfo(name, uid, out_groups, extra)
    if name != users.ANONYMOUS:
        u = _with_authenticated(u)
    elif users.UNAUTHENTICATED not in u.groups:
        u.groups.append(users.UNAUTHENTICATED)
    return u
