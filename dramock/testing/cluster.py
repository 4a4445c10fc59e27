"""`DramockCluster`: what the `dramock_cluster` fixture hands a test. A `dramock serve` process with simulated
nodes, and the ways a driver's test talks to it: kubectl, raw requests, the official client, fault rules."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from dramock.testing.server import Server, wait_for

# Written by every kubelet shim on its Node (dramock.kubelet.kubelet): where it looks for plugin sockets.
REGISTRY_DIR_ANNOTATION = "dramock.io/plugins-registry-dir"
PLUGINS_DIR_ANNOTATION = "dramock.io/plugins-dir"
FAULTS_PATH = "/dramock/faults"


@dataclass(frozen=True)
class NodeDirs:
    """Where a driver for one simulated node puts its sockets (its `/var/lib/kubelet/...` on a real node)."""

    node: str
    registration_dir: str  # /var/lib/kubelet/plugins_registry: <driver>-reg.sock goes here
    plugins_dir: str  # /var/lib/kubelet/plugins: the driver's endpoint goes under <plugins_dir>/<driver>/

    def registration_socket(self, driver: str) -> str:
        return os.path.join(self.registration_dir, f"{driver}-reg.sock")

    def endpoint(self, driver: str) -> str:
        return os.path.join(self.plugins_dir, driver, "dra.sock")


class DramockCluster:
    def __init__(self, server: Server, nodes: int, example_driver: bool = True, secure_port: int = 0):
        self.server = server
        self.secure_port = secure_port  # the TLS port with authentication and RBAC (0: not running)
        self._secure_kubeconfig: str | None = None
        self.nodes = [f"node-{i}" for i in range(1, nodes + 1)]
        self.example_driver = example_driver
        self._api_client: Any = None

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until every simulated node is registered and Ready (and has the example driver's slices, if it runs)."""
        def ready_nodes() -> set[str]:
            _, _, listed = self.request("GET", "/api/v1/nodes")
            return {n["metadata"]["name"] for n in listed.get("items") or []
                    if any(c.get("type") == "Ready" and c.get("status") == "True"
                           for c in (n.get("status") or {}).get("conditions") or [])}
        wait_for(lambda: set(self.nodes) <= ready_nodes(), timeout, 0.1, f"nodes {self.nodes} to be Ready")
        if not self.example_driver:
            return

        def sliced_nodes() -> set[str | None]:
            _, _, listed = self.request("GET", "/apis/resource.k8s.io/v1/resourceslices")
            return {(s.get("spec") or {}).get("nodeName") for s in listed.get("items") or []}
        wait_for(lambda: set(self.nodes) <= sliced_nodes(), timeout, 0.1, "the example driver's ResourceSlices")

    # --- where it is ---

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def kubeconfig(self) -> str:
        return self.server.kubeconfig

    @property
    def secure_kubeconfig(self) -> str | None:
        """A kubeconfig for the secure port as a cluster admin (group system:masters); None without that port."""
        if self.secure_port and self._secure_kubeconfig is None:
            self._secure_kubeconfig = self.kubeconfig_for("dramock-admin", groups=("system:masters",))
        return self._secure_kubeconfig

    def kubeconfig_for(self, user: str = "", groups: tuple[str, ...] = (), service_account: str = "",
                       bound_node: str = "") -> str:
        """A kubeconfig file for the secure port: a client certificate for `user` in `groups`, or a TokenRequest
        token of `service_account` (NAMESPACE/NAME, optionally bound to `bound_node`), as `dramock kubeconfig`
        prints them."""
        import sys
        import tempfile

        if not self.secure_port:
            raise RuntimeError("this dramock runs without its secure port")
        args = ["--service-account", service_account] if service_account else ["--user", user]
        args += [a for g in groups for a in ("--group", g)] + (["--bound-node", bound_node] if bound_node else [])
        out = subprocess.run([sys.executable, "-m", "dramock", "kubeconfig", "--data-dir", self.data_dir,
                              "--port", str(self.server.port), "--secure-port", str(self.secure_port), *args],
                             capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"dramock kubeconfig failed: {out.stderr}")
        fd, path = tempfile.mkstemp(prefix="kubeconfig-", dir=os.path.dirname(self.data_dir))
        with os.fdopen(fd, "w") as f:
            f.write(out.stdout)
        return path

    @property
    def data_dir(self) -> str:
        return self.server.data_dir

    @property
    def log_path(self) -> str:
        return self.server.log_path

    def log_size(self) -> int:
        try:
            return os.path.getsize(self.log_path)
        except OSError:
            return 0

    def log_text(self, start: int = 0) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            f.seek(start)
            return f.read()

    def node_dirs(self, node: str = "node-1", timeout: float = 30.0) -> NodeDirs:
        """The registration and plugin directories of a simulated node, as its kubelet shim announced them."""
        def announced() -> dict | None:
            code, _, obj = self.request("GET", f"/api/v1/nodes/{node}")
            ann = (obj.get("metadata") or {}).get("annotations") or {} if code == 200 else {}
            return ann if REGISTRY_DIR_ANNOTATION in ann else None
        ann = wait_for(announced, timeout, 0.1, f"node {node} to be registered by its kubelet shim")
        return NodeDirs(node, ann[REGISTRY_DIR_ANNOTATION], ann[PLUGINS_DIR_ANNOTATION])

    # --- talking to it ---

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 60) -> subprocess.CompletedProcess:
        """Run kubectl against the cluster; raises AssertionError with its output when it fails and `check`."""
        return self.server.kubectl(*args, input=input, check=check, timeout=timeout)

    def request(self, method: str, path: str, body: Any = None,
                content_type: str = "application/json") -> tuple[int, dict, dict]:
        """(HTTP code, headers, JSON body) of a raw request, e.g. request("GET", "/api/v1/nodes")."""
        return self.server.request(method, path, body, content_type)

    @property
    def api_client(self) -> Any:
        """A `kubernetes.client.ApiClient` for the cluster (needs the official client: pip install kubernetes)."""
        if self._api_client is None:
            try:
                import kubernetes.client
            except ImportError as e:
                raise RuntimeError("dramock_cluster.api_client needs the official Kubernetes Python client, which "
                                   "dramock does not install: pip install kubernetes "
                                   "(or pip install 'dramock[client]')") from e
            cfg = kubernetes.client.Configuration()
            cfg.host = self.url
            self._api_client = kubernetes.client.ApiClient(cfg)
        return self._api_client

    def create_namespace(self, prefix: str = "test") -> str:
        name = re.sub(r"[^a-z0-9-]+", "-", prefix.lower()).strip("-")[:50].strip("-") or "test"
        name = f"{name}-{secrets.token_hex(3)}"
        code, _, body = self.request("POST", "/api/v1/namespaces",
                                     {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if code != 201:
            raise RuntimeError(f"creating namespace {name}: {code} {body.get('message', body)}")
        return name

    def delete_namespace(self, name: str) -> None:
        self.request("DELETE", f"/api/v1/namespaces/{name}")

    # --- fault injection (dramock.faults) ---

    def inject(self, *rules: str) -> list[dict]:
        """Add fault rules (e.g. "api:verb=create,resource=resourceslices,code=500,rate=50%"); returns them
        with their ids."""
        code, _, body = self.request("POST", FAULTS_PATH, {"rules": list(rules)})
        if code != 201:
            raise ValueError(body.get("message", body))
        return body["items"]

    @contextlib.contextmanager
    def injected(self, *rules: str) -> Iterator[list[dict]]:
        """Fault rules for the duration of a `with` block."""
        added = self.inject(*rules)
        try:
            yield added
        finally:
            for r in added:
                self.request("DELETE", f"{FAULTS_PATH}/{r['id']}")

    def faults(self) -> list[dict]:
        """The rules in force: id, rule, type, fired, remaining."""
        return self.request("GET", FAULTS_PATH)[2]["items"]

    def clear_faults(self) -> None:
        self.request("DELETE", FAULTS_PATH)

    def metrics(self) -> str:
        import urllib.request

        with urllib.request.urlopen(self.url + "/metrics", timeout=30) as r:
            return r.read().decode()

    def injected_count(self, rule: str | None = None) -> float:
        """How many faults were injected (by one rule, or by all) according to /metrics."""
        total = 0.0
        for line in self.metrics().splitlines():
            if not line.startswith("dramock_injected_faults_total{"):
                continue
            labels, _, value = line.rpartition(" ")
            if rule is None or f'rule="{_escape_label(rule)}"' in labels:
                total += float(value)
        return total

    def close(self) -> None:
        if self._api_client is not None:
            with contextlib.suppress(Exception):
                self._api_client.close()
        self.server.stop()


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
