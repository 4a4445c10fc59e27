"""Feature gates of Kubernetes 1.37 that change what dramock serves or does, with their 1.37 defaults.

Parsed from `--feature-gates A=true,B=false` as kube-apiserver parses it (component-base
featuregate.Set / SetFromMap): unknown gates, gates locked to their default and enabled gates whose
dependencies are disabled are refused with upstream's wording.

Source: upstream pkg/features (versioned specs as of 1.37, `defaultKubernetesFeatureGateDependencies`)
and component-base/featuregate/feature_gate.go.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger(__name__)

ALPHA, BETA, GA = "ALPHA", "BETA", "GA"


@dataclass(frozen=True)
class Gate:
    default: bool
    stage: str  # ALPHA / BETA / GA
    locked: bool = False


# name -> the spec in effect at emulation version 1.37 (upstream VersionedSpecs, last entry <= 1.37).
GATES: dict[str, Gate] = {
    # GA and locked to true.
    "DynamicResourceAllocation": Gate(True, GA, locked=True),     # GA 1.34, locked 1.35
    "DRAAdminAccess": Gate(True, GA, locked=True),                # GA+locked 1.36
    "DRAPrioritizedList": Gate(True, GA, locked=True),            # GA 1.36, locked 1.37
    "DRAExtendedResource": Gate(True, GA, locked=True),           # GA+locked 1.37
    "DRAResourceClaimDeviceStatus": Gate(True, GA, locked=True),  # GA+locked 1.37
    # GA, may still be turned off (LockToDefault from 1.38).
    "DRADeviceTaints": Gate(True, GA),
    "DRADeviceTaintRules": Gate(True, GA),
    # Beta, on by default.
    "DRAPartitionableDevices": Gate(True, BETA),
    "DRAConsumableCapacity": Gate(True, BETA),
    "DRADeviceBindingConditions": Gate(True, BETA),
    "DRASchedulerFilterTimeout": Gate(True, BETA),
    "DRAResourceClaimGranularStatusAuthorization": Gate(True, BETA),
    # Beta, off by default.
    "DRAWorkloadResourceClaims": Gate(False, BETA),
    # Not a DRA gate, but DRAWorkloadResourceClaims needs its kinds: scheduling.k8s.io Workload and PodGroup
    # (beta in 1.37, off by default; served with --runtime-config scheduling.k8s.io/v1beta1=true).
    "GenericWorkload": Gate(False, BETA),
    # Beta in 1.37 with two 1.37 specs: default false, and default true only once
    # --min-compatibility-version is 1.37 (the default minimum compatibility version is 1.36).
    "DRAFractionalCapacityRange": Gate(False, BETA),
    # Alpha, off by default.
    "DRADeviceCompatibilityGroups": Gate(False, ALPHA),
    "DRADerivedAttributes": Gate(False, ALPHA),
    "DRAOptionalNodeOperations": Gate(False, ALPHA),
    "DRASharedConsumableCapacity": Gate(False, ALPHA),
    "DRAListTypeAttributes": Gate(False, ALPHA),
    "DRANodeAllocatableResources": Gate(False, ALPHA),
    "DRAResourcePoolStatus": Gate(False, ALPHA),
}

# The "special" gates every component accepts: they set all alpha (beta) gates not named explicitly.
SPECIAL_GATES: dict[str, Gate] = {
    "AllAlpha": Gate(False, ALPHA),
    "AllBeta": Gate(False, BETA),
}

# feature -> features it needs enabled (upstream defaultKubernetesFeatureGateDependencies, DRA part).
DEPENDENCIES: dict[str, tuple[str, ...]] = {
    "DRAAdminAccess": ("DynamicResourceAllocation",),
    "DRAConsumableCapacity": ("DynamicResourceAllocation",),
    "DRADeviceBindingConditions": ("DynamicResourceAllocation", "DRAResourceClaimDeviceStatus"),
    "DRADeviceTaintRules": ("DRADeviceTaints",),  # DynamicResourceAllocation is indirect.
    "DRADeviceTaints": ("DynamicResourceAllocation",),
    "DRAExtendedResource": ("DynamicResourceAllocation",),
    "DRAPartitionableDevices": ("DynamicResourceAllocation",),
    "DRAPrioritizedList": ("DynamicResourceAllocation",),
    "DRASchedulerFilterTimeout": ("DynamicResourceAllocation",),
}

_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


class FeatureGateError(ValueError):
    pass


def _parse_bool(key: str, value: str) -> bool:
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise FeatureGateError(f'invalid value of {key}={value}, err: strconv.ParseBool: parsing "{value}": '
                           f"invalid syntax")


def _aggregate(errs: list[str]) -> FeatureGateError:
    # utilerrors.NewAggregate: one message as is, several as "[a, b]" (duplicates folded).
    unique = list(dict.fromkeys(errs))
    return FeatureGateError(unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]")


def parse(spec: str) -> dict[str, bool]:
    """`A=true,B=false` -> the gates set explicitly (AllAlpha/AllBeta expanded), checked like upstream."""
    raw: dict[str, bool] = {}
    for part in (spec or "").split(","):
        if not part:
            continue
        key, sep, text = part.partition("=")
        key = key.strip()
        if not sep:
            raise FeatureGateError(f"missing bool value for {key}")
        raw[key] = _parse_bool(key, text.strip())

    errs: list[str] = []
    enabled: dict[str, bool] = {}
    specials: dict[str, bool] = {}
    for key, value in raw.items():
        gate = GATES.get(key) or SPECIAL_GATES.get(key)
        if gate is None:
            raise FeatureGateError(f"unrecognized feature gate: {key}")  # upstream returns early here
        if gate.locked and value != gate.default:
            errs.append(f"cannot set feature gate {key} to {str(value).lower()}, feature is locked to "
                        f"{str(gate.default).lower()}")
            continue
        if key in SPECIAL_GATES:
            specials[key] = value
            continue
        enabled[key] = value
        if gate.stage == GA:
            log.warning("Setting GA feature gate %s=%s. It will be removed in a future release.",
                        key, str(value).lower())
    if errs:
        raise _aggregate(errs)
    for special, value in specials.items():
        stage = SPECIAL_GATES[special].stage
        for name, gate in GATES.items():
            if gate.stage == stage and name not in raw:
                enabled[name] = value

    def on(name: str) -> bool:
        return enabled.get(name, GATES[name].default)

    for feature in sorted(DEPENDENCIES):
        if not on(feature):
            continue
        disabled = [dep for dep in DEPENDENCIES[feature] if not on(dep)]
        if disabled:
            errs.append(f"{feature} is enabled, but depends on features that are disabled: [{' '.join(disabled)}]")
    if errs:
        raise _aggregate(errs)
    return enabled


class FeatureGates:
    def __init__(self, overrides: dict[str, bool] | None = None):
        self.overrides = dict(overrides or {})

    def enabled(self, name: str) -> bool:
        if name in self.overrides:
            return self.overrides[name]
        return GATES[name].default

    def __repr__(self) -> str:
        return f"FeatureGates({self.overrides!r})"
