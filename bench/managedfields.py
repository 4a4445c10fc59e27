"""CPU per call of managedFields tracking (fieldmanager.track_update) on creates and updates.

    python bench/managedfields.py [--number 2000] [--repeat 7]

Objects are shaped as the API server hands them over (defaulted, with uid and creationTimestamp); figures are
the best of --repeat runs of --number calls, in microseconds per call.
"""

from __future__ import annotations

import argparse
import copy
import timeit

from dramock.apiserver import fieldmanager as fm

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"
RV1 = "resource.k8s.io/v1"


def claim() -> dict:
    return {"apiVersion": RV1, "kind": "ResourceClaim",
            "metadata": {"name": "bench-1", "namespace": "default", "labels": {"bench": "yes"},
                         "uid": "6a1f6f5e-0000-4000-8000-000000000001", "creationTimestamp": T0},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}}]}}}


def pod() -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "default", "labels": {"app": "web", "tier": "front"},
                         "uid": "6a1f6f5e-0000-4000-8000-000000000002", "creationTimestamp": T0},
            "spec": {"containers": [
                {"name": "app", "image": "app:1", "imagePullPolicy": "IfNotPresent", "resources": {},
                 "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 53, "protocol": "UDP"}],
                 "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                 "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"},
                {"name": "side", "image": "side:1", "imagePullPolicy": "IfNotPresent", "resources": {},
                 "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "bench-1"}],
                "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
                "terminationGracePeriodSeconds": 30, "securityContext": {}, "enableServiceLinks": True,
                "preemptionPolicy": "PreemptLowerPriority", "priority": 0},
            "status": {"phase": "Pending", "qosClass": "BestEffort"}}


CASES = {
    "ResourceClaim": (claim, "io.k8s.api.resource.v1.ResourceClaim", RV1),
    "Pod": (pod, "io.k8s.api.core.v1.Pod", "v1"),
}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--number", type=int, default=2000)
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    print(f"{'object':<16}{'create µs':>11}{'update µs':>11}")
    for name, (make, definition, api_version) in CASES.items():
        obj = make()
        kw = {"manager": "bench", "api_version": api_version, "definition": definition,
              "reset_fields": ["status"]}
        live = fm.track_update(None, obj, now=T0, **kw)
        new = copy.deepcopy(live)
        new["metadata"]["labels"]["changed"] = "yes"
        new["metadata"]["resourceVersion"] = "2"

        def create(obj=obj, kw=kw) -> None:
            fm.track_update(None, obj, now=T0, **kw)

        def update(live=live, new=new, kw=kw) -> None:
            fm.track_update(live, new, manager="other", now=T1, **{k: v for k, v in kw.items() if k != "manager"})

        figures = [min(timeit.repeat(f, number=args.number, repeat=args.repeat)) / args.number * 1e6
                   for f in (create, update)]
        print(f"{name:<16}{figures[0]:>11.1f}{figures[1]:>11.1f}")


if __name__ == "__main__":
    main()
