"""The `dramock` command: serve (all in one), apiserver, controller-manager, kubeconfig."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from dramock import KUBERNETES_VERSION, __version__

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
    p.add_argument("--bind-address", default=DEFAULT_BIND,
                   help="address to listen on (default 127.0.0.1, where a bare kubectl looks)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="port to listen on (default 8080)")
    p.add_argument("--data-dir", default=os.environ.get("DRAMOCK_DATA_DIR", "./dramock-data"),
                   help="directory of the SQLite database and the written kubeconfig")
    p.add_argument("--database-url", default="",
                   help="SQLAlchemy URL of the database (default: SQLite file in --data-dir)")
    p.add_argument("--feature-gates", default="",
                   help="comma-separated Name=true|false pairs, as kube-apiserver takes them")
    p.add_argument("--runtime-config", default="",
                   help="group/version=true|false pairs enabling optional API versions, e.g. "
                        "resource.k8s.io/v1beta1=true (1.37 serves only resource.k8s.io/v1 by default)")
    p.add_argument("--etcd-compaction-interval", type=float, default=300.0, metavar="SECONDS",
                   help="how often old revisions are compacted (default 300s, as kube-apiserver)")
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
        from dramock.controllers.manager import run_controller_manager

        logging.basicConfig(level=logging.DEBUG if args.verbosity >= 4 else logging.INFO,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        return run_controller_manager(args.kubeconfig, f"dramock-controller-manager/{__version__}")
    return _run_server(args)


def _run_server(args: argparse.Namespace) -> int:
    from aiohttp import web

    from dramock.apiserver.app import APIServer, ServerConfig
    from dramock.schemas import featuregates, registry

    logging.basicConfig(level=logging.DEBUG if args.verbosity >= 4 else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
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
                          bookmark_interval=args.watch_bookmark_interval)
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
        app.cleanup_ctx.append(_components(url))
    # handler_cancellation: a watch ends as soon as its client goes away, as upstream's do.
    web.run_app(app, host=args.bind_address, port=args.port, print=None, access_log=None,
                handle_signals=True, handler_cancellation=True, shutdown_timeout=5)
    return 0


def _components(url: str):
    """The bundled components of `serve`: API clients of the server over HTTP, as the real ones are."""
    import asyncio
    import contextlib

    from dramock.client.rest import Client
    from dramock.controllers.manager import ControllerManager

    async def ctx(_app):
        stop = asyncio.Event()
        client = Client(url, f"dramock-controller-manager/{__version__}")
        # The controller manager runs every controller (namespace, quota, resource claims, garbage collector).
        tasks = [asyncio.create_task(ControllerManager(client).run(stop))]
        yield
        stop.set()
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t
        await client.close()

    return ctx
