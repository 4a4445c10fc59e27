"""Decode Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) into JSON-shape dicts.

kubectl's typed clients (`create namespace|configmap|secret|quota|serviceaccount`, `debug`) send protobuf and
never retry with JSON. A body is the magic `k8s\\x00` followed by a `runtime.Unknown` envelope whose `raw`
field holds the object's own message. We decode that with a small wire-format reader driven by `SCHEMA`,
a per-message table of upstream's generated.proto field numbers, and render the dict the JSON encoding
would have produced (zero values dropped the way `omitempty` drops them).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from ..errors import APIError, bad_request

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
_MAGIC = b"k8s\x00"

# Field table: message -> {field number: "jsonName type"}; numbers are upstream's generated.proto
# (apimachinery runtime + meta/v1 + api/resource, api/core/v1).
#   type: string | bytes (base64 in JSON) | bool | int32 | int64 | map<string,V> | a message below |
#         Time ({seconds,nanos} -> RFC3339) | Quantity ({string}) | IntOrString | FieldsV1 (raw JSON) |
#         raw (bytes kept as bytes; only the envelope's payload)
#   suffix "[]": repeated.  suffix "?": emit even when zero (a Go pointer, so presence on the wire means
#         the client set it, or a JSON tag without omitempty).  jsonName "-": embedded struct, inlined.
SCHEMA: dict[str, dict[int, str]] = {
    # k8s.io/apimachinery/pkg/runtime
    "Unknown": {1: "typeMeta TypeMeta", 2: "raw raw", 3: "contentEncoding string", 4: "contentType string"},
    "TypeMeta": {1: "apiVersion string", 2: "kind string"},
    # k8s.io/apimachinery/pkg/apis/meta/v1
    "ObjectMeta": {
        1: "name string", 2: "generateName string", 3: "namespace string", 4: "selfLink string",
        5: "uid string", 6: "resourceVersion string", 7: "generation int64", 8: "creationTimestamp Time",
        9: "deletionTimestamp Time", 10: "deletionGracePeriodSeconds int64?",
        11: "labels map<string,string>", 12: "annotations map<string,string>",
        13: "ownerReferences OwnerReference[]", 14: "finalizers string[]",
        17: "managedFields ManagedFieldsEntry[]",
    },
    "OwnerReference": {
        5: "apiVersion string", 1: "kind string", 3: "name string", 4: "uid string",
        6: "controller bool?", 7: "blockOwnerDeletion bool?",
    },
    "ManagedFieldsEntry": {
        1: "manager string", 2: "operation string", 3: "apiVersion string", 4: "time Time",
        6: "fieldsType string", 7: "fieldsV1 FieldsV1", 8: "subresource string",
    },
    "LabelSelector": {1: "matchLabels map<string,string>", 2: "matchExpressions LabelSelectorRequirement[]"},
    "LabelSelectorRequirement": {1: "key string", 2: "operator string", 3: "values string[]"},
    # k8s.io/api/core/v1: the kinds kubectl creates
    "Namespace": {1: "metadata ObjectMeta", 2: "spec NamespaceSpec", 3: "status NamespaceStatus"},
    "NamespaceSpec": {1: "finalizers string[]"},
    "NamespaceStatus": {1: "phase string", 2: "conditions NamespaceCondition[]"},
    "NamespaceCondition": {
        1: "type string", 2: "status string", 4: "lastTransitionTime Time", 5: "reason string",
        6: "message string",
    },
    "ConfigMap": {
        1: "metadata ObjectMeta", 4: "immutable bool?", 2: "data map<string,string>",
        3: "binaryData map<string,bytes>",
    },
    "Secret": {
        1: "metadata ObjectMeta", 5: "immutable bool?", 2: "data map<string,bytes>",
        4: "stringData map<string,string>", 3: "type string",
    },
    "ResourceQuota": {1: "metadata ObjectMeta", 2: "spec ResourceQuotaSpec", 3: "status ResourceQuotaStatus"},
    "ResourceQuotaSpec": {
        1: "hard map<string,Quantity>", 2: "scopes string[]", 3: "scopeSelector ScopeSelector?",
    },
    "ResourceQuotaStatus": {1: "hard map<string,Quantity>", 2: "used map<string,Quantity>"},
    "ScopeSelector": {1: "matchExpressions ScopedResourceSelectorRequirement[]"},
    "ScopedResourceSelectorRequirement": {1: "scopeName string", 2: "operator string", 3: "values string[]"},
    "ServiceAccount": {
        1: "metadata ObjectMeta", 2: "secrets ObjectReference[]",
        3: "imagePullSecrets LocalObjectReference[]", 4: "automountServiceAccountToken bool?",
    },
    "ObjectReference": {
        1: "kind string", 2: "namespace string", 3: "name string", 4: "uid string", 5: "apiVersion string",
        6: "resourceVersion string", 7: "fieldPath string",
    },
    "LocalObjectReference": {1: "name string"},
    # Pod
    "Pod": {1: "metadata ObjectMeta", 2: "spec PodSpec", 3: "status PodStatus"},
    "PodSpec": {
        1: "volumes Volume[]", 20: "initContainers Container[]", 2: "containers Container[]",
        3: "restartPolicy string", 4: "terminationGracePeriodSeconds int64?",
        5: "activeDeadlineSeconds int64?", 6: "dnsPolicy string", 7: "nodeSelector map<string,string>",
        8: "serviceAccountName string", 9: "serviceAccount string",
        21: "automountServiceAccountToken bool?", 10: "nodeName string", 11: "hostNetwork bool",
        12: "hostPID bool", 13: "hostIPC bool", 27: "shareProcessNamespace bool?",
        14: "securityContext PodSecurityContext?", 15: "imagePullSecrets LocalObjectReference[]",
        16: "hostname string", 17: "subdomain string", 18: "affinity Affinity?", 19: "schedulerName string",
        22: "tolerations Toleration[]", 23: "hostAliases HostAlias[]", 24: "priorityClassName string",
        25: "priority int32?", 26: "dnsConfig PodDNSConfig?", 28: "readinessGates PodReadinessGate[]",
        29: "runtimeClassName string?", 30: "enableServiceLinks bool?", 31: "preemptionPolicy string?",
        32: "overhead map<string,Quantity>", 33: "topologySpreadConstraints TopologySpreadConstraint[]",
        35: "setHostnameAsFQDN bool?", 36: "os PodOS?", 37: "hostUsers bool?",
        38: "schedulingGates PodSchedulingGate[]", 39: "resourceClaims PodResourceClaim[]",
        40: "resources ResourceRequirements?", 41: "hostnameOverride string?",
    },
    "Container": {
        1: "name string", 2: "image string", 3: "command string[]", 4: "args string[]",
        5: "workingDir string", 6: "ports ContainerPort[]", 19: "envFrom EnvFromSource[]", 7: "env EnvVar[]",
        8: "resources ResourceRequirements", 23: "resizePolicy ContainerResizePolicy[]",
        24: "restartPolicy string?", 25: "restartPolicyRules ContainerRestartRule[]",
        9: "volumeMounts VolumeMount[]", 21: "volumeDevices VolumeDevice[]", 10: "livenessProbe Probe?",
        11: "readinessProbe Probe?", 22: "startupProbe Probe?", 12: "lifecycle Lifecycle?",
        13: "terminationMessagePath string", 20: "terminationMessagePolicy string",
        14: "imagePullPolicy string", 15: "securityContext SecurityContext?", 16: "stdin bool",
        17: "stdinOnce bool", 18: "tty bool",
    },
    "ContainerPort": {
        1: "name string", 2: "hostPort int32", 3: "containerPort int32?", 4: "protocol string",
        5: "hostIP string",
    },
    "ContainerResizePolicy": {1: "resourceName string", 2: "restartPolicy string"},
    "ContainerRestartRule": {1: "action string", 2: "exitCodes ContainerRestartRuleOnExitCodes?"},
    "ContainerRestartRuleOnExitCodes": {1: "operator string", 2: "values int32[]"},
    "EnvFromSource": {
        1: "prefix string", 2: "configMapRef ConfigMapEnvSource?", 3: "secretRef SecretEnvSource?",
    },
    "ConfigMapEnvSource": {1: "- LocalObjectReference", 2: "optional bool?"},
    "SecretEnvSource": {1: "- LocalObjectReference", 2: "optional bool?"},
    "EnvVar": {1: "name string", 2: "value string", 3: "valueFrom EnvVarSource?"},
    "EnvVarSource": {
        1: "fieldRef ObjectFieldSelector?", 2: "resourceFieldRef ResourceFieldSelector?",
        3: "configMapKeyRef ConfigMapKeySelector?", 4: "secretKeyRef SecretKeySelector?",
        5: "fileKeyRef FileKeySelector?",
    },
    "ObjectFieldSelector": {1: "apiVersion string", 2: "fieldPath string"},
    "ResourceFieldSelector": {1: "containerName string", 2: "resource string", 3: "divisor Quantity"},
    "ConfigMapKeySelector": {1: "- LocalObjectReference", 2: "key string", 3: "optional bool?"},
    "SecretKeySelector": {1: "- LocalObjectReference", 2: "key string", 3: "optional bool?"},
    "FileKeySelector": {1: "volumeName string", 2: "path string", 3: "key string", 4: "optional bool?"},
    "ResourceRequirements": {
        1: "limits map<string,Quantity>", 2: "requests map<string,Quantity>", 3: "claims ResourceClaim[]",
    },
    "ResourceClaim": {1: "name string", 2: "request string"},
    "VolumeMount": {
        1: "name string", 2: "readOnly bool", 7: "recursiveReadOnly string?", 3: "mountPath string",
        4: "subPath string", 5: "mountPropagation string?", 6: "subPathExpr string",
    },
    "VolumeDevice": {1: "name string", 2: "devicePath string"},
    "Probe": {
        1: "- ProbeHandler", 2: "initialDelaySeconds int32", 3: "timeoutSeconds int32",
        4: "periodSeconds int32", 5: "successThreshold int32", 6: "failureThreshold int32",
        7: "terminationGracePeriodSeconds int64?",
    },
    "ProbeHandler": {
        1: "exec ExecAction?", 2: "httpGet HTTPGetAction?", 3: "tcpSocket TCPSocketAction?",
        4: "grpc GRPCAction?",
    },
    "Lifecycle": {1: "postStart LifecycleHandler?", 2: "preStop LifecycleHandler?", 3: "stopSignal string?"},
    "LifecycleHandler": {
        1: "exec ExecAction?", 2: "httpGet HTTPGetAction?", 3: "tcpSocket TCPSocketAction?",
        4: "sleep SleepAction?",
    },
    "ExecAction": {1: "command string[]"},
    "HTTPGetAction": {
        1: "path string", 2: "port IntOrString", 3: "host string", 4: "scheme string",
        5: "httpHeaders HTTPHeader[]",
    },
    "HTTPHeader": {1: "name string", 2: "value string"},
    "TCPSocketAction": {1: "port IntOrString", 2: "host string"},
    "GRPCAction": {1: "port int32?", 2: "service string?"},
    "SleepAction": {1: "seconds int64?"},
    "SecurityContext": {
        1: "capabilities Capabilities?", 2: "privileged bool?", 3: "seLinuxOptions SELinuxOptions?",
        4: "runAsUser int64?", 8: "runAsGroup int64?", 5: "runAsNonRoot bool?",
        6: "readOnlyRootFilesystem bool?", 7: "allowPrivilegeEscalation bool?", 9: "procMount string?",
        11: "seccompProfile SeccompProfile?", 12: "appArmorProfile AppArmorProfile?", 13: "ulimits Ulimit[]",
    },
    "PodSecurityContext": {
        1: "seLinuxOptions SELinuxOptions?", 2: "runAsUser int64?", 6: "runAsGroup int64?",
        3: "runAsNonRoot bool?", 4: "supplementalGroups int64[]", 12: "supplementalGroupsPolicy string?",
        5: "fsGroup int64?", 7: "sysctls Sysctl[]", 9: "fsGroupChangePolicy string?",
        10: "seccompProfile SeccompProfile?", 11: "appArmorProfile AppArmorProfile?",
        13: "seLinuxChangePolicy string?",
    },
    "Capabilities": {1: "add string[]", 2: "drop string[]"},
    "SELinuxOptions": {1: "user string", 2: "role string", 3: "type string", 4: "level string"},
    "SeccompProfile": {1: "type string", 2: "localhostProfile string?"},
    "AppArmorProfile": {1: "type string", 2: "localhostProfile string?"},
    "Ulimit": {1: "name string", 2: "hard int64?", 3: "soft int64?"},
    "Sysctl": {1: "name string", 2: "value string"},
    "Volume": {1: "name string", 2: "- VolumeSource"},
    "VolumeSource": {
        1: "hostPath HostPathVolumeSource?", 2: "emptyDir EmptyDirVolumeSource?",
        6: "secret SecretVolumeSource?", 7: "nfs NFSVolumeSource?",
        10: "persistentVolumeClaim PersistentVolumeClaimVolumeSource?",
        16: "downwardAPI DownwardAPIVolumeSource?", 19: "configMap ConfigMapVolumeSource?",
        26: "projected ProjectedVolumeSource?", 28: "csi CSIVolumeSource?", 30: "image ImageVolumeSource?",
    },
    "HostPathVolumeSource": {1: "path string", 2: "type string?"},
    "EmptyDirVolumeSource": {1: "medium string", 2: "sizeLimit Quantity?"},
    "NFSVolumeSource": {1: "server string", 2: "path string", 3: "readOnly bool"},
    "SecretVolumeSource": {
        1: "secretName string", 2: "items KeyToPath[]", 3: "defaultMode int32?", 4: "optional bool?",
    },
    "ConfigMapVolumeSource": {
        1: "- LocalObjectReference", 2: "items KeyToPath[]", 3: "defaultMode int32?", 4: "optional bool?",
    },
    "KeyToPath": {1: "key string", 2: "path string", 3: "mode int32?"},
    "PersistentVolumeClaimVolumeSource": {1: "claimName string", 2: "readOnly bool"},
    "DownwardAPIVolumeSource": {1: "items DownwardAPIVolumeFile[]", 2: "defaultMode int32?"},
    "DownwardAPIVolumeFile": {
        1: "path string", 2: "fieldRef ObjectFieldSelector?", 3: "resourceFieldRef ResourceFieldSelector?",
        4: "mode int32?",
    },
    "ProjectedVolumeSource": {1: "sources VolumeProjection[]", 2: "defaultMode int32?"},
    "VolumeProjection": {
        1: "secret SecretProjection?", 2: "downwardAPI DownwardAPIProjection?",
        3: "configMap ConfigMapProjection?", 4: "serviceAccountToken ServiceAccountTokenProjection?",
        5: "clusterTrustBundle ClusterTrustBundleProjection?",
    },
    "SecretProjection": {1: "- LocalObjectReference", 2: "items KeyToPath[]", 4: "optional bool?"},
    "ConfigMapProjection": {1: "- LocalObjectReference", 2: "items KeyToPath[]", 4: "optional bool?"},
    "DownwardAPIProjection": {1: "items DownwardAPIVolumeFile[]"},
    "ServiceAccountTokenProjection": {1: "audience string", 2: "expirationSeconds int64?", 3: "path string"},
    "ClusterTrustBundleProjection": {
        1: "name string?", 2: "signerName string?", 3: "labelSelector LabelSelector?", 5: "optional bool?",
        4: "path string",
    },
    "CSIVolumeSource": {
        1: "driver string", 2: "readOnly bool?", 3: "fsType string?",
        4: "volumeAttributes map<string,string>", 5: "nodePublishSecretRef LocalObjectReference?",
    },
    "ImageVolumeSource": {1: "reference string", 2: "pullPolicy string"},
    "Affinity": {
        1: "nodeAffinity NodeAffinity?", 2: "podAffinity PodAffinity?", 3: "podAntiAffinity PodAntiAffinity?",
    },
    "NodeAffinity": {
        1: "requiredDuringSchedulingIgnoredDuringExecution NodeSelector?",
        2: "preferredDuringSchedulingIgnoredDuringExecution PreferredSchedulingTerm[]",
    },
    "NodeSelector": {1: "nodeSelectorTerms NodeSelectorTerm[]"},
    "NodeSelectorTerm": {
        1: "matchExpressions NodeSelectorRequirement[]", 2: "matchFields NodeSelectorRequirement[]",
    },
    "NodeSelectorRequirement": {1: "key string", 2: "operator string", 3: "values string[]"},
    "PreferredSchedulingTerm": {1: "weight int32?", 2: "preference NodeSelectorTerm?"},
    "PodAffinity": {
        1: "requiredDuringSchedulingIgnoredDuringExecution PodAffinityTerm[]",
        2: "preferredDuringSchedulingIgnoredDuringExecution WeightedPodAffinityTerm[]",
    },
    "PodAntiAffinity": {
        1: "requiredDuringSchedulingIgnoredDuringExecution PodAffinityTerm[]",
        2: "preferredDuringSchedulingIgnoredDuringExecution WeightedPodAffinityTerm[]",
    },
    "PodAffinityTerm": {
        1: "labelSelector LabelSelector?", 2: "namespaces string[]", 3: "topologyKey string",
        4: "namespaceSelector LabelSelector?", 5: "matchLabelKeys string[]", 6: "mismatchLabelKeys string[]",
    },
    "WeightedPodAffinityTerm": {1: "weight int32?", 2: "podAffinityTerm PodAffinityTerm?"},
    "Toleration": {
        1: "key string", 2: "operator string", 3: "value string", 4: "effect string",
        5: "tolerationSeconds int64?",
    },
    "HostAlias": {1: "ip string", 2: "hostnames string[]"},
    "PodDNSConfig": {1: "nameservers string[]", 2: "searches string[]", 3: "options PodDNSConfigOption[]"},
    "PodDNSConfigOption": {1: "name string", 2: "value string?"},
    "PodReadinessGate": {1: "conditionType string"},
    "TopologySpreadConstraint": {
        1: "maxSkew int32?", 2: "topologyKey string", 3: "whenUnsatisfiable string",
        4: "labelSelector LabelSelector?", 5: "minDomains int32?", 6: "nodeAffinityPolicy string?",
        7: "nodeTaintsPolicy string?", 8: "matchLabelKeys string[]",
    },
    "PodOS": {1: "name string"},
    "PodSchedulingGate": {1: "name string"},
    "PodResourceClaim": {
        1: "name string", 3: "resourceClaimName string?", 4: "resourceClaimTemplateName string?",
    },
    "PodStatus": {
        17: "observedGeneration int64", 1: "phase string", 2: "conditions PodCondition[]",
        3: "message string", 4: "reason string", 11: "nominatedNodeName string", 5: "hostIP string",
        16: "hostIPs HostIP[]", 6: "podIP string", 12: "podIPs PodIP[]", 7: "startTime Time",
        10: "initContainerStatuses ContainerStatus[]", 8: "containerStatuses ContainerStatus[]",
        9: "qosClass string", 13: "ephemeralContainerStatuses ContainerStatus[]", 14: "resize string",
        15: "resourceClaimStatuses PodResourceClaimStatus[]",
        18: "extendedResourceClaimStatus PodExtendedResourceClaimStatus?",
        19: "allocatedResources map<string,Quantity>", 20: "resources ResourceRequirements?",
    },
    "PodCondition": {
        1: "type string", 7: "observedGeneration int64", 2: "status string", 3: "lastProbeTime Time",
        4: "lastTransitionTime Time", 5: "reason string", 6: "message string",
    },
    "HostIP": {1: "ip string"},
    "PodIP": {1: "ip string"},
    "ContainerStatus": {
        1: "name string", 2: "state ContainerState", 3: "lastState ContainerState", 4: "ready bool?",
        5: "restartCount int32?", 6: "image string", 7: "imageID string", 8: "containerID string",
        9: "started bool?", 10: "allocatedResources map<string,Quantity>",
        11: "resources ResourceRequirements?",
        12: "volumeMounts VolumeMountStatus[]", 14: "allocatedResourcesStatus ResourceStatus[]",
        15: "stopSignal string?",
    },
    "ContainerState": {
        1: "waiting ContainerStateWaiting?", 2: "running ContainerStateRunning?",
        3: "terminated ContainerStateTerminated?",
    },
    "ContainerStateWaiting": {1: "reason string", 2: "message string"},
    "ContainerStateRunning": {1: "startedAt Time"},
    "ContainerStateTerminated": {
        1: "exitCode int32?", 2: "signal int32", 3: "reason string", 4: "message string", 5: "startedAt Time",
        6: "finishedAt Time", 7: "containerID string",
    },
    "VolumeMountStatus": {
        1: "name string", 2: "mountPath string", 3: "readOnly bool", 4: "recursiveReadOnly string?",
    },
    "ResourceStatus": {1: "name string", 2: "resources ResourceHealth[]"},
    "ResourceHealth": {1: "resourceID string", 2: "health string", 6: "message string?"},
    "PodResourceClaimStatus": {1: "name string", 2: "resourceClaimName string?"},
    "PodExtendedResourceClaimStatus": {
        1: "requestMappings ContainerExtendedResourceRequest[]", 2: "resourceClaimName string",
    },
    "ContainerExtendedResourceRequest": {
        1: "containerName string", 2: "resourceName string", 3: "requestName string",
    },
}

# Top-level kinds accepted in the envelope: (apiVersion, kind) -> SCHEMA message.
SUPPORTED_KINDS: frozenset[tuple[str, str]] = frozenset(
    ("v1", k) for k in ("Namespace", "ConfigMap", "Secret", "ResourceQuota", "ServiceAccount", "Pod"))

_SCALARS = frozenset({"string", "bytes", "bool", "int32", "int64", "raw"})
_VARINT_TYPES = frozenset({"bool", "int32", "int64"})
_SPECIAL = frozenset({"Time", "Quantity", "IntOrString", "FieldsV1"})
_MAP_VALUES = frozenset({"string", "bytes", "Quantity"})


class _Field(NamedTuple):
    name: str  # "-" for an inlined embedded struct
    type: str
    repeated: bool
    keep_zero: bool


def _compile(schema: dict[str, dict[int, str]]) -> dict[str, dict[int, _Field]]:
    out: dict[str, dict[int, _Field]] = {}
    for msg, fields in schema.items():
        out[msg] = {}
        for num, spec in fields.items():
            name, typ = spec.split()
            keep = typ.endswith("?")
            typ = typ.rstrip("?")
            repeated = typ.endswith("[]")
            typ = typ.removesuffix("[]")
            value_type = typ[len("map<string,"):-1] if typ.startswith("map<") else typ
            # A typo in the table must fail at import, not on some client's request.
            if typ.startswith("map<") and value_type not in _MAP_VALUES:
                raise ValueError(f"{msg}.{num}: unsupported map value type {value_type}")
            if value_type not in _SCALARS | _SPECIAL | _MAP_VALUES and value_type not in schema:
                raise ValueError(f"{msg}.{num}: unknown type {value_type}")
            out[msg][num] = _Field(name, typ, repeated, keep)
    return out


_FIELDS = _compile(SCHEMA)


def decode(body: bytes) -> dict[str, Any]:
    """Decode a protobuf request body into the dict the same object would have as JSON.

    Raises `APIError` 400 for a malformed body and 415 for an envelope we cannot decode (a kind outside
    `SUPPORTED_KINDS`, or a compressed/non-protobuf payload).
    """
    body = bytes(body)
    if not body.startswith(_MAGIC):
        raise bad_request("the protobuf request body does not start with the 'k8s\\x00' prefix")
    try:
        envelope = _message(body[len(_MAGIC):], "Unknown", "")
        type_meta = envelope.get("typeMeta", {})
        api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
        if not kind:
            raise bad_request("the protobuf request body has no kind in its runtime.Unknown envelope")
        if envelope.get("contentEncoding"):
            raise _unsupported(f"content encoding {envelope['contentEncoding']!r} is not supported")
        if envelope.get("contentType", MEDIA_TYPE) != MEDIA_TYPE:
            raise _unsupported(f"the protobuf envelope's content type {envelope['contentType']!r} "
                               f"is not supported")
        if (api_version, kind) not in SUPPORTED_KINDS:
            raise _unsupported(f"decoding {api_version}/{kind} from protobuf is not supported; "
                               f"send it as application/json")
        if "raw" not in envelope:  # clients always send it; without it the body was cut short
            raise bad_request(f"the protobuf request body has no {kind} payload "
                              f"in its runtime.Unknown envelope")
        return {"apiVersion": api_version, "kind": kind, **_message(envelope["raw"], kind, "")}
    except (ValueError, OverflowError, RecursionError) as e:  # belt and braces: never a 500
        raise bad_request(f"malformed protobuf request body: {e}") from e


def _unsupported(message: str) -> APIError:
    return APIError(415, "UnsupportedMediaType", message)


def _truncated(path: str) -> APIError:
    return bad_request(f"the protobuf request body is truncated (at {path or 'top level'})")


def _varint(data: bytes, pos: int, path: str) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise _truncated(path)
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & 0xFFFF_FFFF_FFFF_FFFF, pos
        shift += 7
        if shift > 63:
            raise bad_request(f"the protobuf request body has an over-long varint (at {path or 'top level'})")


def _walk(data: bytes, path: str) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield (field number, wire type, value): an int for varints, bytes for everything else."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos, path)
        num, wire = key >> 3, key & 7
        if num == 0:
            raise bad_request(f"the protobuf request body has field number 0 (at {path or 'top level'})")
        if wire == 0:
            value, pos = _varint(data, pos, path)
            yield num, wire, value
            continue
        if wire == 2:
            size, pos = _varint(data, pos, path)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
        else:  # 3/4 are proto2 groups, which no Kubernetes type uses; 6/7 do not exist
            raise bad_request(f"the protobuf request body has unsupported wire type {wire} "
                              f"(at {path or 'top level'})")
        if pos + size > len(data):
            raise _truncated(path)
        yield num, wire, data[pos:pos + size]
        pos += size


def _message(data: bytes, type_name: str, path: str) -> dict[str, Any]:
    fields = _FIELDS[type_name]
    out: dict[str, Any] = {}
    for num, wire, raw in _walk(data, path):
        f = fields.get(num)
        if f is None:  # newer or unmodelled field: skip, as upstream does for unknown JSON fields
            continue
        where = f"{path}.{f.name}" if path else f.name
        if f.name == "-":
            out.update(_message(_need_bytes(raw, where), f.type, path))
        elif f.type.startswith("map<"):
            key, value = _map_entry(_need_bytes(raw, where), f.type[len("map<string,"):-1], where)
            out.setdefault(f.name, {})[key] = value
        elif f.repeated:
            items = out.setdefault(f.name, [])
            if wire == 2 and f.type in _VARINT_TYPES:  # packed repeated scalars
                pos = 0
                while pos < len(raw):
                    v, pos = _varint(raw, pos, where)
                    items.append(_value(f.type, 0, v, where))
            else:
                items.append(_value(f.type, wire, raw, where))
        else:
            value = _value(f.type, wire, raw, where)
            if value is None or (not f.keep_zero and _is_zero(value)):
                out.pop(f.name, None)  # the last occurrence wins, as in protobuf
            else:
                out[f.name] = value
    return out


def _is_zero(value: Any) -> bool:
    return value is None or value is False or value == 0 or value == "" or value == {} or value == []


def _need_bytes(raw: int | bytes, path: str) -> bytes:
    if isinstance(raw, int):
        raise bad_request(f"the protobuf request body has a varint where {path} expects a message")
    return raw


def _value(typ: str, wire: int, raw: int | bytes, path: str) -> Any:
    if typ in _VARINT_TYPES:
        if wire != 0 or not isinstance(raw, int):
            raise bad_request(f"the protobuf request body has wire type {wire} where {path} expects a varint")
        if typ == "bool":
            return raw != 0
        if typ == "int32":  # Go truncates to 32 bits, negatives arrive sign-extended
            raw &= 0xFFFF_FFFF
            return raw - (1 << 32) if raw >= 1 << 31 else raw
        return raw - (1 << 64) if raw >= 1 << 63 else raw
    data = _need_bytes(raw, path)
    if typ == "string":
        return data.decode("utf-8", "replace")  # Go's JSON encoder would emit U+FFFD as well
    if typ == "bytes":
        return base64.b64encode(data).decode("ascii")
    if typ == "raw":
        return data
    if typ == "Time":
        return _time(data, path)
    if typ == "Quantity":
        # resource.Quantity{string=1}; Go marshals the zero Quantity as "0".
        return next((_value("string", w, v, path) for n, w, v in _walk(data, path) if n == 1), "") or "0"
    if typ == "IntOrString":
        kind, int_val, str_val = 0, 0, ""
        for n, w, v in _walk(data, path):
            if n == 1:
                kind = _value("int64", w, v, path)
            elif n == 2:
                int_val = _value("int32", w, v, path)
            elif n == 3:
                str_val = _value("string", w, v, path)
        return str_val if kind == 1 else int_val
    if typ == "FieldsV1":
        raw_json = next((_need_bytes(v, path) for n, _w, v in _walk(data, path) if n == 1), b"")
        if not raw_json:
            return None
        try:
            return json.loads(raw_json)
        except (ValueError, UnicodeDecodeError) as e:
            raise bad_request(f"{path} does not hold valid JSON: {e}") from e
    return _message(data, typ, path)


def _map_entry(data: bytes, value_type: str, path: str) -> tuple[str, Any]:
    key: str = ""
    value: Any = None
    for n, w, v in _walk(data, path):
        if n == 1:
            key = _value("string", w, v, path)
        elif n == 2:
            value = _value(value_type, w, v, f"{path}[{key}]")
    if value is None:  # an entry without a value holds the value type's zero
        value = "0" if value_type == "Quantity" else ""
    return key, value


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _time(data: bytes, path: str) -> str | None:
    """metav1.Time {seconds, nanos} -> RFC3339 with second precision, as its JSON form; zero -> absent."""
    seconds = 0
    for n, w, v in _walk(data, path):
        if n == 1:
            seconds = _value("int64", w, v, path)
    if seconds == 0:  # a zero Time marshals as an empty message (JSON: null / omitted)
        return None
    try:
        t = _EPOCH + timedelta(seconds=seconds)
    except OverflowError as e:
        raise bad_request(f"{path} is out of range: {seconds} seconds") from e
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}Z"
