"""The `dramock` command: serve (all in one), apiserver, controller-manager, scheduler, kubelet, example-driver,
check-driver, kubeconfig, and the tools explain (why a pod is where it is) and simulate (placement over a
snapshot, offline)."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import shutil
import sys
import threading
import time

from dramock import KUBERNETES_VERSION, __version__, configure_logging

EXAMPLE_DRIVER = "gpu.example.com"
EXAMPLE_GPUS_PER_NODE = 8
DEFAULT_PORT = 8080
DEFAULT_BIND = "127.0.0.1"


def kubeconfig_text(server: str) -> str:
    """A kubeconfig for a dramock server: no credentials (dramock has no authentication). For a plain http://
    server, `insecure-skip-tls-verify: true` too: @kubernetes/client-node 1.x refuses http:// without it (there
    is no TLS to verify, so every other client reads it as a no-op)."""
    insecure = "\n    insecure-skip-tls-verify: true" if server.startswith("http://") else ""
    return f"""apiVersion: v1
kind: Config
clusters:
- name: dramock
  cluster:
    server: {server}{insecure}
contexts:
- name: dramock
  context:
    cluster: dramock
    user: dramock
current-context: dramock
users:
- name: dramock
  user: {{}}
"""


def _server_url(bind: str, port: int) -> str:
    host = "127.0.0.1" if bind in ("0.0.0.0", "") else bind
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def _add_server_flags(p: argparse.ArgumentParser) -> None:
    from dramock.storage.revlog import DEFAULT_HISTORY

    p.add_argument("--bind-address", default=DEFAULT_BIND,
                   help="address to listen on (default 127.0.0.1, where a bare kubectl looks)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="port to listen on (default 8080)")
    p.add_argument("--data-dir", default=os.environ.get("DRAMOCK_DATA_DIR", "./dramock-data"),
                   help="directory of the SQLite database (and, for serve, the written kubeconfig and node dirs)")
    p.add_argument("--database-url", default="",
                   help="SQLAlchemy URL of the database (default: SQLite file in --data-dir)")
    p.add_argument("--feature-gates", default="",
                   help="comma-separated Name=true|false pairs, as kube-apiserver takes them")
    p.add_argument("--runtime-config", default="",
                   help="group/version=true|false pairs enabling optional API versions, e.g. "
                        "resource.k8s.io/v1beta1=true (1.37 serves only resource.k8s.io/v1 by default)")
    p.add_argument("--etcd-compaction-interval", type=float, default=300.0, metavar="SECONDS",
                   help="how often old revisions are compacted (default 300s, as kube-apiserver)")
    p.add_argument("--watch-history-limit", type=int, default=DEFAULT_HISTORY, metavar="EVENTS",
                   help=f"events kept for watches and replayed at start-up; older resourceVersions are "
                        f"410 Gone (default {DEFAULT_HISTORY})")
    p.add_argument("--watch-bookmark-interval", type=float, default=10.0, metavar="SECONDS",
                   help="how often watches that allow bookmarks get one")
    p.add_argument("--max-requests-inflight", type=int, default=400,
                   help="non-mutating requests served at once before 429 (0: no limit), as kube-apiserver")
    p.add_argument("--max-mutating-requests-inflight", type=int, default=200,
                   help="mutating requests served at once before 429 (0: no limit), as kube-apiserver")
    p.add_argument("--request-header-timeout", type=float, default=32.0, metavar="SECONDS",
                   help="close a connection whose request headers are not complete by then (kube-apiserver: 32s)")
    p.add_argument("--inject", action="append", default=[], metavar="RULE",
                   help="a fault rule, e.g. api:verb=create,resource=resourceslices,code=500,rate=50%% "
                        "(repeatable; syntax in the README and dramock/faults.py)")
    p.add_argument("--inject-seed", type=int, default=None, metavar="N",
                   help="seed of the random choices of rate-limited fault rules (reproducible runs)")
    p.add_argument("--service-cluster-ip-range", default="10.96.0.0/12", metavar="CIDR",
                   help="the range Services' ClusterIPs are allocated from (default 10.96.0.0/12, as kube-apiserver)")
    p.add_argument("-v", "--v", type=int, default=0, dest="verbosity",
                   help="log verbosity; 4 or more logs every request")
    from dramock.auth.flags import add_secure_flags

    add_secure_flags(p)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dramock", description="A Kubernetes 1.37 API server for Dynamic "
                                     "Resource Allocation that kubectl and every client use unmodified.")
    parser.add_argument("--version", action="version",
                        version=f"dramock {__version__} (Kubernetes {KUBERNETES_VERSION})")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run everything in one process: the API server and the bundled "
                           "components")
    _add_server_flags(serve)
    serve.add_argument("--nodes", type=int, default=2,
                       help="number of simulated nodes (kubelet shims with the example driver; 0 = none)")
    serve.add_argument("--example-driver", action=argparse.BooleanOptionalAction, default=True,
                       help="run the example driver (gpu.example.com) on every simulated node (default); "
                            "--no-example-driver leaves the nodes to your own driver")
    from dramock.scheduler.__main__ import add_binding_timeout_flag

    add_binding_timeout_flag(serve)
    api = sub.add_parser("apiserver", help="run the API server alone")
    _add_server_flags(api)
    cm = sub.add_parser("controller-manager", help="run the bundled controllers (resource claims, garbage "
                        "collector, namespaces, quota) against a running server")
    cm.add_argument("--kubeconfig", required=True, help="kubeconfig naming the server to talk to")
    cm.add_argument("-v", "--v", type=int, default=0, dest="verbosity",
                    help="log verbosity; 4 or more logs debug messages")
    cm.add_argument("--pod-gc-interval", type=float, default=20.0, metavar="SECONDS",
                    help="how often the pod garbage collector runs (upstream: every 20s)")
    cm.add_argument("--pod-gc-quarantine", type=float, default=40.0, metavar="SECONDS",
                    help="how long a pod's Node must be gone before the pod is collected (upstream: 40s)")
    cm.add_argument("--node-monitor-grace-period", type=float, default=50.0, metavar="SECONDS",
                    help="how long a node's kubelet may go without renewing its Lease before the node is "
                         "marked Unknown and tainted unreachable (as kube-controller-manager, default 50s)")
    cm.add_argument("--feature-gates", default="",
                    help="comma-separated Name=true|false pairs, as kube-controller-manager takes them")
    from dramock.controllers.resourceclaim import CONCURRENT_RESOURCECLAIM_SYNCS

    cm.add_argument("--concurrent-resourceclaim-syncs", type=int, default=CONCURRENT_RESOURCECLAIM_SYNCS,
                    metavar="N", help="claims and pods the ResourceClaim controller syncs at once "
                    "(as kube-controller-manager, default 50)")
    from dramock.client.leaderelection import add_leader_election_flags

    add_leader_election_flags(cm, "kube-controller-manager")
    sch = sub.add_parser("scheduler", help="run the scheduler (DRA structured parameters) against a running server")
    from dramock.scheduler.__main__ import add_scheduler_flags

    add_scheduler_flags(sch)
    kl = sub.add_parser("kubelet", help="run one kubelet shim (node, lease, DRA plugin registration, pods)")
    from dramock.kubelet.__main__ import add_kubelet_flags
    from dramock.kubelet.exampledriver import add_driver_flags

    add_kubelet_flags(kl)
    drv = sub.add_parser("example-driver", help="run the example DRA driver (gpu.example.com) for one node")
    add_driver_flags(drv)
    ex = sub.add_parser("explain", help="why a pod is pending (or why it got its devices): node by node, claim "
                        "by claim, device by device, as the server's /dramock/explain endpoint tells")
    ex.add_argument("--kubeconfig", default="", help="kubeconfig naming the server (default $KUBECONFIG)")
    ex.add_argument("--server", default="", help="server URL (default: from the kubeconfig, else "
                    "http://127.0.0.1:8080)")
    ex.add_argument("-n", "--namespace", default="default")
    ex.add_argument("pod", help="the pod's name")
    ex.add_argument("-v", "--verbose", action="store_true", help="list every device, not a few per reason")
    ex.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    sim = sub.add_parser("simulate", help="place the pending pods of a snapshot (kubectl get deviceclasses,"
                         "resourceslices,resourceclaims,nodes,pods -A -o yaml) offline, with dramock's allocator")
    sim.add_argument("-f", "--filename", action="append", default=[], required=True,
                     help="a snapshot or manifest file (YAML or JSON, '-' for stdin); repeatable")
    sim.add_argument("--add", action="append", default=[], metavar="FILE",
                     help="hypothetical objects (pods, claims, templates, nodes, slices) added after the snapshot")
    sim.add_argument("--remove", action="append", default=[], metavar="KIND/NS/NAME",
                     help="take an object away first (KIND/NAME for cluster-scoped kinds); repeatable")
    sim.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    sim.add_argument("-v", "--verbose", action="store_true", help="list every device in explanations")
    sim.add_argument("--feature-gates", default="", help="comma-separated Name=true|false pairs (1.37 defaults)")
    chk = sub.add_parser("check-driver", help="check a DRA driver registered on a running dramock against the "
                         "kubelet-plugin contract; prints a pass/fail table, exits non-zero on failure")
    from dramock.kubelet.checkdriver import add_check_flags

    add_check_flags(chk)
    kc = sub.add_parser("kubeconfig", help="print a kubeconfig for a running dramock server")
    kc.add_argument("--server", default="", help="server URL (default http://127.0.0.1:8080); with --user, "
                    "--service-account or --example-driver: the plain port, whose host the secure port shares")
    kc.add_argument("--bind-address", default=DEFAULT_BIND)
    kc.add_argument("--port", type=int, default=DEFAULT_PORT)
    from dramock.auth.flags import add_kubeconfig_flags

    add_kubeconfig_flags(kc)
    return parser


def _pace_garbage_collection() -> None:
    """A full garbage collection walks every live object and holds the interpreter (so the event loop) for
    100-400 ms once a process holds a few hundred thousand objects; at Python's default thresholds they came
    every few seconds under load and were the tail of the scheduling latency (bench/scheduler.py steady
    state p99 about 450 ms, about 50 ms with these). Nearly all garbage here is freed by reference counting.

    The thresholds count allocations minus deallocations, so under churn (pods created as older ones are
    deleted) the young generation grows unchecked: 450,000 objects, and a 400-470 ms collection that found
    nothing, in a minute of bench/scheduler.py steady state. Collecting it more often costs as much in all
    (~3 us per object walked). So what survived a second moves out of the collector's sight instead
    (gc.freeze, which takes no time): the request paths make no cyclic garbage (a server driven with kubectl
    get, create, apply, server-side apply, patch, delete, watch and failing requests left none; the
    fieldmanager tests check its walks), and what is frozen is still freed by reference counting."""
    gc.set_threshold(50_000, 50, 100)
    threading.Thread(target=_freeze_survivors, name="dramock-gc-freeze", daemon=True).start()


def _freeze_survivors() -> None:
    while True:
        time.sleep(1.0)
        gc.freeze()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _pace_garbage_collection()
    if args.command == "kubeconfig" and (args.user or args.service_account or args.example_driver):
        from dramock.auth.flags import identity_kubeconfig

        return identity_kubeconfig(args, (args.server or _server_url(args.bind_address, args.port)).rstrip("/"))
    if args.command == "kubeconfig":
        sys.stdout.write(kubeconfig_text(args.server or _server_url(args.bind_address, args.port)))
        return 0
    if args.command == "controller-manager":
        from dramock.client.leaderelection import config_from_args
        from dramock.controllers.manager import run_controller_manager

        try:
            election = config_from_args(args)
        except ValueError as e:
            print(f"dramock controller-manager: {e}", file=sys.stderr)
            return 2
        configure_logging(args.verbosity)
        if args.concurrent_resourceclaim_syncs < 1:
            print("dramock controller-manager: --concurrent-resourceclaim-syncs must be at least 1", file=sys.stderr)
            return 2
        from dramock.schemas import featuregates

        try:
            cm_gates = featuregates.FeatureGates(featuregates.parse(args.feature_gates))
        except featuregates.FeatureGateError as e:
            print(f"dramock controller-manager: invalid argument for --feature-gates: {e}", file=sys.stderr)
            return 2
        return run_controller_manager(args.kubeconfig, f"dramock-controller-manager/{__version__}", election,
                                      args.pod_gc_interval, args.pod_gc_quarantine,
                                      args.node_monitor_grace_period, args.concurrent_resourceclaim_syncs,
                                      cm_gates)
    if args.command == "scheduler":
        from dramock.scheduler.__main__ import run_from_args

        return run_from_args(args)
    if args.command in ("kubelet", "example-driver"):
        return _run_node_component(args)
    if args.command == "explain":
        return _run_explain(args)
    if args.command == "simulate":
        return _run_simulate(args)
    if args.command == "check-driver":
        from dramock.kubelet.checkdriver import run_from_args as check_driver

        return check_driver(args)
    return _run_server(args)


def _print(obj: dict, output: str) -> None:
    import json

    import yaml

    if output == "json":
        sys.stdout.write(json.dumps(obj, indent=2) + "\n")
    else:
        sys.stdout.write(yaml.safe_dump(obj, sort_keys=False))


def _run_explain(args: argparse.Namespace) -> int:
    import json
    import urllib.error
    import urllib.parse
    import urllib.request

    from dramock.client.rest import server_from_kubeconfig
    from dramock.scheduler import explain

    server = args.server
    kubeconfig = args.kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    if not server and kubeconfig:
        try:
            server = server_from_kubeconfig(kubeconfig)
        except (OSError, KeyError, StopIteration, TypeError) as e:
            print(f"dramock explain: cannot read the server from kubeconfig {kubeconfig}: {e}", file=sys.stderr)
            return 2
    server = (server or _server_url(DEFAULT_BIND, DEFAULT_PORT)).rstrip("/")
    path = (f"/dramock/explain/namespaces/{urllib.parse.quote(args.namespace, safe='')}/pods/"
            f"{urllib.parse.quote(args.pod, safe='')}")
    try:
        with urllib.request.urlopen(server + path, timeout=60) as resp:
            expl = json.loads(resp.read())
    except urllib.error.HTTPError as e:
        try:
            message = json.loads(e.read()).get("message") or e.reason
        except ValueError:
            message = e.reason
        print(f"Error from server: {message}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as e:
        print(f"dramock explain: cannot reach {server}: {e}", file=sys.stderr)
        return 1
    if args.output == "text":
        sys.stdout.write(explain.render(expl, args.verbose))
    else:
        _print(expl, args.output)
    return 0


def _run_simulate(args: argparse.Namespace) -> int:
    from dramock.scheduler import simulate
    from dramock.scheduler.snapshot import Snapshot, SnapshotError, load_documents
    from dramock.schemas import featuregates

    try:
        gates = featuregates.FeatureGates(featuregates.parse(args.feature_gates))
    except featuregates.FeatureGateError as e:
        print(f"dramock simulate: invalid argument for --feature-gates: {e}", file=sys.stderr)
        return 2

    def read(name: str) -> list[dict]:
        if name == "-":
            return load_documents(sys.stdin.read(), "<stdin>")
        with open(name, encoding="utf-8") as f:
            return load_documents(f.read(), name)

    try:
        snap = Snapshot()
        for name in args.filename:
            for obj in read(name):
                snap.add(obj)
        for spec in args.remove:
            snap.remove(spec)
        added = [obj for name in args.add for obj in read(name)]
        result = simulate.simulate(snap, gates, added)
    except (OSError, SnapshotError) as e:
        print(f"dramock simulate: {e}", file=sys.stderr)
        return 2
    except (KeyError, TypeError, AttributeError, ValueError) as e:  # an object of the wrong shape somewhere
        print(f"dramock simulate: malformed input ({type(e).__name__}: {e})", file=sys.stderr)
        return 2
    if args.output == "text":
        sys.stdout.write(simulate.render(result, args.verbose))
    else:
        _print(result, args.output)
    return 0


def _run_node_component(args: argparse.Namespace) -> int:
    import asyncio

    from dramock.kubelet.kubelet import server_url

    configure_logging(args.verbosity)
    if not args.kubeconfig and not args.server:
        print(f"dramock {args.command}: one of --kubeconfig or --server is required", file=sys.stderr)
        return 2
    server = server_url(args.server, args.kubeconfig)
    if args.command == "kubelet":
        from dramock.kubelet.__main__ import config_from_args
        from dramock.kubelet.kubelet import run_kubelet

        asyncio.run(run_kubelet(server, config_from_args(args)))
    else:
        from dramock.kubelet.exampledriver import run_from_args

        asyncio.run(run_from_args(server, args))
    return 0


def _run_server(args: argparse.Namespace) -> int:
    from dramock.apiserver import serving
    from dramock.apiserver.app import APIServer, ServerConfig
    from dramock.registry import RuntimeConfigError, parse_runtime_config
    from dramock.schemas import featuregates

    configure_logging(args.verbosity)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    try:
        gates = featuregates.parse(args.feature_gates)
    except featuregates.FeatureGateError as e:
        print(f"dramock: invalid argument for --feature-gates: {e}", file=sys.stderr)
        return 2
    try:
        runtime_config = parse_runtime_config(args.runtime_config)
    except RuntimeConfigError as e:
        print(f"dramock: invalid argument for --runtime-config: {e}", file=sys.stderr)
        return 2
    from dramock.faults import RuleError, parse_rule

    for rule in args.inject:
        try:
            parse_rule(rule)
        except RuleError as e:
            print(f"dramock: invalid argument for --inject: {e}", file=sys.stderr)
            return 2
    import ipaddress

    try:
        ipaddress.ip_network(args.service_cluster_ip_range, strict=False)
    except ValueError as e:
        print(f"dramock: invalid argument for --service-cluster-ip-range: {e}", file=sys.stderr)
        return 2
    binding_timeout = 0.0
    if args.command == "serve":
        from dramock.scheduler.__main__ import binding_timeout as parse_binding_timeout

        try:
            binding_timeout = parse_binding_timeout(args)
        except ValueError as e:
            print(f"dramock: invalid argument for --dra-binding-timeout: {e}", file=sys.stderr)
            return 2
    config = ServerConfig(data_dir=args.data_dir, database_url=args.database_url, feature_gates=gates,
                          runtime_config=runtime_config,
                          compaction_interval=args.etcd_compaction_interval,
                          bookmark_interval=args.watch_bookmark_interval,
                          max_requests_inflight=args.max_requests_inflight,
                          max_mutating_requests_inflight=args.max_mutating_requests_inflight,
                          fault_rules=args.inject, fault_seed=args.inject_seed,
                          service_cluster_ip_range=args.service_cluster_ip_range,
                          watch_history=args.watch_history_limit)
    from dramock.auth.flags import secure_serving

    try:
        config.security, ssl_context, secure_url = secure_serving(args)
    except ValueError as e:
        print(f"dramock: {e}", file=sys.stderr)
        return 2
    server = APIServer(config)
    url = _server_url(args.bind_address, args.port)
    if args.command == "serve":
        path = os.path.join(os.path.abspath(args.data_dir), "kubeconfig")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(kubeconfig_text(url))
        print(f"dramock {__version__} serving Kubernetes {KUBERNETES_VERSION} at {url}", flush=True)
        print(f"export KUBECONFIG={path}", flush=True)
    if secure_url:
        print(f"secure port (authentication, RBAC) at {secure_url}; `dramock kubeconfig --user NAME "
              f"--data-dir {args.data_dir}` prints credentials", flush=True)
    app = server.app()
    if args.command == "serve":
        import asyncio

        stop = asyncio.Event()
        app.cleanup_ctx.append(_components(url, args.nodes, args.data_dir, gates, stop, args.example_driver,
                                           binding_timeout, secure_url))

        async def stop_components(_app) -> None:  # before the server waits for open requests to finish
            stop.set()
        app.on_shutdown.append(stop_components)
    # handler_cancellation: a watch ends as soon as its client goes away, as upstream's do. auto_decompress off:
    # kube-apiserver reads request bodies as sent (a Content-Encoding does not make them decode).
    serving.run(app, serving.ServingOptions(host=args.bind_address, port=args.port,
                                            header_timeout=args.request_header_timeout,
                                            secure_port=args.secure_port, ssl_context=ssl_context),
                server.handle, access_log=None, handler_cancellation=True, auto_decompress=False)
    return 0


def _node_root(data_dir: str, node: str, create: bool = True) -> str | None:
    """Where a simulated node keeps its plugin sockets. Unix socket paths are limited to ~107 bytes, so a
    deep data dir falls back to a short temporary directory, named in `<data-dir>/nodes/<node>.root`.
    With `create=False`: that temporary directory if there is one, else None."""
    import tempfile

    from dramock.kubelet.sockets import root_fits

    root = os.path.join(os.path.abspath(data_dir), "nodes", node)
    if root_fits(root):
        return root if create else None
    pointer = root + ".root"
    if not create:
        try:
            with open(pointer, encoding="utf-8") as f:
                return f.read().strip() or None
        except OSError:
            return None
    root = tempfile.mkdtemp(prefix=f"dramock-{node}-")
    os.makedirs(os.path.dirname(pointer), exist_ok=True)
    with open(pointer, "w", encoding="utf-8") as f:
        f.write(root)
    logging.getLogger("dramock").info("%s: the data dir is too deep for plugin sockets; node root is %s", node, root)
    return root


def _components(url: str, nodes: int, data_dir: str, gates: dict[str, bool], stop, example_driver: bool = True,
                binding_timeout: float = 0.0, secure_url: str = ""):
    """The bundled components of `serve`: API clients of the server over HTTP, as the real ones are.
    The controller manager, the scheduler, and per simulated node a kubelet shim with the example driver."""
    import asyncio
    import contextlib

    from dramock.client.rest import Client
    from dramock.controllers.manager import ControllerManager

    async def ctx(_app):
        # With the secure port, each component is its own user there (dramock.auth.identities).
        ids = None
        if secure_url:
            from dramock.auth.identities import ComponentIdentities

            ids = ComponentIdentities(secure_url, data_dir)
        client = Client(ids.controller_manager() if ids else url, f"dramock-controller-manager/{__version__}")
        from dramock.scheduler.scheduler import run_scheduler
        from dramock.schemas.featuregates import FeatureGates

        tasks = [_component_task(ControllerManager(client, gates=FeatureGates(gates)).run(stop)),
                 _component_task(run_scheduler(ids.scheduler() if ids else url, stop, gates=gates,
                                               user_agent=f"dramock-scheduler/{__version__}",
                                               binding_timeout=binding_timeout))]
        if nodes > 0:
            tasks.append(_component_task(_start_nodes(url, nodes, data_dir, stop, tasks, example_driver, ids)))
        yield
        stop.set()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(t, 5)
        await client.close()
        for name in range(1, nodes + 1):  # the short temporary node roots of a deep data dir are this run's own
            root = _node_root(data_dir, f"node-{name}", create=False)
            if root is not None:
                shutil.rmtree(root, ignore_errors=True)

    return ctx


def _component_task(coro):
    """A bundled component as a task whose failure is logged: a component that dies must say why."""
    import asyncio

    def report(task: asyncio.Task) -> None:
        if not task.cancelled() and task.exception() is not None:
            logging.getLogger("dramock").error("component %s failed: %s", coro.__qualname__, task.exception(),
                                               exc_info=task.exception())

    task = asyncio.create_task(coro)
    task.add_done_callback(report)
    return task


async def _start_nodes(url: str, nodes: int, data_dir: str, stop, tasks: list, example_driver: bool,
                       ids=None) -> None:
    """Once the server answers: install the example DeviceClass and start a kubelet shim plus the example
    driver per node (they register and publish over HTTP like real ones)."""
    import asyncio

    import aiohttp

    from dramock.client.rest import Client
    from dramock.kubelet.exampledriver import install_device_class
    from dramock.kubelet.kubelet import KubeletConfig, run_kubelet
    from dramock.kubelet.node import NodeConfig

    admin = ids.admin() if ids else url
    while not stop.is_set():  # components start before the server listens
        try:
            if example_driver:
                await install_device_class(admin, EXAMPLE_DRIVER)
            else:
                probe = Client(admin, "dramock-serve/probe")
                try:
                    await probe.request("GET", "/version")
                finally:
                    await probe.close()
            break
        except (aiohttp.ClientError, OSError):
            await asyncio.sleep(0.1)
    for i in range(1, nodes + 1):
        name = f"node-{i}"
        root = _node_root(data_dir, name)
        assert root is not None
        tasks.append(_component_task(run_kubelet(ids.kubelet(name) if ids else url,
                                                 KubeletConfig(node=NodeConfig(name=name), root_dir=root), stop)))
        if not example_driver:
            continue
        tasks.append(_component_task(_run_example_driver(url, admin, ids, name, root, stop)))


async def _run_example_driver(url: str, admin, ids, node: str, root: str, stop) -> None:
    """The example driver of one node: under `serve`'s secure port with a ServiceAccount token bound to its node
    (issued once the kubelet shim registered the Node), else over the plain port."""
    import asyncio

    from dramock.client.rest import APIStatusError
    from dramock.kubelet.exampledriver import run_driver

    server = url
    while ids is not None and not stop.is_set():
        try:
            server = await ids.example_driver(admin, EXAMPLE_DRIVER, node)
            break
        except APIStatusError as e:
            if e.code != 404:  # the Node is not there yet
                raise
            await asyncio.sleep(0.2)
    await run_driver(server, node, driver=EXAMPLE_DRIVER, devices=EXAMPLE_GPUS_PER_NODE, root_dir=root, stop=stop)
