"""The identities `serve` gives its bundled components when it runs the secure port: client certificates signed
by the cluster CA for the scheduler (system:kube-scheduler), each kubelet shim (system:node:<name> in
system:nodes) and the controller manager, and a ServiceAccount token bound to its node for the example driver,
which runs under its own ClusterRole (EXAMPLE_DRIVER_RULES). Each is an Endpoint (dramock.client.rest): a
server URL carrying its credentials."""

from __future__ import annotations

import os
import ssl

from dramock.auth import certs
from dramock.auth import user as users
from dramock.client.rest import Client, Endpoint

EXAMPLE_DRIVER_ACCOUNT = ("kube-system", "dramock-example-driver")
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def example_driver_rules(driver: str) -> list[dict]:
    """What a node-local DRA driver needs on 1.37: publish its slices, read claims, write its entries of
    claims' status.devices on its own node, read its Node."""
    return [
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
         "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"],
         "verbs": ["get", "update", "patch"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/driver"], "resourceNames": [driver],
         "verbs": ["associated-node:update", "associated-node:patch"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
    ]


class ComponentIdentities:
    def __init__(self, secure_url: str, data_dir: str) -> None:
        self.url = secure_url
        pki = os.path.join(os.path.abspath(data_dir), "pki")
        self.ca_cert, self.ca_key = os.path.join(pki, "ca.crt"), os.path.join(pki, "ca.key")
        self.dir = os.path.join(pki, "components")

    def certificate(self, name: str, user: str, groups: list[str]) -> Endpoint:
        os.makedirs(self.dir, exist_ok=True)
        cert, key = certs.client_certificate(self.ca_cert, self.ca_key, user, groups)
        paths = [os.path.join(self.dir, f"{name}.{ext}") for ext in ("crt", "key")]
        for path, data in zip(paths, (cert, key), strict=True):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        endpoint = Endpoint(self.url)
        endpoint.ssl = ssl.create_default_context(cafile=self.ca_cert)
        endpoint.ssl.load_cert_chain(*paths)
        return endpoint

    def admin(self) -> Endpoint:
        """`serve` itself, setting up what the components need (the device class, the driver's account)."""
        return self.certificate("serve", "dramock-serve", [users.MASTERS])

    def controller_manager(self) -> Endpoint:
        # Upstream's controllers each run under a ServiceAccount with a system:controller:* role; dramock does
        # not model those roles, so its controller manager keeps the privileged group.
        return self.certificate("controller-manager", users.KUBE_CONTROLLER_MANAGER, [users.MASTERS])

    def scheduler(self) -> Endpoint:
        return self.certificate("scheduler", users.KUBE_SCHEDULER, [])

    def kubelet(self, node: str) -> Endpoint:
        return self.certificate(f"kubelet-{node}", users.NODE_PREFIX + node, [users.NODES])

    async def example_driver(self, admin: Endpoint, driver: str, node: str) -> Endpoint:
        """The driver's ServiceAccount, ClusterRole and binding (created once), and a token bound to `node`."""
        await install_example_driver_account(admin, driver)
        ns, name = EXAMPLE_DRIVER_ACCOUNT
        client = Client(admin, "dramock-serve/identities")
        try:
            answer = await client.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token", {
                "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": 365 * 86400,
                         "boundObjectRef": {"apiVersion": "v1", "kind": "Node", "name": node}}})
        finally:
            await client.close()
        endpoint = Endpoint(self.url)
        endpoint.ssl = ssl.create_default_context(cafile=self.ca_cert)
        endpoint.token = answer["status"]["token"]
        return endpoint


async def install_example_driver_account(admin: str, driver: str) -> None:
    """The example driver's ServiceAccount (EXAMPLE_DRIVER_ACCOUNT), its ClusterRole (example_driver_rules) and
    the ClusterRoleBinding between them, each created unless it exists: what a driver's chart installs. `admin`
    is a server (URL or Endpoint) whose caller may create them: the plain port, or a system:masters identity."""
    ns, name = EXAMPLE_DRIVER_ACCOUNT
    client = Client(admin, "dramock/example-driver-rbac")
    try:
        for path, obj in (
                (f"/api/v1/namespaces/{ns}/serviceaccounts",
                 {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}}),
                (f"{RBAC}/clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                          "metadata": {"name": name}, "rules": example_driver_rules(driver)}),
                (f"{RBAC}/clusterrolebindings", {
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                    "metadata": {"name": name},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                    "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]})):
            await _create_if_missing(client, path, obj)
    finally:
        await client.close()


async def _create_if_missing(client: Client, path: str, obj: dict) -> None:
    from dramock.client.rest import APIStatusError

    try:
        await client.request("POST", path, obj)
    except APIStatusError as e:
        if e.code != 409:
            raise
