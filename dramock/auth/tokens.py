"""Bearer tokens: kube-apiserver's static token file and ServiceAccount tokens (signed JWTs from the
TokenRequest API, with upstream's claims)."""

from __future__ import annotations

import csv
import datetime
import hashlib
import os
import uuid
from dataclasses import dataclass

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from dramock.auth import user as users
from dramock.auth.user import UserInfo

# kube-apiserver needs --service-account-issuer; kind and kubeadm use this one, and --api-audiences defaults to it.
DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
DEFAULT_EXPIRATION = 3600  # TokenRequest's spec.expirationSeconds default
MIN_EXPIRATION = 600  # upstream's validation: at least 10 minutes


class TokenFileError(ValueError):
    pass


def load_token_file(path: str) -> dict[str, UserInfo]:
    """`token,user,uid,"group1,group2"` lines (upstream's --token-auth-file) -> token -> user."""
    out: dict[str, UserInfo] = {}
    with open(path, newline="", encoding="utf-8") as f:
        for lineno, row in enumerate(csv.reader(f), 1):
            if not row or not row[0].strip() or row[0].startswith("#"):
                continue
            if len(row) < 3:
                raise TokenFileError(f"token file '{path}' must have at least 3 columns (token, user name, "
                                     f"user uid), found {len(row)} on line {lineno}")
            groups = [g.strip() for g in row[3].split(",") if g.strip()] if len(row) > 3 else []
            out[row[0].strip()] = UserInfo(row[1].strip(), row[2].strip(), groups)
    return out


@dataclass
class ServiceAccountIssuer:
    """Signs and validates ServiceAccount JWTs with a key kept in the data dir."""

    key: ec.EllipticCurvePrivateKey
    issuer: str = DEFAULT_ISSUER
    audiences: tuple[str, ...] = (DEFAULT_ISSUER,)

    @classmethod
    def from_data_dir(cls, data_dir: str, issuer: str = DEFAULT_ISSUER,
                      audiences: tuple[str, ...] = ()) -> ServiceAccountIssuer:
        pki = os.path.join(os.path.abspath(data_dir), "pki")
        os.makedirs(pki, exist_ok=True)
        path = os.path.join(pki, "sa.key")
        if os.path.exists(path):
            with open(path, "rb") as f:
                key = serialization.load_pem_private_key(f.read(), None)
        else:
            key = ec.generate_private_key(ec.SECP256R1())
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
        return cls(key, issuer, audiences or (issuer,))  # type: ignore[arg-type]

    @property
    def key_id(self) -> str:
        der = self.key.public_key().public_bytes(serialization.Encoding.DER,
                                                 serialization.PublicFormat.SubjectPublicKeyInfo)
        return jwt.utils.base64url_encode(hashlib.sha256(der).digest()).decode()

    def issue(self, namespace: str, sa: dict, audiences: list[str], seconds: int,
              pod: dict | None = None, node: dict | None = None) -> tuple[str, datetime.datetime]:
        """A token for ServiceAccount `sa`, optionally bound to `pod` (and the pod's node): (token, expiry)."""
        now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        expiry = now + datetime.timedelta(seconds=seconds)
        k8s: dict = {"namespace": namespace,
                     "serviceaccount": {"name": sa["metadata"]["name"], "uid": sa["metadata"].get("uid", "")}}
        if pod is not None:
            k8s["pod"] = {"name": pod["metadata"]["name"], "uid": pod["metadata"].get("uid", "")}
        if node is not None:
            k8s["node"] = {"name": node["metadata"]["name"], "uid": node["metadata"].get("uid", "")}
        claims = {"aud": audiences or list(self.audiences), "exp": expiry, "iat": now, "nbf": now,
                  "iss": self.issuer, "jti": str(uuid.uuid4()), "kubernetes.io": k8s,
                  "sub": users.service_account_user(namespace, sa["metadata"]["name"])}
        return jwt.encode(claims, self.key, algorithm="ES256", headers={"kid": self.key_id}), expiry

    def validate(self, token: str, lookup) -> UserInfo | None:
        """The user of a valid token, else None. `lookup(bucket, key)` reads the store: the ServiceAccount (and a
        bound pod) must still exist with the uid the token names, as upstream's validator checks."""
        try:
            claims = jwt.decode(token, self.key.public_key(), algorithms=["ES256"], issuer=self.issuer,
                                audience=list(self.audiences), options={"require": ["exp", "iss", "sub"]})
        except jwt.PyJWTError:
            return None
        k8s = claims.get("kubernetes.io") or {}
        ns = k8s.get("namespace") or ""
        sa_ref = k8s.get("serviceaccount") or {}
        if claims.get("sub") != users.service_account_user(ns, sa_ref.get("name", "")):
            return None
        sa = lookup("serviceaccounts", f"{ns}/{sa_ref.get('name')}")
        if sa is None or (sa_ref.get("uid") and sa["metadata"].get("uid") != sa_ref["uid"]):
            return None
        extra: dict[str, list[str]] = {users.EXTRA_CREDENTIAL_ID: [f"JTI={claims.get('jti', '')}"]}
        if pod_ref := k8s.get("pod"):
            pod = lookup("pods", f"{ns}/{pod_ref.get('name')}")
            if pod is None or pod["metadata"].get("uid") != pod_ref.get("uid") or \
                    pod["metadata"].get("deletionTimestamp"):
                return None
            extra[users.EXTRA_POD_NAME] = [pod_ref["name"]]
            extra[users.EXTRA_POD_UID] = [pod_ref.get("uid", "")]
        if node_ref := k8s.get("node"):
            extra[users.EXTRA_NODE_NAME] = [node_ref.get("name", "")]
            extra[users.EXTRA_NODE_UID] = [node_ref.get("uid", "")]
        return UserInfo(claims["sub"], sa["metadata"].get("uid", ""), users.service_account_groups(ns), extra)
