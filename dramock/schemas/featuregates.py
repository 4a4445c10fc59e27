"""Feature gates of Kubernetes 1.37 that change what dramock serves or does, with their 1.37 defaults.

Parsed from `--feature-gates A=true,B=false` as kube-apiserver parses it. Gates locked to their default
(GA, LockToDefault) refuse to be changed, as upstream refuses.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Gate:
    default: bool
    stage: str  # ALPHA / BETA / GA
    locked: bool = False


# name -> 1.37 spec (upstream pkg/features, versioned specs at 1.37)
GATES: dict[str, Gate] = {
    "DynamicResourceAllocation": Gate(True, "GA", locked=True),
    "DRAAdminAccess": Gate(True, "GA", locked=True),
    "DRAConsumableCapacity": Gate(True, "BETA"),
    "DRADerivedAttributes": Gate(False, "ALPHA"),
    "DRADeviceBindingConditions": Gate(True, "BETA"),
    "DRADeviceCompatibilityGroups": Gate(False, "ALPHA"),
    "DRADeviceTaintRules": Gate(True, "GA"),
    "DRADeviceTaints": Gate(True, "GA"),
    "DRAExtendedResource": Gate(True, "GA", locked=True),
    "DRAFractionalCapacityRange": Gate(False, "BETA"),
    "DRAListTypeAttributes": Gate(False, "ALPHA"),
    "DRANodeAllocatableResources": Gate(False, "ALPHA"),
    "DRAOptionalNodeOperations": Gate(False, "ALPHA"),
    "DRAPartitionableDevices": Gate(True, "BETA"),
    "DRAPrioritizedList": Gate(True, "GA", locked=True),
    "DRAResourceClaimDeviceStatus": Gate(True, "GA", locked=True),
    "DRAResourcePoolStatus": Gate(False, "ALPHA"),
    "DRASchedulerFilterTimeout": Gate(True, "BETA"),
    "DRAWorkloadResourceClaims": Gate(False, "BETA"),
}


class FeatureGateError(ValueError):
    pass


def parse(spec: str) -> dict[str, bool]:
    """`A=true,B=false` -> {A: True, B: False}, checked against the 1.37 table."""
    out: dict[str, bool] = {}
    for part in filter(None, (p.strip() for p in (spec or "").split(","))):
        name, sep, value = part.partition("=")
        if not sep or value.lower() not in ("true", "false"):
            raise FeatureGateError(f"missing bool value for {name}" if not sep
                                   else f"invalid value of {name}={value}, err: strconv.ParseBool")
        gate = GATES.get(name)
        if gate is None:
            raise FeatureGateError(f"unrecognized feature gate: {name}")
        enabled = value.lower() == "true"
        if gate.locked and enabled != gate.default:
            raise FeatureGateError(f"cannot set feature gate {name} to {enabled}, feature is locked to "
                                   f"{gate.default}")
        out[name] = enabled
    return out


class FeatureGates:
    def __init__(self, overrides: dict[str, bool] | None = None):
        self.overrides = dict(overrides or {})

    def enabled(self, name: str) -> bool:
        if name in self.overrides:
            return self.overrides[name]
        return GATES[name].default
