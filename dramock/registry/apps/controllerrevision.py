"""apps/v1 ControllerRevision (the DaemonSet and StatefulSet controllers' history)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dramock.registry.apps.common import APPS
from dramock.registry.kind import Kind
from dramock.registry.printing import Printer, Row, age, age_col, col, doc, name, name_col

Obj = dict[str, Any]


def _columns() -> list[Obj]:
    return [
        name_col(),
        col("Controller", "string", "Controller of the object"),
        col("Revision", "string", doc(APPS + "ControllerRevision", "revision")),
        age_col(),
    ]


def _row(o: Obj, now: datetime) -> Row:
    owner = next((r for r in o["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
    ctl = "<none>"
    if owner:
        group = owner.get("apiVersion", "").rpartition("/")[0]
        ctl = f"{owner.get('kind', '').lower()}.{group}/{owner.get('name')}" if group else \
            f"{owner.get('kind', '').lower()}/{owner.get('name')}"
    return [name(o), ctl, str(o.get("revision", 0)), age(o, now)]


PRINTER = Printer(_columns, _row)

KIND = Kind("apps", "v1", "ControllerRevision", "controllerrevisions", True, printer=PRINTER)
