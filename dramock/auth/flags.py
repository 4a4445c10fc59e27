"""kube-apiserver's secure-serving and auth flags (same names and defaults), turning them into the secure
port's TLS context and SecurityConfig; and `dramock kubeconfig --user/--service-account`."""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import urllib.error
import urllib.request

from dramock.auth.authorizer import ModeError, parse_modes
from dramock.auth.security import SecurityConfig
from dramock.client.rest import APIStatusError

DEFAULT_SECURE_PORT = 6443


def _bool(value: str) -> bool:
    if value.lower() in ("true", "1", "t"):
        return True
    if value.lower() in ("false", "0", "f"):
        return False
    raise argparse.ArgumentTypeError(f"strconv.ParseBool: parsing {value!r}: invalid syntax")


def add_secure_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--secure-port", type=int, default=DEFAULT_SECURE_PORT,
                   help="the TLS port with authentication and authorization (default 6443; 0 turns it off)")
    p.add_argument("--tls-cert-file", default="", help="serving certificate of the secure port (default: "
                   "generated into <data-dir>/pki with a CA)")
    p.add_argument("--tls-private-key-file", default="", help="key of --tls-cert-file")
    p.add_argument("--tls-san", action="append", default=[], metavar="NAME",
                   help="an extra DNS name or IP of the generated serving certificate (repeatable)")
    p.add_argument("--client-ca-file", default="", help="CA of client certificates (default: the generated CA)")
    p.add_argument("--token-auth-file", default="", help='static tokens, CSV lines token,user,uid,"group1,group2"')
    p.add_argument("--anonymous-auth", type=_bool, nargs="?", const=True, default=True,
                   help="serve unauthenticated requests of the secure port as system:anonymous (default true)")
    p.add_argument("--authorization-mode", default="Node,RBAC",
                   help="comma-separated authorizers of the secure port: Node, RBAC, AlwaysAllow, AlwaysDeny")
    p.add_argument("--service-account-issuer", default="",
                   help="the iss claim of ServiceAccount tokens (default https://kubernetes.default.svc.cluster.local)")


def secure_serving(args: argparse.Namespace):
    """(SecurityConfig, ssl.SSLContext or None, secure URL or "") from the flags; ValueError on bad flags."""
    from dramock.apiserver import serving
    from dramock.auth import certs

    try:
        modes = parse_modes(args.authorization_mode)
    except ModeError as e:
        raise ValueError(f"invalid argument for --authorization-mode: {e}") from e
    if args.token_auth_file and not os.path.exists(args.token_auth_file):
        raise ValueError(f"invalid argument for --token-auth-file: {args.token_auth_file}: no such file")
    config = SecurityConfig(modes, args.token_auth_file, args.anonymous_auth, args.service_account_issuer)
    if not args.secure_port:
        return config, None, ""
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        raise ValueError("--tls-cert-file and --tls-private-key-file must be given together")
    if args.tls_cert_file:
        cert, key = args.tls_cert_file, args.tls_private_key_file
        client_ca = args.client_ca_file
    else:
        files = certs.ensure_generated(args.data_dir, args.tls_san)
        cert, key = files.cert, files.key
        client_ca = args.client_ca_file or files.client_ca
    host = "127.0.0.1" if args.bind_address in ("0.0.0.0", "") else args.bind_address
    if ":" in host:
        host = f"[{host}]"
    return config, serving.tls_context(cert, key, client_ca), f"https://{host}:{args.secure_port}"


def add_kubeconfig_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--user", default="", help="print a kubeconfig for the secure port with a client certificate "
                   "for this user, signed by the cluster CA")
    p.add_argument("--group", action="append", default=[], help="a group of --user (repeatable)")
    p.add_argument("--service-account", default="", metavar="NS/NAME",
                   help="print a kubeconfig for the secure port with a TokenRequest token of this ServiceAccount")
    p.add_argument("--secure-port", type=int, default=DEFAULT_SECURE_PORT)
    p.add_argument("--data-dir", default=os.environ.get("DRAMOCK_DATA_DIR", "./dramock-data"),
                   help="the server's data dir (its pki/ holds the cluster CA)")
    p.add_argument("--expiration-seconds", type=int, default=86400, help="lifetime of a --service-account token")
    p.add_argument("--bound-node", default="", help="bind the --service-account token to this Node (the node a "
                   "node-local driver runs on: its associated-node permissions apply there)")
    p.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                   help="with --service-account or --example-driver: retry for up to this long while the server is "
                   "not reachable yet or the ServiceAccount or --bound-node Node is not there yet (404), e.g. until "
                   "a kubelet has registered its Node (default 0: fail at once)")
    p.add_argument("--example-driver", default="", metavar="DRIVER",
                   help="the credentials `serve` gives the example driver DRIVER (gpu.example.com): first create, "
                   "unless they exist, its DeviceClass, the ServiceAccount kube-system/dramock-example-driver, its "
                   "ClusterRole and ClusterRoleBinding (what a driver's chart installs), then print a kubeconfig "
                   "as --service-account kube-system/dramock-example-driver (use with --bound-node)")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig_for(server: str, ca_pem: bytes, name: str, user: dict) -> str:
    import yaml

    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "dramock", "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)}}],
        "contexts": [{"name": name, "context": {"cluster": "dramock", "user": name}}],
        "current-context": name,
        "users": [{"name": name, "user": user}]}, sort_keys=False)


def service_account_token(plain_url: str, namespace: str, name: str, seconds: int, node: str = "") -> str:
    """A TokenRequest through the plain port (where the caller is the superuser)."""
    spec: dict = {"expirationSeconds": seconds}
    if node:
        spec["boundObjectRef"] = {"kind": "Node", "apiVersion": "v1", "name": node}
    req = urllib.request.Request(f"{plain_url}/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                                 data=json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                                  "spec": spec}).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())["status"]["token"]


def _retrying(seconds: float, what: str, attempt):
    """attempt() until it succeeds; while `seconds` last, an unreachable server or a 404 is tried again.
    (result, "") or (None, the error)."""
    import time

    import aiohttp

    deadline = time.monotonic() + seconds
    while True:
        try:
            return attempt(), ""
        except (OSError, aiohttp.ClientError, APIStatusError) as e:
            code = e.code if isinstance(e, (urllib.error.HTTPError, APIStatusError)) else None
            if code in (None, 404) and time.monotonic() < deadline:
                time.sleep(0.5)
                continue
            message = str(e)
            if isinstance(e, urllib.error.HTTPError):
                try:
                    message = f"{e.code}: {json.loads(e.read()).get('message')}"
                except ValueError:
                    pass
            return None, f"{what} failed: {message}"


def _install_example_driver(plain_url: str, driver: str) -> None:
    import asyncio

    from dramock.auth.identities import install_example_driver_account
    from dramock.kubelet.exampledriver import install_device_class

    async def install() -> None:
        await install_device_class(plain_url, driver)
        await install_example_driver_account(plain_url, driver)
    asyncio.run(install())


def identity_kubeconfig(args: argparse.Namespace, plain_url: str) -> int:
    from dramock.auth import certs
    from dramock.auth.identities import EXAMPLE_DRIVER_ACCOUNT

    pki = os.path.join(os.path.abspath(args.data_dir), "pki")
    ca_cert, ca_key = os.path.join(pki, "ca.crt"), os.path.join(pki, "ca.key")
    if not os.path.exists(ca_key):
        print(f"dramock kubeconfig: no cluster CA in {pki} (start the server with this --data-dir first)",
              file=sys.stderr)
        return 1
    with open(ca_cert, "rb") as f:
        ca_pem = f.read()
    host = plain_url.split("//", 1)[1].rsplit(":", 1)[0]
    server = f"https://{host}:{args.secure_port}"
    if args.example_driver:
        account = "/".join(EXAMPLE_DRIVER_ACCOUNT)
        if args.user or args.service_account not in ("", account):
            print(f"dramock kubeconfig: --example-driver is the ServiceAccount {account}: no --user or other "
                  "--service-account", file=sys.stderr)
            return 2
        _, error = _retrying(args.wait, f"setting up the example driver {args.example_driver}",
                             lambda: _install_example_driver(plain_url, args.example_driver))
        if error:
            print(f"dramock kubeconfig: {error}", file=sys.stderr)
            return 1
        args.service_account = account
    if args.service_account:
        ns, _, name = args.service_account.partition("/")
        if not ns or not name:
            print("dramock kubeconfig: --service-account takes NAMESPACE/NAME", file=sys.stderr)
            return 2
        token, error = _retrying(args.wait, f"TokenRequest for {ns}/{name}", lambda: service_account_token(
            plain_url, ns, name, args.expiration_seconds, args.bound_node))
        if error:
            print(f"dramock kubeconfig: {error}", file=sys.stderr)
            return 1
        sys.stdout.write(kubeconfig_for(server, ca_pem, f"system:serviceaccount:{ns}:{name}", {"token": token}))
        return 0
    cert, key = certs.client_certificate(ca_cert, ca_key, args.user, args.group)
    sys.stdout.write(kubeconfig_for(server, ca_pem, args.user, {"client-certificate-data": _b64(cert),
                                                                "client-key-data": _b64(key)}))
    return 0
