"""Job controller (upstream's pkg/controller/job): runs pods until `completions` succeed (NonIndexed) or every
index 0..completions-1 has a succeeded pod (Indexed), at most `parallelism` at a time; fails the Job once more
than `backoffLimit` pods failed. Conditions follow 1.37: SuccessCriteriaMet then Complete, FailureTarget then
Failed (after the remaining pods are gone). Pods finish through the kubelet shim's completion annotation
`dramock.io/complete-after-seconds`, which a Job may carry for all its pods (copied unless the template sets
it), with `dramock.io/exit-code`."""

from __future__ import annotations

import contextlib
import time

from dramock import timefmt
from dramock.client.rest import APIStatusError
from dramock.controllers.workloads.common import (
    Obj,
    WorkloadController,
    is_active,
    is_ready,
    set_condition,
)

COMPLETE_AFTER = "dramock.io/complete-after-seconds"
EXIT_CODE = "dramock.io/exit-code"
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
INDEX_LABEL = "batch.kubernetes.io/job-completion-index"


def _ranges(indexes: set[int]) -> str:
    """Upstream's compressed interval format: "1,3-5,7"."""
    out: list[str] = []
    run: list[int] = []
    for i in sorted(indexes):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [i]
    if run:
        out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ",".join(out)


def _parse_ranges(text: str | None) -> set[int]:
    out: set[int] = set()
    for part in filter(None, (text or "").split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def _index(pod: Obj) -> int | None:
    raw = (pod["metadata"].get("annotations") or {}).get(INDEX_ANNOTATION)
    return int(raw) if raw is not None and raw.isdigit() else None


def _finished(job: Obj) -> bool:
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


class JobController(WorkloadController):
    group, version, kind, plural = "batch", "v1", "Job", "jobs"

    async def sync(self, job: Obj) -> None:
        if job["metadata"].get("deletionTimestamp"):
            return
        if _finished(job):
            await self._expire(job)
            return
        spec, status = job.get("spec") or {}, dict(job.get("status") or {})
        pods = await self.owned_pods(job)
        indexed = spec.get("completionMode") == "Indexed"
        completions = spec.get("completions")
        parallelism = int(spec.get("parallelism", 1))
        active = [p for p in pods if is_active(p)]
        terminating = [p for p in pods if p["metadata"].get("deletionTimestamp")
                       and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        succeeded_pods = [p for p in pods if (p.get("status") or {}).get("phase") == "Succeeded"]
        failed_pods = [p for p in pods if (p.get("status") or {}).get("phase") == "Failed"]
        # Counts only grow: pods removed later (GC, TTL) stay counted.
        succeeded = max(int(status.get("succeeded") or 0), len(succeeded_pods))
        failed = max(int(status.get("failed") or 0), len(failed_pods))
        done_indexes = _parse_ranges(status.get("completedIndexes")) | {
            i for p in succeeded_pods if (i := _index(p)) is not None and (completions is None or i < completions)}
        if indexed:
            succeeded = max(succeeded, len(done_indexes))
        conds = list(status.get("conditions") or [])
        if not status.get("startTime") and not spec.get("suspend"):
            status["startTime"] = timefmt.now()
        backoff = int(spec.get("backoffLimit", 6))
        if indexed:
            assert completions is not None  # validate_job: an Indexed Job has completions
            complete = len(done_indexes) >= completions
        else:
            complete = (completions is not None and succeeded >= completions) or \
                (completions is None and succeeded > 0 and not active)
        deadline = spec.get("activeDeadlineSeconds")
        started = timefmt.parse_seconds(status.get("startTime"))
        past_deadline = deadline is not None and started is not None and time.time() - started >= int(deadline)
        if complete:
            conds = set_condition(conds, "SuccessCriteriaMet", "True", "CompletionsReached",
                                  "Reached expected number of succeeded pods")
        elif failed > backoff or past_deadline:
            reason, message = ("DeadlineExceeded", "Job was active longer than specified deadline") \
                if past_deadline else ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
            if not any(c.get("type") == "FailureTarget" for c in conds):
                conds = set_condition(conds, "FailureTarget", "True", reason, message)
        target = next((c for c in conds if c.get("type") in ("SuccessCriteriaMet", "FailureTarget")), None)
        if target is not None:
            for p in active:
                await self.delete_pod(p)
            if not active and not terminating:
                final = "Complete" if target["type"] == "SuccessCriteriaMet" else "Failed"
                conds = set_condition(conds, final, "True", target["reason"], target["message"])
                if final == "Complete":
                    status["completionTime"] = timefmt.now()
                await self.event(job, "Completed" if final == "Complete" else target["reason"],
                                 "Job completed" if final == "Complete" else target["message"],
                                 type_="Normal" if final == "Complete" else "Warning", component="job-controller")
            active = []
        elif spec.get("suspend"):
            for p in active:  # a suspended Job's running pods are terminated
                await self.delete_pod(p)
            active = []
            conds = set_condition(conds, "Suspended", "True", "JobSuspended", "Job suspended")
        else:
            if any(c.get("type") == "Suspended" and c.get("status") == "True" for c in conds):
                conds = set_condition(conds, "Suspended", "False", "JobResumed", "Job resumed")
            active = await self._start_pods(job, active, done_indexes, succeeded, parallelism, completions, indexed)
        status.update({"active": len(active), "ready": sum(1 for p in active if is_ready(p)),
                       "succeeded": succeeded, "failed": failed, "terminating": len(terminating),
                       "uncountedTerminatedPods": {}, "conditions": conds})
        if indexed:
            status["completedIndexes"] = _ranges(done_indexes)
        await self.write_status(job, {k: v for k, v in status.items()
                                      if v or k in ("ready", "terminating", "uncountedTerminatedPods")})

    async def _expire(self, job: Obj) -> None:
        """The TTL-after-finished controller: a finished Job with ttlSecondsAfterFinished goes (with its pods,
        background propagation) that long after it finished."""
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        if ttl is None:
            return
        finished = max((timefmt.parse_seconds(c.get("lastTransitionTime")) or 0.0
                        for c in (job.get("status") or {}).get("conditions") or []
                        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True"), default=0.0)
        m = job["metadata"]
        if time.time() - finished < int(ttl):
            self.queue.add_after((m["namespace"], m["name"]), max(finished + int(ttl) - time.time(), 0.1))
            return
        with contextlib.suppress(APIStatusError):
            await self.client.request("DELETE", self.path(m["namespace"], m["name"]),
                                      {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background",
                                       "preconditions": {"uid": m["uid"]}})

    async def _start_pods(self, job: Obj, active: list[Obj], done_indexes: set[int], succeeded: int,
                          parallelism: int, completions: int | None, indexed: bool) -> list[Obj]:
        spec = job.get("spec") or {}
        template = spec.get("template") or {}
        job_ann = job["metadata"].get("annotations") or {}
        extra_ann = {k: job_ann[k] for k in (COMPLETE_AFTER, EXIT_CODE)
                     if k in job_ann and k not in ((template.get("metadata") or {}).get("annotations") or {})}
        remaining = parallelism if completions is None else min(parallelism, completions - succeeded)
        if indexed:
            running = {_index(p) for p in active}
            todo = [i for i in range(completions or 0) if i not in done_indexes and i not in running]
            for i in todo[:max(remaining - len(active), 0)]:
                pod = self.pod_from_template(job, template, generate_name=f"{job['metadata']['name']}-{i}-",
                                             labels={INDEX_LABEL: str(i)},
                                             annotations={**extra_ann, INDEX_ANNOTATION: str(i)})
                pod["spec"]["hostname"] = f"{job['metadata']['name']}-{i}"
                for c in pod["spec"].get("containers") or []:
                    c.setdefault("env", []).append({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                        "apiVersion": "v1",
                        "fieldPath": f"metadata.annotations['{INDEX_ANNOTATION}']"}}})
                if (created := await self.create_pod(pod)) is not None:
                    active.append(created)
            return active
        for _ in range(max(remaining - len(active), 0)):
            pod = self.pod_from_template(job, template, generate_name=f"{job['metadata']['name']}-",
                                         annotations=extra_ann or None)
            created = await self.create_pod(pod)
            if created is not None:
                active.append(created)
                await self.event(job, "SuccessfulCreate", f"Created pod: {created['metadata']['name']}",
                                 component="job-controller")
        return active
