"""Server-side printing: the `meta.k8s.io/v1` `Table` a kube-apiserver answers to `Accept: ...;as=Table`.

Column sets and cell values follow upstream's pkg/printers/internalversion/printers.go. As upstream's
TableConvertor does, rows are always generated in "wide" form (every column, priority 0 and 1); kubectl
hides priority-1 columns unless `-o wide`. Cells keep upstream's Go types: strings, ints, bools.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from dramock import timefmt
from dramock.schemas import defs, workloadprinters
from dramock.schemas.registry import Kind

Obj = dict[str, Any]
Row = list[Any]

TABLE_API_VERSION = "meta.k8s.io/v1"
INCLUDE_OBJECT_VALUES = ("None", "Metadata", "Object")

# ---------------------------------------------------------------------------------------------------
# Durations and timestamps


def human_duration(seconds: float) -> str:
    """apimachinery duration.HumanDuration: ~2-3 significant figures ("5s", "3m2s", "10d", "2y30d")."""
    # Go: int(d.Seconds()) truncates toward zero.
    secs = int(seconds)
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 60 * 2:
        return f"{secs}s"
    minutes = secs // 60
    if minutes < 10:
        s = secs % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = secs // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 `Time`/`MicroTime` string as an aware datetime; None when unset or unparsable."""
    if not value or not isinstance(value, str):
        return None
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _since(value: Any, now: datetime) -> str:
    """printers.go translateTimestampSince: "<unknown>" for a zero timestamp."""
    t = parse_time(value)
    if t is None:
        return "<unknown>"
    return human_duration((now - t).total_seconds())


# ---------------------------------------------------------------------------------------------------
# Column definitions


def _doc(definition: str, field: str) -> str:
    """The API documentation of a field (what upstream reads from the types' SwaggerDoc())."""
    prop = defs.field_schema(defs.definition(definition), field)
    return prop.get("description", "")


_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_CORE = "io.k8s.api.core.v1."
_RES = "io.k8s.api.resource.v1."


def _col(name: str, typ: str, description: str, *, fmt: str = "", priority: int = 0) -> Obj:
    return {"name": name, "type": typ, "format": fmt, "description": description, "priority": priority}


def _name_col(priority: int = 0) -> Obj:
    return _col("Name", "string", _doc(_META, "name"), fmt="name", priority=priority)


def _age_col() -> Obj:
    return _col("Age", "string", _doc(_META, "creationTimestamp"))


def _columns() -> dict[str, list[Obj]]:
    ev = _CORE + "Event"
    return {
        "Pod": [
            _name_col(),
            _col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
            _col("Status", "string", "The aggregate status of the containers in this pod."),
            _col("Restarts", "string", "The number of times the containers in this pod have been restarted "
                 "and when the last container in this pod has restarted."),
            _age_col(),
            _col("IP", "string", _doc(_CORE + "PodStatus", "podIP"), priority=1),
            _col("Node", "string", _doc(_CORE + "PodSpec", "nodeName"), priority=1),
            _col("Nominated Node", "string", _doc(_CORE + "PodStatus", "nominatedNodeName"), priority=1),
            _col("Readiness Gates", "string", _doc(_CORE + "PodSpec", "readinessGates"), priority=1),
        ],
        "Node": [
            _name_col(),
            _col("Status", "string", "The status of the node"),
            _col("Roles", "string", "The roles of the node"),
            _age_col(),
            _col("Version", "string", _doc(_CORE + "NodeSystemInfo", "kubeletVersion")),
            _col("Internal-IP", "string", _doc(_CORE + "NodeStatus", "addresses"), priority=1),
            _col("External-IP", "string", _doc(_CORE + "NodeStatus", "addresses"), priority=1),
            _col("OS-Image", "string", _doc(_CORE + "NodeSystemInfo", "osImage"), priority=1),
            _col("Kernel-Version", "string", _doc(_CORE + "NodeSystemInfo", "kernelVersion"), priority=1),
            _col("Container-Runtime", "string", _doc(_CORE + "NodeSystemInfo", "containerRuntimeVersion"),
                 priority=1),
        ],
        "Event": [
            _col("Last Seen", "string", _doc(ev, "lastTimestamp")),
            _col("Type", "string", _doc(ev, "type")),
            _col("Reason", "string", _doc(ev, "reason")),
            _col("Object", "string", _doc(ev, "involvedObject")),
            _col("Subobject", "string", _doc(_CORE + "ObjectReference", "fieldPath"), priority=1),
            _col("Source", "string", _doc(ev, "source"), priority=1),
            _col("Message", "string", _doc(ev, "message")),
            _col("First Seen", "string", _doc(ev, "firstTimestamp"), priority=1),
            _col("Count", "string", _doc(ev, "count"), priority=1),
            _name_col(priority=1),
        ],
        "Namespace": [
            _name_col(),
            _col("Status", "string", "The status of the namespace"),
            _age_col(),
        ],
        "Secret": [
            _name_col(),
            _col("Type", "string", _doc(_CORE + "Secret", "type")),
            _col("Data", "string", _doc(_CORE + "Secret", "data")),
            _age_col(),
        ],
        "ServiceAccount": [
            _name_col(),
            _col("Secrets", "string", _doc(_CORE + "ServiceAccount", "secrets")),
            _age_col(),
        ],
        "ConfigMap": [
            _name_col(),
            _col("Data", "string", _doc(_CORE + "ConfigMap", "data")),
            _age_col(),
        ],
        "ResourceQuota": [
            _name_col(),
            _col("Request", "string",
                 "Request represents a minimum amount of cpu/memory that a container may consume."),
            _col("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may "
                 "use independent of contention on the node."),
            _age_col(),
        ],
        "Lease": [
            _name_col(),
            _col("Holder", "string", _doc("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity")),
            _age_col(),
        ],
        "DeviceClass": [_name_col(), _age_col()],
        "ResourceClaim": [
            _name_col(),
            _col("State", "string", "A summary of the current state (allocated, pending, reserved, etc.)."),
            _age_col(),
        ],
        "ResourceClaimTemplate": [_name_col(), _age_col()],
        "ResourceSlice": [
            _name_col(),
            _col("Node", "string", _doc(_RES + "ResourceSliceSpec", "nodeName")),
            _col("Driver", "string", _doc(_RES + "ResourceSliceSpec", "driver")),
            _col("Pool", "string", _doc(_RES + "ResourcePool", "name")),
            _age_col(),
        ],
        "DeviceTaintRule": [_name_col(), _age_col()],
        **workloadprinters.columns(_col, _name_col, _age_col, _doc),
    }


_COLUMNS: dict[str, list[Obj]] | None = None


def _default_columns() -> list[Obj]:
    """rest.DefaultTableConvertor, for kinds without a printer."""
    return [_name_col(), _col("Created At", "date", _doc(_META, "creationTimestamp"))]


def column_definitions(kind: Kind) -> list[Obj]:
    global _COLUMNS
    if _COLUMNS is None:
        _COLUMNS = _columns()
    cols = _COLUMNS.get(kind.kind)
    return [dict(c) for c in (cols if cols is not None else _default_columns())]


# ---------------------------------------------------------------------------------------------------
# Row printers (obj, now) -> (cells, row conditions)


def _md(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _name(obj: Obj) -> str:
    return _md(obj).get("name", "")


def _age(obj: Obj, now: datetime) -> str:
    return _since(_md(obj).get("creationTimestamp"), now)


def _get(obj: Any, *path: str, default: Any = None) -> Any:
    cur = obj
    for p in path:
        if not isinstance(cur, dict):
            return default
        cur = cur.get(p)
    return default if cur is None else cur


_POD_SUCCEEDED = [{"type": "Completed", "status": "True", "reason": "Succeeded",
                   "message": "The pod has completed successfully."}]
_POD_FAILED = [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]


def _later(current: datetime | None, candidate: Any) -> datetime | None:
    t = parse_time(candidate)
    if t is not None and (current is None or current < t):
        return t
    return current


def _pod(obj: Obj, now: datetime) -> tuple[Row, list[Obj] | None]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    containers = spec.get("containers") or []
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    restarts = restartable_restarts = 0
    total = len(containers)
    ready = 0
    last_restart: datetime | None = None
    last_restartable: datetime | None = None

    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    conditions = _POD_SUCCEEDED if phase == "Succeeded" else _POD_FAILED if phase == "Failed" else None

    def restartable(name: Any) -> bool:
        return (init_specs.get(name) or {}).get("restartPolicy") == "Always"

    total += sum(1 for c in init_specs.values() if c.get("restartPolicy") == "Always")

    initializing = False
    init_statuses = status.get("initContainerStatuses") or []
    for i, cs in enumerate(init_statuses):
        restarts += int(cs.get("restartCount") or 0)
        finished = _get(cs, "lastState", "terminated", "finishedAt")
        last_restart = _later(last_restart, finished)
        if restartable(cs.get("name")):
            restartable_restarts += int(cs.get("restartCount") or 0)
            last_restartable = _later(last_restartable, finished)
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), state.get("waiting")
        if term is not None and int(term.get("exitCode") or 0) == 0:
            continue
        if restartable(cs.get("name")) and cs.get("started"):
            if cs.get("ready"):
                ready += 1
            continue
        if term is not None:
            if not term.get("reason"):
                if term.get("signal"):
                    reason = f"Init:Signal:{term['signal']}"
                else:
                    reason = f"Init:ExitCode:{int(term.get('exitCode') or 0)}"
            else:
                reason = "Init:" + term["reason"]
        elif waiting is not None and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(spec.get('initContainers') or [])}"
        initializing = True
        break

    initialized = next((c.get("status") == "True" for c in status.get("conditions") or []
                        if c.get("type") == "Initialized"), False)
    if not initializing or initialized:
        restarts, last_restart = restartable_restarts, last_restartable
        has_running = False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += int(cs.get("restartCount") or 0)
            last_restart = _later(last_restart, _get(cs, "lastState", "terminated", "finishedAt"))
            state = cs.get("state") or {}
            term, waiting = state.get("terminated"), state.get("waiting")
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif term is not None and term.get("reason"):
                reason = term["reason"]
            elif term is not None:
                if term.get("signal"):
                    reason = f"Signal:{term['signal']}"
                else:
                    reason = f"ExitCode:{int(term.get('exitCode') or 0)}"
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            pod_ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                            for c in status.get("conditions") or [])
            reason = "Running" if pod_ready else "NotReady"

    if _md(obj).get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif _md(obj).get("deletionTimestamp") and phase not in ("Failed", "Succeeded"):
        reason = "Terminating"

    restarts_str = str(restarts)
    if restarts != 0 and last_restart is not None:
        restarts_str = f"{restarts} ({human_duration((now - last_restart).total_seconds())} ago)"

    pod_ips = status.get("podIPs") or []
    pod_ip = (pod_ips[0].get("ip") if pod_ips else "") or "<none>"
    gates = spec.get("readinessGates") or []
    readiness = "<none>"
    if gates:
        true_count = 0
        for gate in gates:
            for cond in status.get("conditions") or []:
                if cond.get("type") == gate.get("conditionType"):
                    if cond.get("status") == "True":
                        true_count += 1
                    break
        readiness = f"{true_count}/{len(gates)}"
    cells = [_name(obj), f"{ready}/{total}", reason, restarts_str, _age(obj, now),
             pod_ip, spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>", readiness]
    return cells, conditions


def _node(obj: Obj, now: datetime) -> Row:
    status, spec = obj.get("status") or {}, obj.get("spec") or {}
    conds = {c.get("type"): c for c in status.get("conditions") or []}
    states = []
    if "Ready" in conds:
        states.append("Ready" if conds["Ready"].get("status") == "True" else "NotReady")
    if not states:
        states.append("Unknown")
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = set()
    for k, v in (_md(obj).get("labels") or {}).items():
        if k.startswith("node-role.kubernetes.io/"):
            role = k[len("node-role.kubernetes.io/"):]
            if role:
                roles.add(role)
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    info = status.get("nodeInfo") or {}

    def address(kind: str) -> str:
        for a in status.get("addresses") or []:
            if a.get("type") == kind:
                return a.get("address", "")
        return "<none>"

    return [_name(obj), ",".join(states), ",".join(sorted(roles)) or "<none>", _age(obj, now),
            info.get("kubeletVersion", ""), address("InternalIP"), address("ExternalIP"),
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"]


def _core_event(obj: Obj) -> Obj:
    """An events.k8s.io/v1 Event in the core field names the (internal-type) printer reads."""
    if "regarding" not in obj and "note" not in obj and obj.get("apiVersion") != "events.k8s.io/v1":
        return obj
    src = obj.get("deprecatedSource") or {}
    return {
        "metadata": obj.get("metadata") or {},
        "involvedObject": obj.get("regarding") or {},
        "reason": obj.get("reason", ""),
        "message": obj.get("note", ""),
        "type": obj.get("type", ""),
        "firstTimestamp": obj.get("deprecatedFirstTimestamp"),
        "lastTimestamp": obj.get("deprecatedLastTimestamp"),
        "count": obj.get("deprecatedCount") or 0,
        "source": src,
        "eventTime": obj.get("eventTime"),
        "series": obj.get("series"),
        "reportingComponent": obj.get("reportingController", ""),
        "reportingInstance": obj.get("reportingInstance", ""),
    }


def _event(obj: Obj, now: datetime) -> Row:
    ev = _core_event(obj)
    first = _since(ev.get("firstTimestamp"), now)
    if parse_time(ev.get("firstTimestamp")) is None:
        first = _since(ev.get("eventTime"), now)
    last = _since(ev.get("lastTimestamp"), now)
    if parse_time(ev.get("lastTimestamp")) is None:
        last = first
    count = int(ev.get("count") or 0)
    series = ev.get("series")
    if series:
        last = _since(series.get("lastObservedTime"), now)
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1  # singleton events of the new API carry no count
    involved = ev.get("involvedObject") or {}
    kind = (involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = ev.get("source") or {}
    component = source.get("component") or ev.get("reportingComponent") or ""
    host = source.get("host") or ev.get("reportingInstance") or ""
    source_str = f"{component}, {host}" if host else component
    return [last, ev.get("type", ""), ev.get("reason", ""), target, involved.get("fieldPath", ""), source_str,
            (ev.get("message") or "").strip(), first, count, _name(obj)]


def _quota(obj: Obj, now: datetime) -> Row:
    hard = _get(obj, "status", "hard", default={})
    used = _get(obj, "status", "used", default={})
    requests: list[str] = []
    limits: list[str] = []
    for resource in sorted(hard):
        entry = f"{resource}: {used.get(resource, '0')}/{hard[resource]}"
        pieces = resource.split(".")
        (limits if len(pieces) > 1 and pieces[0] == "limits" else requests).append(entry)
    return [_name(obj), ", ".join(requests), ", ".join(limits), _age(obj, now)]


def _claim_state(obj: Obj) -> str:
    states = []
    deleted = bool(_md(obj).get("deletionTimestamp"))
    if deleted:
        states.append("deleted")
    status = obj.get("status") or {}
    if status.get("allocation") is None:
        if not deleted:
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


_PRINTERS: dict[str, Callable[[Obj, datetime], Row]] = {
    "Node": _node,
    "Event": _event,
    "Namespace": lambda o, now: [_name(o), _get(o, "status", "phase", default=""), _age(o, now)],
    "Secret": lambda o, now: [_name(o), o.get("type") or "", len(o.get("data") or {}), _age(o, now)],
    "ServiceAccount": lambda o, now: [_name(o), len(o.get("secrets") or []), _age(o, now)],
    "ConfigMap": lambda o, now: [_name(o), len(o.get("data") or {}) + len(o.get("binaryData") or {}),
                                 _age(o, now)],
    "ResourceQuota": _quota,
    "Lease": lambda o, now: [_name(o), _get(o, "spec", "holderIdentity", default=""), _age(o, now)],
    "DeviceClass": lambda o, now: [_name(o), _age(o, now)],
    "ResourceClaim": lambda o, now: [_name(o), _claim_state(o), _age(o, now)],
    "ResourceClaimTemplate": lambda o, now: [_name(o), _age(o, now)],
    "ResourceSlice": lambda o, now: [_name(o), _get(o, "spec", "nodeName", default=""),
                                     _get(o, "spec", "driver", default=""),
                                     _get(o, "spec", "pool", "name", default=""), _age(o, now)],
    "DeviceTaintRule": lambda o, now: [_name(o), _age(o, now)],
    **workloadprinters.printers(_name, _age, human_duration, parse_time),
}


def _default_row(obj: Obj) -> Row:
    t = parse_time(_md(obj).get("creationTimestamp"))
    return [_name(obj), timefmt.format_time(t) if t else None]


def row_cells(kind: Kind, obj: Obj, now: datetime | None = None) -> tuple[Row, list[Obj] | None]:
    """The cells (and row conditions, for finished pods) of one object."""
    now = now or datetime.now(UTC)
    if kind.kind == "Pod":
        return _pod(obj, now)
    printer = _PRINTERS.get(kind.kind)
    return (printer(obj, now) if printer else _default_row(obj)), None


def _row_object(kind: Kind, obj: Obj, include_object: str, api_version: str) -> Obj | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        out = dict(obj)
        out.setdefault("apiVersion", kind.api_version)
        out.setdefault("kind", kind.kind)
        return out
    return {"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": _md(obj)}


def table(kind_entry: Kind, objects: list[Obj], *, include_object: str = "Metadata",
          now: datetime | None = None, list_meta: Obj | None = None, no_headers: bool = False,
          api_version: str = TABLE_API_VERSION) -> Obj:
    """A `Table` of `objects` (one for a GET of a single object, all items for a LIST).

    include_object: the request's `includeObject` (None | Metadata | Object; "" means Metadata).
    list_meta: the table's metadata (a list's resourceVersion/continue/remainingItemCount, or
      {"resourceVersion": ...} of a single object).
    no_headers: TableOptions.noHeaders; columnDefinitions is then omitted (null), as upstream.
    api_version: meta.k8s.io/v1 or meta.k8s.io/v1beta1 (whichever the client negotiated).
    """
    include_object = include_object or "Metadata"
    if include_object not in INCLUDE_OBJECT_VALUES:
        raise ValueError(f"includeObject: unsupported value {include_object!r}")
    now = now or datetime.now(UTC)
    rows = []
    for obj in objects:
        cells, conditions = row_cells(kind_entry, obj, now)
        row: Obj = {"cells": cells}
        if conditions:
            row["conditions"] = [dict(c) for c in conditions]
        row["object"] = _row_object(kind_entry, obj, include_object, api_version)
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": dict(list_meta or {}),
        "columnDefinitions": None if no_headers else column_definitions(kind_entry),
        "rows": rows,
    }


def negotiate_table(accept_header: str | None) -> str | None:
    """The Table apiVersion the Accept header asks for ("meta.k8s.io/v1" or "meta.k8s.io/v1beta1"), or None.

    kubectl sends `application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;
    g=meta.k8s.io,application/json`; clauses are honoured in order, so a plain JSON clause listed first
    means "no table".
    """
    for clause in (accept_header or "").split(","):
        parts = [p.strip() for p in clause.split(";")]
        mime = parts[0].lower()
        if not mime:
            continue
        params = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        if params.get("q") is not None and params["q"].strip() in ("0", "0.0", "0.00", "0.000"):
            continue
        if params.get("as") == "Table":
            if params.get("g") == "meta.k8s.io" and params.get("v") in ("v1", "v1beta1") and \
                    mime in ("application/json", "application/yaml", "*/*", "application/*"):
                return f"meta.k8s.io/{params['v']}"
            continue
        if mime in ("application/json", "application/yaml", "application/*", "*/*",
                    "application/vnd.kubernetes.protobuf", "application/cbor"):
            return None
    return None
