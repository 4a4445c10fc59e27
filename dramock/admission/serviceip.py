"""ClusterIP and NodePort allocation for core/v1 Services, as kube-apiserver's service REST storage does it:
from `--service-cluster-ip-range` (default 10.96.0.0/12; the first address is the `kubernetes` Service's) and
`--service-node-port-range` 30000-32767. What is in use is read from the stored Services, so a deleted
Service's addresses are free again at once."""

from __future__ import annotations

import ipaddress
import itertools
from typing import Any

from dramock import errors
from dramock.schemas.validation.field import cause
from dramock.storage.revlog import RevisionLog

Obj = dict[str, Any]
DEFAULT_SERVICE_CIDR = "10.96.0.0/12"
NODE_PORTS = range(30000, 32768)


class ServiceIPAllocator:
    def __init__(self, store: RevisionLog, cidr: str = DEFAULT_SERVICE_CIDR):
        self.store = store
        self.network = ipaddress.ip_network(cidr, strict=False)
        size = self.network.num_addresses
        # Upstream prefers the upper band for dynamic addresses and leaves the lower one for static ones.
        self.lower_band = min(max(16, size // 16), 256)

    @property
    def kubernetes_ip(self) -> str:
        return str(self.network.network_address + 1)

    def _in_use(self) -> tuple[set[str], set[int]]:
        ips: set[str] = set()
        ports: set[int] = set()
        for _, svc in self.store.list("services"):
            spec = svc.get("spec") or {}
            ips.update(ip for ip in spec.get("clusterIPs") or [spec.get("clusterIP")] if ip and ip != "None")
            ports.update(p.get("nodePort") for p in spec.get("ports") or [] if p.get("nodePort"))
        return ips, ports

    def allocate(self, svc: Obj) -> None:
        """Fill in spec.clusterIP(s) and nodePorts of a new Service, or reject addresses already taken."""
        spec = svc.setdefault("spec", {})
        name = svc["metadata"].get("name", "")
        used_ips, used_ports = self._in_use()
        if spec.get("type") != "ExternalName":
            ip = spec.get("clusterIP")
            if ip and ip != "None":
                try:
                    addr = ipaddress.ip_address(ip)
                except ValueError:
                    raise errors.invalid("Service", "", name, [cause(
                        "FieldValueInvalid", "spec.clusterIPs[0]",
                        f'Invalid value: "{ip}": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)')])
                prefix = f'Invalid value: []string{{"{ip}"}}: failed to allocate IP {ip}: '
                if addr not in self.network or addr == self.network.network_address:
                    raise errors.invalid("Service", "", name, [cause(
                        "FieldValueInvalid", "spec.clusterIPs",
                        prefix + f"the provided IP ({ip}) is not in the valid range. The range of valid IPs is "
                        f"{self.network}")])
                if ip in used_ips:
                    raise errors.invalid("Service", "", name, [cause(
                        "FieldValueInvalid", "spec.clusterIPs", prefix + "provided IP is already allocated")])
            elif not ip:
                ip = self._free_ip(used_ips)
            spec["clusterIP"] = ip
            spec["clusterIPs"] = [ip]
        if spec.get("type") in ("NodePort", "LoadBalancer"):
            free = (p for p in NODE_PORTS if p not in used_ports)
            for port in spec.get("ports") or []:
                if not port.get("nodePort"):
                    port["nodePort"] = next(free)
                elif port["nodePort"] in used_ports:
                    raise errors.invalid("Service", "", name, [cause(
                        "FieldValueInvalid", "spec.ports[0].nodePort",
                        f"Invalid value: {port['nodePort']}: provided port is already allocated")])

    def _free_ip(self, used: set[str]) -> str:
        size = self.network.num_addresses
        for offset in itertools.chain(range(self.lower_band, size - 1), range(2, self.lower_band)):
            candidate = str(self.network.network_address + offset)
            if candidate not in used:
                return candidate
        raise errors.APIError(500, "InternalError", "Internal error occurred: failed to allocate a serviceIP: "
                              "range is full", {})
