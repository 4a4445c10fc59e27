"""ControllerRevisions of DaemonSets and StatefulSets (upstream's controller_history): one per distinct pod
template, named `<owner>-<hash>`, holding the template as a strategic-merge patch (what `kubectl rollout
history|undo` reads and applies), numbered from 1 up."""

from __future__ import annotations

import contextlib

from dramock.client.rest import APIStatusError, Client, resource_path
from dramock.controllers.workloads.common import Obj, controller_ref, owner_reference, template_hash
from dramock.jsonvalue import clone
from dramock.schemas.validation.field import semantic_equal

HASH_LABEL = "controller-revision-hash"


def revision_data(template: Obj) -> Obj:
    return {"spec": {"template": {**clone(template), "$patch": "replace"}}}


async def current_revision(client: Client, owner: Obj, kind: str, history_limit: int) -> tuple[Obj, list[Obj]]:
    """The ControllerRevision of the owner's template (created, or renumbered as the newest when an old one
    matches again) and every revision it owns, oldest first; revisions beyond the limit are pruned."""
    m = owner["metadata"]
    listed = await client.request("GET", resource_path("apps", "v1", "controllerrevisions", m["namespace"]))
    owned = sorted([r for r in listed.get("items") or [] if (controller_ref(r) or {}).get("uid") == m["uid"]],
                   key=lambda r: int(r.get("revision") or 0))
    template = (owner.get("spec") or {}).get("template") or {}
    data = revision_data(template)
    top = max((int(r.get("revision") or 0) for r in owned), default=0)
    match = next((r for r in owned if semantic_equal(r.get("data"), data)), None)
    if match is None:
        h = template_hash(template, int((owner.get("status") or {}).get("collisionCount") or 0))
        match = await client.request("POST", resource_path("apps", "v1", "controllerrevisions", m["namespace"]), {
            "apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": f"{m['name']}-{h}", "namespace": m["namespace"],
                         "labels": {**(((template.get("metadata") or {}).get("labels")) or {}), HASH_LABEL: h},
                         "ownerReferences": [owner_reference(owner, "apps/v1", kind)]},
            "data": data, "revision": top + 1})
        owned.append(match)
    elif int(match.get("revision") or 0) < top:
        match = await client.request("PATCH", resource_path("apps", "v1", "controllerrevisions", m["namespace"],
                                                             match["metadata"]["name"]),
                                     {"revision": top + 1}, content_type="application/merge-patch+json")
        owned = [r for r in owned if r["metadata"]["uid"] != match["metadata"]["uid"]] + [match]
    stale = [r for r in owned if r["metadata"]["uid"] != match["metadata"]["uid"]]
    for r in stale[:max(len(stale) - history_limit, 0)]:
        with contextlib.suppress(APIStatusError):
            await client.request("DELETE", resource_path("apps", "v1", "controllerrevisions", m["namespace"],
                                                         r["metadata"]["name"]))
    return match, owned


def hash_of(revision: Obj) -> str:
    return (revision["metadata"].get("labels") or {}).get(HASH_LABEL, "")
