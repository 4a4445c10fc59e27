"""Server-side printing: the `meta.k8s.io/v1` `Table` a kube-apiserver answers to `Accept: ...;as=Table`.

The table builder and the helpers kinds' printers share; a kind's columns and row function are a
`Printer` in the kind's own module (column sets and cell values follow upstream's
pkg/printers/internalversion/printers.go). As upstream's TableConvertor does, rows are always generated in
"wide" form (every column, priority 0 and 1); kubectl hides priority-1 columns unless `-o wide`. Cells keep
upstream's Go types: strings, ints, bools.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from dramock import timefmt
from dramock.schemas import defs

if TYPE_CHECKING:
    from dramock.registry.kind import Kind

Obj = dict[str, Any]
Row = list[Any]

TABLE_API_VERSION = "meta.k8s.io/v1"
INCLUDE_OBJECT_VALUES = ("None", "Metadata", "Object")


class Printer:
    """A kind's table: its column definitions (built on first use, from the 1.37 field documentation) and
    the cells of one object; `conditions` gives a row's conditions where upstream sets them."""

    def __init__(self, columns: Callable[[], list[Obj]], row: Callable[[Obj, datetime], Row],
                 conditions: Callable[[Obj], list[Obj] | None] | None = None):
        self._columns = columns
        self.row = row
        self.conditions = conditions

    @functools.cached_property
    def column_definitions(self) -> list[Obj]:
        return self._columns()


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


def since(value: Any, now: datetime) -> str:
    """printers.go translateTimestampSince: "<unknown>" for a zero timestamp."""
    t = parse_time(value)
    if t is None:
        return "<unknown>"
    return human_duration((now - t).total_seconds())


# ---------------------------------------------------------------------------------------------------
# Column definitions


def doc(definition: str, field: str) -> str:
    """The API documentation of a field (what upstream reads from the types' SwaggerDoc())."""
    prop = defs.field_schema(defs.definition(definition), field)
    return prop.get("description", "")


META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
CORE = "io.k8s.api.core.v1."
RES = "io.k8s.api.resource.v1."


def col(name: str, typ: str, description: str, *, fmt: str = "", priority: int = 0) -> Obj:
    return {"name": name, "type": typ, "format": fmt, "description": description, "priority": priority}


def name_col(priority: int = 0) -> Obj:
    return col("Name", "string", doc(META, "name"), fmt="name", priority=priority)


def age_col() -> Obj:
    return col("Age", "string", doc(META, "creationTimestamp"))


def _default_columns() -> list[Obj]:
    """rest.DefaultTableConvertor, for kinds without a printer."""
    return [name_col(), col("Created At", "date", doc(META, "creationTimestamp"))]


# ---------------------------------------------------------------------------------------------------
# Row helpers


def md(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def name(obj: Obj) -> str:
    return md(obj).get("name", "")


def age(obj: Obj, now: datetime) -> str:
    return since(md(obj).get("creationTimestamp"), now)


def get(obj: Any, *path: str, default: Any = None) -> Any:
    cur = obj
    for p in path:
        if not isinstance(cur, dict):
            return default
        cur = cur.get(p)
    return default if cur is None else cur


def later(current: datetime | None, candidate: Any) -> datetime | None:
    """The later of `current` and the timestamp `candidate`."""
    t = parse_time(candidate)
    if t is not None and (current is None or current < t):
        return t
    return current


def _default_row(obj: Obj) -> Row:
    t = parse_time(md(obj).get("creationTimestamp"))
    return [name(obj), timefmt.format_time(t) if t else None]


def column_definitions(kind: Kind) -> list[Obj]:
    cols = kind.printer.column_definitions if kind.printer is not None else _default_columns()
    return [dict(c) for c in cols]


def row_cells(kind: Kind, obj: Obj, now: datetime | None = None) -> tuple[Row, list[Obj] | None]:
    """The cells (and row conditions, e.g. of finished pods) of one object."""
    now = now or datetime.now(UTC)
    printer = kind.printer
    if printer is None:
        return _default_row(obj), None
    return printer.row(obj, now), printer.conditions(obj) if printer.conditions else None


def _row_object(kind: Kind, obj: Obj, include_object: str, api_version: str) -> Obj | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        out = dict(obj)
        out.setdefault("apiVersion", kind.api_version)
        out.setdefault("kind", kind.kind)
        return out
    return {"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": md(obj)}


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
