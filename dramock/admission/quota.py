"""The ResourceQuota admission plugin, modelled on upstream's `plugin/pkg/admission/resourcequota`
(check, then charge `status.used`). Usage comes from the evaluators the registry lists (generic machinery in
`dramock/registry/quota.py`, a kind's own evaluator in its module), which the quota controller shares; the
plugin feeds their `Lookup` from the store.

Charging is atomic: the plugin runs inside the object's storage transaction (`store.atomic()`), checks
every matching quota's `status.used + usage <= status.hard` against the quotas as the database has them
(under a per-namespace lock when API server replicas share the database), and writes the new
`status.used` with the quota's revision as precondition before returning. Releases (deletes, pods
reaching a terminal phase) are the controller's job, as upstream's replenishment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dramock import errors
from dramock.jsonvalue import clone
from dramock.registry.quota import (
    ZERO,
    Evaluator,
    Lookup,
    Obj,
    ResourceList,
    add,
    evaluator_for,
    format_list,
    mask,
    parse_list,
    pretty,
)


class QuotaAdmission:
    """Checks and charges quotas in the object's namespace; `store` is the server's RevisionLog."""

    QUOTA_BUCKET = "resourcequotas"

    def __init__(self, store: Any, evaluators: Mapping[str, Evaluator]):
        self.store = store
        self.evaluators = evaluators  # the kinds with their own usage rules; every other kind counts objects

    def lookup(self) -> Lookup:
        return Lookup(
            device_class=lambda name: self.store.get("resource.k8s.io/deviceclasses", name),
            pod=lambda ns, name: self.store.get("pods", f"{ns}/{name}"),
        )

    def admit(self, call: Any, obj: Obj, old: Obj | None) -> None:
        kind = call.kind
        if not kind.namespaced or not call.namespace or not self.store.count(self.QUOTA_BUCKET):
            return  # (no quota in any namespace: the usual case, answered without a lookup)
        gr = kind.stored_group_resource
        ev = evaluator_for(gr, self.evaluators)
        if old is not None and not ev.handles_update(call.subresource):
            return
        if old is None and call.subresource not in ("",):
            return
        prefix = f"{call.namespace}/"
        if not any(True for _ in self.store.list(self.QUOTA_BUCKET, prefix)):
            return
        # Charging must see every charge already committed, by any API server replica: lock the namespace's
        # quotas for the write's transaction and read them from the database (store.atomic() is open).
        self.store.lock(f"{self.QUOTA_BUCKET}|{call.namespace}")
        latest = self.store.latest(self.QUOTA_BUCKET, prefix)
        quotas = [q for q, _ in latest]
        revisions = {q["metadata"]["name"]: rev for q, rev in latest}
        if not quotas:
            return
        name = (obj.get("metadata") or {}).get("name") or call.name or ""
        if old is None and self.store.get(kind.storage_bucket, f"{call.namespace}/{name}") is not None:
            return  # the create fails with AlreadyExists; charge nothing
        lookup = self.lookup()

        def forbid(why: str) -> errors.APIError:
            return errors.forbidden(kind.plural, kind.group, name, why)

        interesting: list[tuple[Obj, ResourceList]] = []
        for q in sorted(quotas, key=lambda q: q["metadata"]["name"]):
            status = q.get("status") or {}
            # As upstream, a quota concerns an object through status.hard (what the controller has computed):
            # a quota the controller has not seen yet limits nothing, and one whose status.hard names a
            # resource that status.used lacks refuses ("status unknown") until the usage is computed.
            hard = parse_list(status.get("hard"))
            if not ev.matches(q, obj, hard):
                continue
            restricted = ev.matching(hard)
            if ev.constraints is not None:
                why = ev.constraints(restricted, obj)
                if why:
                    raise forbid(f"failed quota: {q['metadata']['name']}: {why}")
            used_raw = status.get("used") or {}
            if any(r not in used_raw for r in restricted):
                raise forbid(f"status unknown for quota: {q['metadata']['name']}, resources: "
                             f"{','.join(sorted(restricted))}")
            interesting.append((q, hard))
        if not interesting:
            return
        delta = ev.usage(obj, lookup)
        negative = sorted(k for k, v in delta.items() if v.sign() < 0)
        if negative:
            raise forbid(f"quota usage is negative for resource(s): {','.join(negative)}")
        if old is not None and (old.get("metadata") or {}).get("resourceVersion"):
            prev = ev.usage(old, lookup)
            delta = {k: (v.sub(prev[k]) if k in prev else v) for k, v in delta.items()}
            delta = {k: (v if v.sign() > 0 else ZERO) for k, v in delta.items()}
        delta = {k: v for k, v in delta.items() if v.sign() != 0}
        if not delta:
            return
        updates: list[tuple[Obj, ResourceList]] = []
        for q, hard in interesting:
            used = parse_list((q.get("status") or {}).get("used"))
            requested = mask(delta, hard)
            new_used = add(used, requested)
            masked_new = mask(new_used, requested)
            exceeded = sorted(k for k, v in masked_new.items() if k in hard and v.cmp(hard[k]) > 0)
            if exceeded:
                raise forbid(f"exceeded quota: {q['metadata']['name']}, "
                             f"requested: {pretty(mask(requested, exceeded))}, "
                             f"used: {pretty(mask(used, exceeded))}, limited: {pretty(mask(hard, exceeded))}")
            if requested:
                updates.append((q, new_used))
        if getattr(call, "dry_run", False):
            return
        for q, new_used in updates:
            nq = clone(q)
            nq.setdefault("status", {})["used"] = {**(q.get("status") or {}).get("used", {}),
                                                   **format_list(mask(new_used, delta))}
            key = f"{call.namespace}/{q['metadata']['name']}"
            self.store.update(self.QUOTA_BUCKET, key, nq, revisions[q["metadata"]["name"]])
