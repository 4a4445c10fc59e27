"""`python -m dramock.scheduler --kubeconfig FILE | --server URL`: the scheduler alone, against a running server."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from dramock import configure_logging
from dramock.client.leaderelection import add_leader_election_flags, config_from_args, run_leading
from dramock.client.rest import server_from_kubeconfig


def add_scheduler_flags(p: argparse.ArgumentParser) -> None:
    """The scheduler flags (names as kube-scheduler's where one exists)."""
    p.add_argument("--kubeconfig", default="", help="kubeconfig naming the server to talk to")
    p.add_argument("--server", default="", help="server URL (instead of --kubeconfig)")
    p.add_argument("--feature-gates", default="", help="comma-separated Name=true|false pairs")
    add_binding_timeout_flag(p)
    p.add_argument("-v", "--v", type=int, default=0, dest="verbosity", help="log verbosity; 4+ = debug")
    add_leader_election_flags(p, "kube-scheduler")


def add_binding_timeout_flag(p: argparse.ArgumentParser) -> None:
    """kube-scheduler takes it from its configuration (DynamicResourcesArgs.bindingTimeout); dramock from a flag."""
    p.add_argument("--dra-binding-timeout", default="600s", metavar="DURATION",
                   help="how long PreBind waits for the binding conditions of allocated devices (a Go duration, "
                   "at least 1s; default 600s as DynamicResourcesArgs.bindingTimeout)")


def binding_timeout(args: argparse.Namespace) -> float:
    """The flag in seconds; ValueError with upstream's wording when it is invalid."""
    from dramock.scheduler.bindingconditions import parse_duration

    value = parse_duration(args.dra_binding_timeout)
    if value < 1:
        raise ValueError(f"bindingTimeout: Invalid value: \"{args.dra_binding_timeout}\": must be at least 1s")
    return value


def run_from_args(args: argparse.Namespace) -> int:
    """Run until SIGINT/SIGTERM; 2 on bad arguments."""
    from dramock.scheduler.scheduler import run_scheduler
    from dramock.schemas import featuregates

    if not args.kubeconfig and not args.server:
        print("dramock scheduler: one of --kubeconfig or --server is required", file=sys.stderr)
        return 2
    try:
        gates = featuregates.FeatureGates(featuregates.parse(args.feature_gates))
    except featuregates.FeatureGateError as e:
        print(f"dramock scheduler: invalid argument for --feature-gates: {e}", file=sys.stderr)
        return 2
    try:
        timeout = binding_timeout(args)
    except ValueError as e:
        print(f"dramock scheduler: invalid argument for --dra-binding-timeout: {e}", file=sys.stderr)
        return 2
    try:
        election = config_from_args(args)
    except ValueError as e:
        print(f"dramock scheduler: {e}", file=sys.stderr)
        return 2
    configure_logging(args.verbosity)
    server = args.server.rstrip("/") if args.server else server_from_kubeconfig(args.kubeconfig)

    async def main() -> bool:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        return await run_leading(server, election, "dramock-scheduler",
                                 lambda working: run_scheduler(server, working, gates=gates, binding_timeout=timeout),
                                 stop)

    # Leadership lost: exit non-zero, as kube-scheduler does, and let the supervisor restart a candidate.
    return 0 if asyncio.run(main()) else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dramock.scheduler", description="dramock scheduler")
    add_scheduler_flags(p)
    return run_from_args(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
