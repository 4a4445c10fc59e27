"""core/v1 Node (upstream's pkg/registry/core/node)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dramock.registry.kind import Kind, selectable
from dramock.registry.printing import CORE, Printer, Row, age, age_col, col, doc, md, name, name_col
from dramock.registry.strategy import Strategy

Obj = dict[str, Any]


def default(obj: Obj) -> None:
    status = obj.get("status")
    if isinstance(status, dict):
        cap = status.get("capacity")
        if isinstance(cap, dict) and "allocatable" not in status:
            status["allocatable"] = dict(cap)


class NodeStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        default(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        # Nodes may set status on create (kubelets register with their capacity).
        status = obj.pop("status", None)
        super().prepare_for_create(obj)
        if status is not None:
            obj["status"] = status


def _columns() -> list[Obj]:
    return [
        name_col(),
        col("Status", "string", "The status of the node"),
        col("Roles", "string", "The roles of the node"),
        age_col(),
        col("Version", "string", doc(CORE + "NodeSystemInfo", "kubeletVersion")),
        col("Internal-IP", "string", doc(CORE + "NodeStatus", "addresses"), priority=1),
        col("External-IP", "string", doc(CORE + "NodeStatus", "addresses"), priority=1),
        col("OS-Image", "string", doc(CORE + "NodeSystemInfo", "osImage"), priority=1),
        col("Kernel-Version", "string", doc(CORE + "NodeSystemInfo", "kernelVersion"), priority=1),
        col("Container-Runtime", "string", doc(CORE + "NodeSystemInfo", "containerRuntimeVersion"), priority=1),
    ]


def _row(obj: Obj, now: datetime) -> Row:
    status, spec = obj.get("status") or {}, obj.get("spec") or {}
    conds = {c.get("type"): c for c in status.get("conditions") or []}
    states = []
    if "Ready" in conds:
        states.append("Ready" if conds["Ready"].get("status") == "True" else "NotReady")
    if not states:
        states.append("Unknown")
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = set()
    for k, v in (md(obj).get("labels") or {}).items():
        if k.startswith("node-role.kubernetes.io/"):
            role = k[len("node-role.kubernetes.io/"):]
            if role:
                roles.add(role)
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    info = status.get("nodeInfo") or {}

    def address(kind: str) -> str:
        for a in status.get("addresses") or []:
            if a.get("type") == kind:
                return a.get("address", "")
        return "<none>"

    return [name(obj), ",".join(states), ",".join(sorted(roles)) or "<none>", age(obj, now),
            info.get("kubeletVersion", ""), address("InternalIP"), address("ExternalIP"),
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"]


PRINTER = Printer(_columns, _row)

KIND = Kind("", "v1", "Node", "nodes", False, short_names=("no",), subresources=("status",),
            selectable_fields={"spec.unschedulable": selectable("spec", "unschedulable", default="false")},
            strategy=NodeStrategy, printer=PRINTER)
