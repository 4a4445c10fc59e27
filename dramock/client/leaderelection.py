"""Leader election through a coordination.k8s.io/v1 Lease, as client-go's leaderelection package does it.

Several copies of a component (scheduler, controller manager) run; one holds the Lease and works, the others
wait. The holder renews the Lease every retry period; a candidate takes it over once the record has not
changed for the Lease's duration, judged by the candidate's own clock (no clock sync between machines
needed). A holder that cannot renew within the renew deadline stops working at once (upstream exits), so
two holders never work together for longer than the clocks drift. Every Lease write carries the
resourceVersion read, so two candidates can never both take it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import re
import socket
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from dramock import timefmt
from dramock.client.rest import APIStatusError, Client, Obj, resource_path

log = logging.getLogger("dramock.leaderelection")


def _identity() -> str:
    # As upstream components: hostname plus a unique suffix, so a restarted copy is a new candidate.
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass
class LeaderElectionConfig:
    """The upstream flags' values (kube-scheduler and kube-controller-manager share them)."""

    enabled: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_name: str = ""
    resource_namespace: str = "kube-system"
    identity: str = field(default_factory=_identity)


def add_leader_election_flags(p: argparse.ArgumentParser, resource_name: str) -> None:
    p.add_argument("--leader-elect", type=_parse_bool, nargs="?", const=True, default=True, metavar="BOOL",
                   help="start a leader election client and gain leadership before working (default true)")
    p.add_argument("--leader-elect-lease-duration", type=parse_duration, default=15.0, metavar="DURATION",
                   help="how long a candidate waits after the last observed renewal before taking over (15s)")
    p.add_argument("--leader-elect-renew-deadline", type=parse_duration, default=10.0, metavar="DURATION",
                   help="how long the leader keeps trying to renew before it stops leading (10s)")
    p.add_argument("--leader-elect-retry-period", type=parse_duration, default=2.0, metavar="DURATION",
                   help="how long clients wait between attempts to acquire or renew leadership (2s)")
    p.add_argument("--leader-elect-resource-lock", default="leases", choices=["leases"],
                   help="the type of object used for locking (only leases, as upstream since 1.24)")
    p.add_argument("--leader-elect-resource-name", default=resource_name,
                   help=f"the name of the Lease object (default {resource_name})")
    p.add_argument("--leader-elect-resource-namespace", default="kube-system",
                   help="the namespace of the Lease object (default kube-system)")


def config_from_args(args: argparse.Namespace) -> LeaderElectionConfig:
    cfg = LeaderElectionConfig(enabled=args.leader_elect, lease_duration=args.leader_elect_lease_duration,
                               renew_deadline=args.leader_elect_renew_deadline,
                               retry_period=args.leader_elect_retry_period,
                               resource_name=args.leader_elect_resource_name,
                               resource_namespace=args.leader_elect_resource_namespace)
    if cfg.enabled and not cfg.lease_duration > cfg.renew_deadline > cfg.retry_period > 0:
        # The same rule as upstream's validation of the leader election configuration.
        raise ValueError("leaderElection: need leaseDuration > renewDeadline > retryPeriod > 0")
    return cfg


def _parse_bool(text: str) -> bool:
    if text.lower() in ("1", "t", "true"):
        return True
    if text.lower() in ("0", "f", "false"):
        return False
    raise argparse.ArgumentTypeError(f"strconv.ParseBool: parsing {text!r}: invalid syntax")


_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """A Go duration ("15s", "1m30s", "500ms") in seconds."""
    pos, total = 0, 0.0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not text or pos != len(text):
        raise argparse.ArgumentTypeError(f"time: invalid duration {text!r}")
    return total



class LeaderElector:
    def __init__(self, client: Client, config: LeaderElectionConfig):
        self.client = client
        self.config = config
        self.path = resource_path("coordination.k8s.io", "v1", "leases", config.resource_namespace)
        self._observed: tuple | None = None  # the last record seen, and when (our clock) it last changed
        self._observed_at = 0.0
        self.leading = False

    async def acquire(self, stop: asyncio.Event) -> bool:
        """Try every retry period until this candidate leads (True) or `stop` is set (False)."""
        log.info("attempting to acquire leader lease %s/%s...", self.config.resource_namespace,
                 self.config.resource_name)
        while not stop.is_set():
            if await self._try_acquire_or_renew():
                log.info("successfully acquired lease %s/%s", self.config.resource_namespace,
                         self.config.resource_name)
                return True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.config.retry_period)
        return False

    async def renew(self, stop: asyncio.Event) -> bool:
        """Renew every retry period until `stop` (True) or until no renewal succeeded within the renew deadline
        (False: leadership is lost)."""
        last = time.monotonic()
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.config.retry_period)
            if stop.is_set():
                break
            try:
                ok = await asyncio.wait_for(self._try_acquire_or_renew(), self.config.renew_deadline)
            except TimeoutError:
                ok = False
            if ok:
                last = time.monotonic()
            elif time.monotonic() - last >= self.config.renew_deadline:
                log.error("failed to renew lease %s/%s within %.1fs: leader election lost",
                          self.config.resource_namespace, self.config.resource_name, self.config.renew_deadline)
                self.leading = False
                return False
        return True

    async def release(self) -> None:
        """Give the Lease up on a clean stop, so that a standby takes over at once."""
        if not self.leading:
            return
        try:
            lease = await self.client.request("GET", f"{self.path}/{self.config.resource_name}")
            if lease.get("spec", {}).get("holderIdentity") != self.config.identity:
                return
            lease["spec"].update({"holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": timefmt.now_micro()})
            await self.client.request("PUT", f"{self.path}/{self.config.resource_name}", lease)
            log.info("released lease %s/%s", self.config.resource_namespace, self.config.resource_name)
        except (APIStatusError, OSError, asyncio.TimeoutError) as e:
            log.warning("could not release the lease: %s", e)
        self.leading = False

    async def _try_acquire_or_renew(self) -> bool:
        name, me = self.config.resource_name, self.config.identity
        now = timefmt.now_micro()
        mine = {"holderIdentity": me, "leaseDurationSeconds": max(1, round(self.config.lease_duration)),
                "acquireTime": now, "renewTime": now, "leaseTransitions": 0}
        try:
            try:
                lease = await self.client.request("GET", f"{self.path}/{name}")
            except APIStatusError as e:
                if e.code != 404:
                    raise
                await self.client.request("POST", self.path, {
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": name, "namespace": self.config.resource_namespace}, "spec": mine})
                self._observe(mine)
                self.leading = True
                return True
            spec = lease.get("spec") or {}
            self._observe(spec)
            holder = spec.get("holderIdentity") or ""
            if holder and holder != me and self._valid(spec):
                self.leading = False
                return False  # someone else leads and renews
            if holder == me:
                mine["acquireTime"] = spec.get("acquireTime") or now
                mine["leaseTransitions"] = spec.get("leaseTransitions") or 0
            else:
                mine["leaseTransitions"] = (spec.get("leaseTransitions") or 0) + 1
            lease["spec"] = {**spec, **mine}
            # The resourceVersion read goes back as the precondition: of two candidates, one wins.
            await self.client.request("PUT", f"{self.path}/{name}", lease)
            self._observe(mine)
            self.leading = True
            return True
        except APIStatusError as e:
            if e.code != 409:
                log.warning("error retrieving or updating lease %s/%s: %s", self.config.resource_namespace, name, e)
            return False
        except (OSError, asyncio.TimeoutError) as e:  # the API server is unreachable: try again later
            log.warning("error reaching the API server for lease %s/%s: %s", self.config.resource_namespace,
                        name, e)
            return False

    def _observe(self, spec: Obj) -> None:
        record = (spec.get("holderIdentity"), spec.get("renewTime"), spec.get("leaseDurationSeconds"),
                  spec.get("leaseTransitions"))
        if record != self._observed:
            self._observed, self._observed_at = record, time.monotonic()

    def _valid(self, spec: Obj) -> bool:
        duration = spec.get("leaseDurationSeconds") or self.config.lease_duration
        return time.monotonic() < self._observed_at + duration


async def run_leading(server: str, config: LeaderElectionConfig, component: str,
                      work: Callable[[asyncio.Event], Coroutine[Any, Any, None]], stop: asyncio.Event) -> bool:
    """Run `work(stop)` while this process leads (at once when election is off).

    Returns False when leadership was lost (the caller exits, as upstream's components do), True on `stop`.
    """
    if not config.enabled:
        await work(stop)
        return True
    client = Client(server, f"{component}/leader-election")
    elector = LeaderElector(client, config)
    try:
        if not await elector.acquire(stop):
            return True
        working = asyncio.Event()  # set when the work must end: stop, or leadership lost
        stopper = asyncio.create_task(_forward(stop, working))
        task = asyncio.create_task(work(working))
        task.add_done_callback(lambda _: working.set())  # work that ends by itself ends the leading too
        renewed = await elector.renew(working)
        working.set()
        stopper.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 10)
        if renewed:
            await elector.release()
        return renewed
    finally:
        await client.close()


async def _forward(source: asyncio.Event, target: asyncio.Event) -> None:
    await source.wait()
    target.set()
