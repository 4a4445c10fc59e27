"""Unit tier for the pure parts of the workload controllers, pod GC and label selectors (no processes)."""

from __future__ import annotations

from dramock.controllers.podgc import tolerated_seconds
from dramock.controllers.workloads.daemonset import should_run
from dramock.controllers.workloads.deployment import surge_and_unavailable
from dramock.controllers.workloads.job import _parse_ranges, _ranges
from dramock.controllers.workloads.replicaset import deletion_rank
from dramock.schemas import labelselector


def test_selector_string_and_matching():
    sel = {"matchLabels": {"b": "2", "a": "1"},
           "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                                {"key": "gone", "operator": "DoesNotExist"}]}
    assert labelselector.to_string(sel) == "!gone,a=1,b=2,env in (dev,prod)"
    assert labelselector.matches(sel, {"a": "1", "b": "2", "env": "dev"})
    assert not labelselector.matches(sel, {"a": "1", "b": "2", "env": "dev", "gone": "x"})
    assert not labelselector.matches(sel, {"a": "1", "b": "2", "env": "qa"})


def test_rolling_update_parameters_round_as_upstream():
    def d(replicas, surge, unavailable):
        return {"spec": {"replicas": replicas, "strategy": {"type": "RollingUpdate", "rollingUpdate": {
            "maxSurge": surge, "maxUnavailable": unavailable}}}}

    assert surge_and_unavailable(d(10, "25%", "25%")) == (3, 2)  # surge rounds up, unavailable down
    assert surge_and_unavailable(d(1, "25%", "25%")) == (1, 0)
    assert surge_and_unavailable(d(3, 0, 0)) == (0, 1)  # both zero: one may be unavailable
    assert surge_and_unavailable({"spec": {"replicas": 4, "strategy": {"type": "Recreate"}}}) == (0, 4)


def test_completed_indexes_intervals():
    assert _ranges({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"
    assert _parse_ranges("0-2,5,7-8") == {0, 1, 2, 5, 7, 8}
    assert _ranges(set()) == "" and _parse_ranges("") == set()


def test_replicaset_deletes_the_least_useful_pods_first():
    def pod(name, node, phase, ready, created):
        return {"metadata": {"name": name, "creationTimestamp": created},
                "spec": {"nodeName": node} if node else {},
                "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}

    pods = [pod("ready-old", "n", "Running", True, "2026-01-01T00:00:00Z"),
            pod("ready-new", "n", "Running", True, "2026-01-02T00:00:00Z"),
            pod("unbound", "", "Pending", False, "2026-01-01T00:00:00Z"),
            pod("pending", "n", "Pending", False, "2026-01-01T00:00:00Z")]
    assert [p["metadata"]["name"] for p in sorted(pods, key=deletion_rank)] == \
        ["unbound", "pending", "ready-new", "ready-old"]


def test_daemonset_placement():
    node = {"metadata": {"name": "n1", "labels": {"gpu": "yes"}},
            "spec": {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}}
    assert should_run({"nodeSelector": {"gpu": "yes"}}, node) == (False, True)  # NoSchedule: keep, don't add
    tolerant = {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}
    assert should_run(tolerant, node) == (True, True)
    assert should_run({"nodeSelector": {"gpu": "no"}}, node) == (False, False)
    node["spec"]["taints"][0]["effect"] = "NoExecute"
    assert should_run({}, node) == (False, False)
    node["spec"]["taints"] = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    assert should_run({}, node) == (True, True)  # the DaemonSet's default tolerations


def test_taint_toleration_seconds():
    taint = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}
    assert tolerated_seconds({"spec": {}}, taint) == 0
    forever = {"spec": {"tolerations": [{"operator": "Exists"}]}}
    assert tolerated_seconds(forever, taint) is None
    limited = {"spec": {"tolerations": [{"operator": "Exists"},
                                        {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                         "effect": "NoExecute", "tolerationSeconds": 300}]}}
    assert tolerated_seconds(limited, taint) == 300
