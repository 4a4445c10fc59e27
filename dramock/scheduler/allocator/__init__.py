"""The structured-parameters device allocator (KEP-4381 and its extensions), as a pure function.

`allocate(AllocationInput) -> AllocationOutcome` follows upstream
k8s.io/dynamic-resource-allocation/structured (the "experimental" allocator that Kubernetes 1.37 uses
when any beta/alpha DRA feature is on): an exhaustive first-fit search with backtracking over the
claims of one pod, their requests (or the subrequests of a `firstAvailable` list) and the candidate
devices of the pools visible from the node, in a deterministic order (pools by driver/pool name, slices
by name, devices in slice order).

Per feature (1.37 gates in dramock.schemas.featuregates):
  * pools: only the newest generation counts; a pool whose `resourceSliceCount` slices are not all
    present is incomplete and offers no device (and makes allocationMode All fail); duplicate device
    names or dangling counter references make a pool invalid: skipped, and reported only when the claims
    cannot be satisfied from the other pools (allocationMode All fails at once on it);
    slices are node-local (`nodeName`), `nodeSelector`, `allNodes` or `perDeviceNodeSelection`.
  * selectors: class selectors AND request selectors, CEL through dramock.cel, memoized per
    (expression, device key); a CEL compile/runtime error fails the allocation with upstream's message.
  * ExactCount / All (All: every matching device of the visible pools, none may be in use unless
    adminAccess), constraints matchAttribute / distinctAttribute, adminAccess, firstAvailable.
  * DRAPartitionableDevices: shared counters (counter sets from any slice of the pool) consumed by
    allocated, in-flight and tentatively chosen devices.
  * DRAConsumableCapacity: allowMultipleAllocations, capacity requests and requestPolicy, consumed
    capacity + a fresh shareID (a UUID, as upstream's uuid.NewUUID()).
  * DRADeviceCompatibilityGroups (KEP-5963): rolling intersection of compatibilityGroups per counter
    set; groups of already-allocated devices are read from the slices (as upstream). Gate off: devices
    declaring groups are skipped.
  * DRADeviceTaints / DRADeviceTaintRules: NoSchedule/NoExecute taints must be tolerated.
  * DRADeviceBindingConditions: bindingConditions copied into results, pools with binding conditions
    last, `bindsToNode` pins the node, `allocationTimestamp` set when any result has binding conditions.
  * DRAOptionalNodeOperations (KEP-5945): the slice's `skipNodeOperations` copied into each result.
  * DRAListTypeAttributes: constraints compare attribute values as sets (scalars as one-element sets).
  * DRADerivedAttributes: a request's `derivedAttributes` (CEL per candidate device) stand in for the device's
    attribute of that name in the claim's matchAttribute / distinctAttribute constraints.

Layout (one concept per module, composed into one search object in `search.py`):
  model.py       the pools, devices and requests the search works on; errors; quantities; the CEL env cache
  base.py        the state of one allocation (input, allocated state, the search's tentative state)
  pools.py       which slices and devices the node sees (pool generations, completeness, validity); slices
                 without nodeName passed apart (AllocationInput.shared_slices) are gathered once per set of
                 answers a node gives their node selectors, and that view (with the candidates and attribute
                 groups the search derives from it) is shared by every node giving the same answers
  matching.py    whether a device matches a request: class and request selectors, taints
  requests.py    the claims' requests and subrequests, validated, and their candidate devices
  allocated.py   what the allocation results already made hold (the allocated state)
  capacity.py    consumable capacity: requestPolicy, shares
  counters.py    shared counters and compatibility groups
  constraints.py matchAttribute / distinctAttribute (and derived attributes)
  tracing.py     the explanation mode's words
  results.py     the allocation results, config and node selector
  search.py      the backtracking search over all of it, and `allocate`

Explanation mode: with `AllocationInput.tracer` (dramock.scheduler.explain.Tracer) the allocator tells it why
each device was passed over, in words with the values involved (the `why_*` methods). The calls sit only on
the paths that reject a device, behind one `is not None` test, so the scheduler's path does no extra work.
"""

from __future__ import annotations

from dramock.scheduler.allocator.allocated import allocated_devices, holding
from dramock.scheduler.allocator.model import ALLOCATION_RESULTS_MAX_SIZE, clear_caches
from dramock.scheduler.allocator.search import allocate

__all__ = ["ALLOCATION_RESULTS_MAX_SIZE", "allocate", "allocated_devices", "clear_caches", "holding"]

