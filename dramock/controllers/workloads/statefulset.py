"""StatefulSet controller (upstream's pkg/controller/statefulset): pods `<set>-<ordinal>` with stable
hostnames, created in order (OrderedReady: each waits for its predecessors to be Running and Ready; Parallel:
all at once), removed from the highest ordinal down, and replaced from the highest ordinal down when the
template changes (RollingUpdate above the partition). A template's resourceClaimTemplateName gives each
replica its own claim, made by the ResourceClaim controller as for any pod."""

from __future__ import annotations

import re

from dramock.controllers.workloads import revisions
from dramock.controllers.workloads.common import Obj, WorkloadController, is_active, is_available, is_ready

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def ordinal(set_name: str, pod: Obj) -> int | None:
    m = re.fullmatch(re.escape(set_name) + r"-(\d+)", pod["metadata"]["name"])
    return int(m.group(1)) if m else None


class StatefulSetController(WorkloadController):
    kind, plural = "StatefulSet", "statefulsets"

    async def sync(self, sts: Obj) -> None:
        if sts["metadata"].get("deletionTimestamp"):
            return
        spec = sts.get("spec") or {}
        name = sts["metadata"]["name"]
        replicas = int(spec.get("replicas", 1))
        start = int((spec.get("ordinals") or {}).get("start") or 0)
        rev, _ = await revisions.current_revision(self.client, sts, "StatefulSet",
                                                  int(spec.get("revisionHistoryLimit", 10)))
        update_rev = rev["metadata"]["name"]
        all_pods = await self.owned_pods(sts)
        by_ordinal = {o: p for p in all_pods if (o := ordinal(name, p)) is not None}
        ordered = spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
        template = spec.get("template") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        for i in range(start, start + replicas):
            pod = by_ordinal.get(i)
            if pod is not None and (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") \
                    and not pod["metadata"].get("deletionTimestamp"):
                await self.delete_pod(pod)  # a finished replica is recreated under the same name
                pod = None
                by_ordinal.pop(i)
            if pod is None and i not in by_ordinal:
                new = self.pod_from_template(sts, template, name=f"{name}-{i}",
                                             labels={POD_NAME_LABEL: f"{name}-{i}", POD_INDEX_LABEL: str(i),
                                                     revisions.HASH_LABEL: update_rev})
                new["spec"]["hostname"] = f"{name}-{i}"
                if spec.get("serviceName"):
                    new["spec"]["subdomain"] = spec["serviceName"]
                created = await self.create_pod(new)
                if created:
                    by_ordinal[i] = created
                    await self.event(sts, "SuccessfulCreate", f"create Pod {name}-{i} in StatefulSet {name} "
                                     "successful", component="statefulset-controller")
                if ordered:
                    break
            elif ordered and not (is_active(by_ordinal[i]) and is_ready(by_ordinal[i])):
                break  # OrderedReady: the next replica waits for this one
        # Scale down: the highest ordinal first, one at a time when ordered.
        for i in sorted((o for o in by_ordinal if not start <= o < start + replicas), reverse=True):
            pod = by_ordinal[i]
            if not pod["metadata"].get("deletionTimestamp"):
                await self.delete_pod(pod)
                await self.event(sts, "SuccessfulDelete", f"delete Pod {pod['metadata']['name']} in StatefulSet "
                                 f"{name} successful", component="statefulset-controller")
            if ordered:
                break
        members = [p for o, p in by_ordinal.items() if start <= o < start + replicas]
        strategy = spec.get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") == "RollingUpdate" and \
                all(is_active(p) and is_ready(p) for p in members) and len(members) == replicas:
            partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
            for i in sorted(by_ordinal, reverse=True):
                p = by_ordinal[i]
                if start <= i < start + replicas and i - start >= partition and \
                        (p["metadata"].get("labels") or {}).get(revisions.HASH_LABEL) != update_rev:
                    await self.delete_pod(p)
                    break
        live = [p for p in members if is_active(p)]
        updated = [p for p in live if (p["metadata"].get("labels") or {}).get(revisions.HASH_LABEL) == update_rev]
        status = dict(sts.get("status") or {})
        status.update({"observedGeneration": sts["metadata"].get("generation", 1), "replicas": len(live),
                       "readyReplicas": sum(1 for p in live if is_ready(p)),
                       "availableReplicas": sum(1 for p in live if is_available(p, min_ready)),
                       "currentReplicas": len(updated) if len(updated) == len(live) else len(live) - len(updated),
                       "updatedReplicas": len(updated), "updateRevision": update_rev,
                       "collisionCount": int(status.get("collisionCount") or 0)})
        if len(updated) == replicas or not status.get("currentRevision"):
            status["currentRevision"] = update_rev
            status["currentReplicas"] = len(updated)
        await self.write_status(sts, {k: v for k, v in status.items()
                                      if v or k in ("replicas", "availableReplicas", "collisionCount")})
