"""The list that registers every served kind: each kind's module holds its entry, strategy, gated fields,
printer and quota evaluator; this module only names them, in the order discovery lists them, with the
optional versions `--runtime-config` may turn on."""

from __future__ import annotations

from dramock.registry import quota, rbac, reviews
from dramock.registry.apps import controllerrevision, daemonset, deployment, replicaset, statefulset
from dramock.registry.batch import job
from dramock.registry.coordination import lease
from dramock.registry.core import (
    configmap,
    event,
    namespace,
    node,
    pod,
    resourcequota,
    secret,
    service,
    serviceaccount,
)
from dramock.registry.gatedfields import GatedFields
from dramock.registry.kind import Kind
from dramock.registry.resource import (
    deviceclass,
    devicetaintrule,
    resourceclaim,
    resourceclaimtemplate,
    resourcepoolstatusrequest,
    resourceslice,
)
from dramock.registry.resource.common import GROUP as RESOURCE
from dramock.registry.scheduling import podgroup, workload
from dramock.registry.scheduling.common import GROUP as SCHEDULING

# Every kind in its stored version, served by default.
STORED_KINDS: tuple[Kind, ...] = (
    deviceclass.KIND,
    resourceslice.KIND,
    resourceclaim.KIND,
    resourceclaimtemplate.KIND,
    devicetaintrule.KIND,
    namespace.KIND,
    node.KIND,
    pod.KIND,
    resourcequota.KIND,
    event.CORE_KIND,
    configmap.KIND,
    secret.KIND,
    serviceaccount.KIND,
    service.KIND,
    event.EVENTS_KIND,
    lease.KIND,
    *reviews.KINDS,
    *rbac.KINDS,
    deployment.KIND,
    replicaset.KIND,
    daemonset.KIND,
    statefulset.KIND,
    controllerrevision.KIND,
    job.KIND,
)

# Versions served only when --runtime-config enables them (upstream 1.37 serves resource.k8s.io/v1 alone by
# default), in the order discovery lists them after the preferred v1, and the kinds each one has.
OPTIONAL_VERSIONS: dict[tuple[str, str], tuple[str, ...]] = {
    (RESOURCE, "v1beta2"): ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate",
                            "DeviceTaintRule"),
    (RESOURCE, "v1beta1"): ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"),
    (RESOURCE, "v1alpha3"): ("DeviceTaintRule",),
    (SCHEDULING, "v1beta1"): (),
}

# Kinds of a single optional version, served when --runtime-config turns their version on and their gate is on.
ALPHA_KINDS: tuple[Kind, ...] = (resourcepoolstatusrequest.KIND, workload.KIND, podgroup.KIND)

# The kinds with their own quota usage rules, by group-resource; every other kind counts objects.
QUOTA_EVALUATORS: dict[str, quota.Evaluator] = {ev.group_resource: ev for ev in (pod.QUOTA, resourceclaim.QUOTA)}

# Every kind's dropDisabledFields rules.
GATED_FIELDS: tuple[GatedFields, ...] = tuple(
    row for k in (*STORED_KINDS, *ALPHA_KINDS) for row in k.strategy.gated_fields)


def known_group_versions() -> set[tuple[str, str]]:
    """Every group/version the server knows (served or not): the scheme's registered versions."""
    return {(k.group, k.version) for k in STORED_KINDS} | set(OPTIONAL_VERSIONS)
