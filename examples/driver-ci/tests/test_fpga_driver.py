"""The fpga.example.com driver in a dramock cluster: pods get its devices, also while the control plane and the
kubelet misbehave on purpose (dramock fault rules)."""

from __future__ import annotations

import json

from conftest import slices, wait_for

POD = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: one-fpga}}
spec:
  spec:
    devices:
      requests: [{{name: fpga, exactly: {{deviceClassName: fpga.example.com}}}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  resourceClaims: [{{name: fpga, resourceClaimTemplateName: one-fpga}}]
  containers: [{{name: app, image: busybox, resources: {{claims: [{{name: fpga}}]}}}}]
"""


def run_pod(cluster, namespace: str, name: str = "app") -> dict:
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=POD.format(name=name))

    def running():
        pod = json.loads(cluster.kubectl("-n", namespace, "get", "pod", name, "-o", "json").stdout)
        return pod if pod.get("status", {}).get("phase") == "Running" else None
    return wait_for(running, 60, f"pod {name} Running")


def cdi_devices(cluster, namespace: str) -> str:
    out = cluster.kubectl("-n", namespace, "get", "events", "--field-selector", "reason=PreparedDynamicResources",
                          "-o", "jsonpath={.items[*].message}")
    return out.stdout


def test_pod_gets_an_fpga(dramock_cluster, dramock_namespace, fpga_driver):
    run_pod(dramock_cluster, dramock_namespace)
    assert "fpga.example.com/fpga=fpga-" in cdi_devices(dramock_cluster, dramock_namespace)


def test_pod_runs_through_api_errors(dramock_cluster, dramock_namespace, fpga_driver):
    rules = ["api:verb=get,resource=resourceclaims,user-agent=fpga-driver*,code=500,count=2",
             "api:verb=update|patch,resource=resourceclaims/status,code=429,rate=50%"]
    with dramock_cluster.injected(*rules):
        run_pod(dramock_cluster, dramock_namespace)
    assert dramock_cluster.injected_count(rules[0]) == 2


def test_prepare_retried_after_a_lost_answer(dramock_cluster, dramock_namespace, fpga_driver):
    rule = "prepare-timeout:driver=fpga.example.com,count=1"
    with dramock_cluster.injected(rule):
        run_pod(dramock_cluster, dramock_namespace)
    assert dramock_cluster.injected_count(rule) == 1


def test_slices_come_back_after_a_kubelet_restart(dramock_cluster, fpga_driver):
    before = slices(dramock_cluster)[0]["spec"]["pool"]["generation"]
    dramock_cluster.inject("kubelet-restart:node=node-1")
    wait_for(lambda: [s for s in slices(dramock_cluster) if s["spec"]["pool"]["generation"] > before], 30,
             "the slice republished after the kubelet restart")
