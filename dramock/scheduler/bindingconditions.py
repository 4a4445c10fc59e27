"""DRADeviceBindingConditions (KEP-5007) as the 1.37 kube-scheduler's DynamicResources plugin reads them.

A device published with `bindingConditions` (a fabric-attached GPU, say) must be made ready by its driver
before the pod may be bound: the allocation result carries the condition types, and the driver reports them in
the claim's `status.devices[]` entry of that device (matched by driver, pool and device; the share ID is not
compared, as upstream's getAllocatedDeviceStatus). PreBind waits until every binding condition is True; a True
`bindingFailureCondition`, or `allocation.allocationTimestamp + bindingTimeout` passing, fails the binding. The
next scheduling attempt then finds the claim unavailable on every node, and PostFilter deallocates it.

Both gates, DRADeviceBindingConditions and DRAResourceClaimDeviceStatus, must be on; `binding_conditions_on`
says whether they are.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

from dramock.schemas.featuregates import FeatureGates

Obj = dict[str, Any]

# kube-scheduler's DynamicResourcesArgs.bindingTimeout default (DynamicResourcesBindingTimeoutDefault).
DEFAULT_BINDING_TIMEOUT = 600.0
# PreBind re-checks the claims this often at the latest (upstream polls every 5 s; dramock also wakes up on
# every claim event).
POLL_INTERVAL = 5.0

EVENT_REASON_PENDING = "BindingConditionsPending"


class BindingFailed(Exception):
    """A binding failure condition is True, or the binding timed out (the message is upstream's)."""


def binding_conditions_on(gates: FeatureGates) -> bool:
    return gates.enabled("DRADeviceBindingConditions") and gates.enabled("DRAResourceClaimDeviceStatus")


def has_binding_conditions(claim: Obj | None) -> bool:
    allocation = ((claim or {}).get("status") or {}).get("allocation") or {}
    return any(r.get("bindingConditions") for r in (allocation.get("devices") or {}).get("results") or [])


def _device_status(claim: Obj, result: Obj) -> Obj | None:
    for d in (claim.get("status") or {}).get("devices") or []:
        if (d.get("driver"), d.get("pool"), d.get("device")) == (result.get("driver"), result.get("pool"),
                                                                 result.get("device")):
            return d
    return None


def claim_ready(claim: Obj) -> bool:
    """Upstream's isClaimReadyForBinding: every binding condition of every result is True. Raises
    BindingFailed when a failure condition is True."""
    allocation = (claim.get("status") or {}).get("allocation")
    if not allocation:
        return False
    for result in (allocation.get("devices") or {}).get("results") or []:
        if not result.get("bindingConditions"):
            continue
        status = _device_status(claim, result)
        if status is None:
            return False
        conditions = {c.get("type"): c for c in status.get("conditions") or []}
        for failure in result.get("bindingFailureConditions") or []:
            c = conditions.get(failure)
            if c is not None and c.get("status") == "True":
                raise BindingFailed(f"claim {claim['metadata']['name']} binding failed: reason={c.get('reason', '')}, "
                                    f"message={_go_quote(c.get('message', ''))}")
        if any((conditions.get(t) or {}).get("status") != "True" for t in result["bindingConditions"]):
            return False
    return True


def claim_timed_out(claim: Obj, timeout: float, now: datetime | None = None) -> bool:
    """Upstream's isClaimTimeout: allocationTimestamp + bindingTimeout has passed (results with binding
    conditions only)."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    stamp = allocation.get("allocationTimestamp")
    if not stamp or not has_binding_conditions(claim):
        return False
    try:
        at = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return False
    return (now or datetime.now(timezone.utc)).timestamp() > at.timestamp() + timeout


def unavailable(claim: Obj, timeout: float) -> bool:
    """Filter: an allocated claim whose binding failed or timed out is not available on any node (PostFilter may
    then deallocate it)."""
    try:
        return not claim_ready(claim) and claim_timed_out(claim, timeout)
    except BindingFailed:
        return True


def _go_quote(s: str) -> str:
    """Go's %q for the printable strings a condition message holds."""
    out = ['"']
    for ch in s:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """A Go duration (`600s`, `1m30s`, `1.5h`) in seconds, as a scheduler configuration writes one; a bare
    number is seconds. Raises ValueError."""
    s = text.strip()
    try:
        return float(s)
    except ValueError:
        pass
    sign = -1.0 if s.startswith("-") else 1.0
    body = s.lstrip("+-")
    total, pos = 0.0, 0
    for m in _DURATION_PART.finditer(body):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        pos = m.end()
    if not body or pos != len(body):
        raise ValueError(f'time: invalid duration "{text}"')
    return sign * total
