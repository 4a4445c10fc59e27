"""`python -m dramock.kubelet --kubeconfig FILE --node-name NODE ...`: one kubelet shim (see cli.build_parser)."""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys

from dramock import configure_logging
from dramock.kubelet.kubelet import DEFAULT_ROOT_DIR, KubeletConfig, run_kubelet, server_url
from dramock.kubelet.node import NodeConfig


def _pairs(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise argparse.ArgumentTypeError(f"expected key=value, got {item!r}")
        out[k] = v
    return out


def add_kubelet_flags(p: argparse.ArgumentParser) -> None:
    """The kubelet flags (names as upstream's kubelet where one exists)."""
    p.add_argument("--kubeconfig", default="", help="kubeconfig naming the server to talk to")
    p.add_argument("--server", default="", help="server URL (instead of --kubeconfig)")
    p.add_argument("--hostname-override", "--node-name", dest="node_name", default=socket.gethostname(),
                   help="node name (default: the host name)")
    p.add_argument("--root-dir", default=DEFAULT_ROOT_DIR,
                   help="kubelet root; plugin registry <root>/plugins_registry, endpoints <root>/plugins")
    p.add_argument("--plugins-registry-dir", default="", help="directory watched for plugin registration sockets")
    p.add_argument("--plugins-dir", default="", help="directory of plugin endpoints (relative endpoints)")
    p.add_argument("--capacity", type=_pairs, default=None, metavar="cpu=8,memory=32Gi,pods=110",
                   help="node status.capacity")
    p.add_argument("--allocatable", type=_pairs, default=None, help="node status.allocatable (default: capacity)")
    p.add_argument("--node-labels", type=_pairs, default={}, help="extra node labels k=v,...")
    p.add_argument("--node-ip", default="127.0.0.1", help="InternalIP address reported in node status")
    p.add_argument("--node-lease-duration-seconds", type=int, default=40,
                   help="lease duration; the lease is renewed every quarter of it (default 40 → 10s)")
    p.add_argument("--manage-pods", default="true", choices=("true", "false"),
                   help="run pods bound to this node (prepare/unprepare DRA claims)")
    p.add_argument("-v", "--v", type=int, default=0, dest="verbosity", help="log verbosity; 4+ = debug")


def config_from_args(args: argparse.Namespace) -> KubeletConfig:
    node = NodeConfig(name=args.node_name, labels=args.node_labels, address=args.node_ip,
                      lease_duration_seconds=args.node_lease_duration_seconds, allocatable=args.allocatable)
    if args.capacity is not None:
        node.capacity = args.capacity
    return KubeletConfig(node=node, root_dir=args.root_dir, registry_dir=args.plugins_registry_dir,
                         plugins_dir=args.plugins_dir, manage_pods=args.manage_pods == "true")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dramock.kubelet", description="dramock kubelet shim")
    add_kubelet_flags(p)
    args = p.parse_args(argv)
    if not args.kubeconfig and not args.server:
        p.error("one of --kubeconfig or --server is required")
    configure_logging(args.verbosity)
    asyncio.run(run_kubelet(server_url(args.server, args.kubeconfig), config_from_args(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
