"""The secure port's gate, as one object the HTTP layer holds: who sent a request (authn, impersonation) and
whether it may do what it asks (the authorizer chain). Requests on the plain port are `system:unsecured`."""

from __future__ import annotations

from dataclasses import dataclass, field

from dramock.auth import user as users
from dramock.auth.attributes import ALLOW, Attributes, forbidden
from dramock.auth.authn import Authenticator, AuthnConfig, impersonate
from dramock.auth.authorizer import Authorizer
from dramock.auth.tokens import DEFAULT_ISSUER, ServiceAccountIssuer, load_token_file
from dramock.auth.user import UserInfo


@dataclass
class SecurityConfig:
    authorization_modes: list[str] = field(default_factory=lambda: ["Node", "RBAC"])
    token_auth_file: str = ""
    anonymous_auth: bool = True
    service_account_issuer: str = ""


class Security:
    def __init__(self, config: SecurityConfig, store, data_dir: str) -> None:
        tokens = load_token_file(config.token_auth_file) if config.token_auth_file else {}
        self.issuer = ServiceAccountIssuer.from_data_dir(data_dir, config.service_account_issuer or DEFAULT_ISSUER)
        self.authn = Authenticator(AuthnConfig(tokens, config.anonymous_auth), self.issuer, store.get)
        self.authorizer = Authorizer(config.authorization_modes, store)

    def user(self, secure: bool, peercert, headers) -> UserInfo:
        """The user a request acts as (401/403 APIError when it cannot be authenticated or impersonate)."""
        if not secure:
            return users.unsecured()
        requester = self.authn.authenticate(peercert, headers.get("Authorization", ""))
        return impersonate(requester, headers, self.authorizer.authorize)

    def check(self, a: Attributes) -> None:
        decision, reason = self.authorizer.authorize(a)
        if decision != ALLOW:
            raise forbidden(a, reason)

    def allowed(self, a: Attributes) -> bool:
        return self.authorizer.authorize(a)[0] == ALLOW
