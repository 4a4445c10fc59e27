"""Event, served as core/v1 and as events.k8s.io/v1 and stored once in the core shape (see
schemas/convert.py): both entries, their field selectors and their table."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dramock.registry.kind import Kind, selectable
from dramock.registry.printing import CORE, Printer, Row, col, doc, name, name_col, parse_time, since

Obj = dict[str, Any]

_FIELDS = {
    "involvedObject.kind": selectable("involvedObject", "kind"),
    "involvedObject.namespace": selectable("involvedObject", "namespace"),
    "involvedObject.name": selectable("involvedObject", "name"),
    "involvedObject.uid": selectable("involvedObject", "uid"),
    "involvedObject.apiVersion": selectable("involvedObject", "apiVersion"),
    "involvedObject.resourceVersion": selectable("involvedObject", "resourceVersion"),
    "involvedObject.fieldPath": selectable("involvedObject", "fieldPath"),
    "reason": selectable("reason"),
    "reportingComponent": selectable("reportingComponent"),
    "source": selectable("source", "component"),
    "type": selectable("type"),
}

# events.k8s.io/v1 selects on its own names (regarding.*, reportingController), converted to the stored
# core shape as upstream's AddFieldLabelConversionsForEvent does; the core names are not accepted there.
_V1_FIELDS = {
    **{f"regarding.{f}": _FIELDS[f"involvedObject.{f}"]
       for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")},
    "reason": _FIELDS["reason"],
    "reportingController": _FIELDS["reportingComponent"],
    "type": _FIELDS["type"],
}


def _columns() -> list[Obj]:
    ev = CORE + "Event"
    return [
        col("Last Seen", "string", doc(ev, "lastTimestamp")),
        col("Type", "string", doc(ev, "type")),
        col("Reason", "string", doc(ev, "reason")),
        col("Object", "string", doc(ev, "involvedObject")),
        col("Subobject", "string", doc(CORE + "ObjectReference", "fieldPath"), priority=1),
        col("Source", "string", doc(ev, "source"), priority=1),
        col("Message", "string", doc(ev, "message")),
        col("First Seen", "string", doc(ev, "firstTimestamp"), priority=1),
        col("Count", "string", doc(ev, "count"), priority=1),
        name_col(priority=1),
    ]


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


def _row(obj: Obj, now: datetime) -> Row:
    ev = _core_event(obj)
    first = since(ev.get("firstTimestamp"), now)
    if parse_time(ev.get("firstTimestamp")) is None:
        first = since(ev.get("eventTime"), now)
    last = since(ev.get("lastTimestamp"), now)
    if parse_time(ev.get("lastTimestamp")) is None:
        last = first
    count = int(ev.get("count") or 0)
    series = ev.get("series")
    if series:
        last = since(series.get("lastObservedTime"), now)
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
            (ev.get("message") or "").strip(), first, count, name(obj)]


PRINTER = Printer(_columns, _row)

CORE_KIND = Kind("", "v1", "Event", "events", True, short_names=("ev",), selectable_fields=_FIELDS,
                 printer=PRINTER, bucket="events")
# Stored once in the core shape (see schemas/convert.py).
EVENTS_KIND = Kind("events.k8s.io", "v1", "Event", "events", True, short_names=("ev",),
                   selectable_fields=_V1_FIELDS, printer=PRINTER, bucket="events", stored_as=("", "v1", "Event"))
