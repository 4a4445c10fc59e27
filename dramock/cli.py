"""The `dramock` command: serve (all in one), apiserver, controller-manager, scheduler, kubelet, example-driver,
kubeconfig."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from dramock import KUBERNETES_VERSION, __version__, configure_logging

EXAMPLE_DRIVER = "gpu.example.com"
EXAMPLE_GPUS_PER_NODE = 8
DEFAULT_PORT = 8080
DEFAULT_BIND = "127.0.0.1"


def kubeconfig_text(server: str) -> str:
    """A kubeconfig for a dramock server: no credentials (dramock has no authentication)."""
    return f"""apiVersion: v1
kind: Config
clusters:
- name: dramock
  cluster:
    server: {server}
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
    p.add_argument("-v", "--v", type=int, default=0, dest="verbosity",
                   help="log verbosity; 4 or more logs every request")


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
    api = sub.add_parser("apiserver", help="run the API server alone")
    _add_server_flags(api)
    cm = sub.add_parser("controller-manager", help="run the bundled controllers (resource claims, garbage "
                        "collector, namespaces, quota) against a running server")
    cm.add_argument("--kubeconfig", required=True, help="kubeconfig naming the server to talk to")
    cm.add_argument("-v", "--v", type=int, default=0, dest="verbosity",
                    help="log verbosity; 4 or more logs debug messages")
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
    kc = sub.add_parser("kubeconfig", help="print a kubeconfig for a running dramock server")
    kc.add_argument("--server", default="", help="server URL (default http://127.0.0.1:8080)")
    kc.add_argument("--bind-address", default=DEFAULT_BIND)
    kc.add_argument("--port", type=int, default=DEFAULT_PORT)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
        return run_controller_manager(args.kubeconfig, f"dramock-controller-manager/{__version__}", election)
    if args.command == "scheduler":
        from dramock.scheduler.__main__ import run_from_args

        return run_from_args(args)
    if args.command in ("kubelet", "example-driver"):
        return _run_node_component(args)
    return _run_server(args)


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
    from aiohttp import web

    from dramock.apiserver.app import APIServer, ServerConfig
    from dramock.schemas import featuregates, registry

    configure_logging(args.verbosity)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    try:
        gates = featuregates.parse(args.feature_gates)
    except featuregates.FeatureGateError as e:
        print(f"dramock: invalid argument for --feature-gates: {e}", file=sys.stderr)
        return 2
    try:
        registry.configure(registry.parse_runtime_config(args.runtime_config))
    except registry.RuntimeConfigError as e:
        print(f"dramock: invalid argument for --runtime-config: {e}", file=sys.stderr)
        return 2
    config = ServerConfig(data_dir=args.data_dir, database_url=args.database_url, feature_gates=gates,
                          compaction_interval=args.etcd_compaction_interval,
                          bookmark_interval=args.watch_bookmark_interval,
                          watch_history=args.watch_history_limit)
    server = APIServer(config)
    url = _server_url(args.bind_address, args.port)
    if args.command == "serve":
        path = os.path.join(os.path.abspath(args.data_dir), "kubeconfig")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(kubeconfig_text(url))
        print(f"dramock {__version__} serving Kubernetes {KUBERNETES_VERSION} at {url}", flush=True)
        print(f"export KUBECONFIG={path}", flush=True)
    app = server.app()
    if args.command == "serve":
        import asyncio

        stop = asyncio.Event()
        app.cleanup_ctx.append(_components(url, args.nodes, args.data_dir, gates, stop))

        async def stop_components(_app) -> None:  # before the server waits for open requests to finish
            stop.set()
        app.on_shutdown.append(stop_components)
    # handler_cancellation: a watch ends as soon as its client goes away, as upstream's do.
    web.run_app(app, host=args.bind_address, port=args.port, print=None, access_log=None,
                handle_signals=True, handler_cancellation=True, shutdown_timeout=5)
    return 0


def _node_root(data_dir: str, node: str) -> str:
    """Where a simulated node keeps its plugin sockets. A data dir too deep for the longest socket the node's
    driver binds (Unix socket paths hold at most 107 bytes) falls back to a short temporary directory."""
    import tempfile

    from dramock.kubelet.sockets import driver_sockets, fits

    root = os.path.join(os.path.abspath(data_dir), "nodes", node)
    if not all(fits(p) for p in driver_sockets(root, EXAMPLE_DRIVER)):
        root = tempfile.mkdtemp(prefix=f"dramock-{node}-")
        logging.getLogger("dramock").info("%s: the data dir is too deep for plugin sockets; node root is %s",
                                          node, root)
    return root


def _components(url: str, nodes: int, data_dir: str, gates: dict[str, bool], stop):
    """The bundled components of `serve`: API clients of the server over HTTP, as the real ones are.
    The controller manager, the scheduler, and per simulated node a kubelet shim with the example driver."""
    import asyncio
    import contextlib

    from dramock.client.rest import Client
    from dramock.controllers.manager import ControllerManager

    async def ctx(_app):
        client = Client(url, f"dramock-controller-manager/{__version__}")
        from dramock.scheduler.loop import run_scheduler

        tasks = [_component_task(ControllerManager(client).run(stop)),
                 _component_task(run_scheduler(url, stop, gates=gates, user_agent=f"dramock-scheduler/{__version__}"))]
        if nodes > 0:
            tasks.append(_component_task(_start_nodes(url, nodes, data_dir, stop, tasks)))
        yield
        stop.set()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(t, 5)
        await client.close()

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


async def _start_nodes(url: str, nodes: int, data_dir: str, stop, tasks: list) -> None:
    """Once the server answers: install the example DeviceClass and start a kubelet shim plus the example
    driver per node (they register and publish over HTTP like real ones)."""
    import asyncio

    import aiohttp

    from dramock.kubelet.exampledriver import install_device_class, run_driver
    from dramock.kubelet.kubelet import KubeletConfig, run_kubelet
    from dramock.kubelet.node import NodeConfig

    while not stop.is_set():  # components start before the server listens
        try:
            await install_device_class(url, EXAMPLE_DRIVER)
            break
        except (aiohttp.ClientError, OSError):
            await asyncio.sleep(0.1)
    for i in range(1, nodes + 1):
        name = f"node-{i}"
        root = _node_root(data_dir, name)
        tasks.append(_component_task(run_kubelet(url, KubeletConfig(node=NodeConfig(name=name), root_dir=root), stop)))
        tasks.append(_component_task(run_driver(url, name, driver=EXAMPLE_DRIVER, devices=EXAMPLE_GPUS_PER_NODE,
                                                root_dir=root, stop=stop)))
