"""The NodeRestriction admission plugin (plugin/pkg/admission/noderestriction) for `system:node:<name>`
users: a node writes only its own Node and Lease, the status of pods bound to it, and ResourceSlices whose
spec.nodeName is itself."""

from __future__ import annotations

from typing import Any

from dramock import errors

Obj = dict[str, Any]


def _node_of(call) -> str | None:
    user = getattr(call, "user", None)
    return user.node_name if user is not None else None


class NodeRestriction:
    def admit(self, call, obj: Obj | None, old: Obj | None) -> None:
        node = _node_of(call)
        if node is None:
            return
        kind = call.kind
        name = call.name or ((obj or {}).get("metadata") or {}).get("name") or ""

        def refuse(why: str) -> None:
            raise errors.forbidden(kind.plural, kind.group, name, why)

        if kind.group == "" and kind.plural == "nodes":
            if name != node:
                refuse(f'node "{node}" is not allowed to modify node "{name}"')
        elif kind.group == "coordination.k8s.io" and kind.plural == "leases":
            if call.namespace == "kube-node-lease" and name != node:
                refuse("can only access node lease with the same name as the requesting node")
        elif kind.group == "" and kind.plural == "pods":
            pod = obj if obj is not None else old or {}
            bound = ((old or pod).get("spec") or {}).get("nodeName")
            if call.subresource == "status" or (obj is not None and old is not None):
                if bound != node:
                    refuse(f'node "{node}" can only update pod status for pods with spec.nodeName set to itself')
            elif obj is None:
                if bound != node:
                    refuse(f'node "{node}" can only delete pods with spec.nodeName set to itself')
            elif not ((pod.get("metadata") or {}).get("annotations") or {}).get("kubernetes.io/config.mirror"):
                refuse(f'pod does not have "kubernetes.io/config.mirror" annotation, node "{node}" can only '
                       f'create mirror pods')
        elif kind.group == "resource.k8s.io" and kind.plural == "resourceslices":
            for o, verb in ((obj, "create" if old is None else "update"), (old, "delete" if obj is None else "update")):
                if o is not None and (o.get("spec") or {}).get("nodeName") != node:
                    refuse(f"can only {verb} ResourceSlice with the same NodeName as the requesting node")
