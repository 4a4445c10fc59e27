"""Defaulting shared by pods and the pod templates of workloads: upstream's SetDefaults_Container and
SetDefaults_PodSpec as they apply to the v1 types on decode."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def default_container(c: Obj, init: bool = False) -> None:
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    image = c.get("image") or ""
    tag = image.rsplit("/", 1)[-1]
    if "imagePullPolicy" not in c:
        c["imagePullPolicy"] = "Always" if (":" not in tag or tag.endswith(":latest")) and "@" not in tag \
            else "IfNotPresent"
    c.setdefault("resources", {})
    resources = c["resources"]
    # Limits without requests default the requests, as upstream does.
    if isinstance(resources, dict) and resources.get("limits"):
        req = resources.setdefault("requests", {})
        for k, v in resources["limits"].items():
            req.setdefault(k, v)
    for p in c.get("ports") or []:
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")


def default_pod_template(template: Any) -> None:
    """SetDefaults_PodSpec for a template's pod spec (admission-time pod defaults apply to the pods only)."""
    if not isinstance(template, dict):
        return
    spec = template.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                default_container(c, init=key == "initContainers")
