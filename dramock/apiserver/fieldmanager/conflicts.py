"""Apply conflicts: the exception that carries them and the 409 Conflict upstream answers for them."""

from __future__ import annotations

from dramock.errors import APIError

from .managed_fields import _Entry
from .paths import Path, path_string


class _Conflicts(Exception):
    def __init__(self, conflicts: list[tuple[_Entry, Path]]):
        super().__init__("conflicts")
        self.conflicts = conflicts


def _conflict_error(conflicts: list[tuple[_Entry, Path]]) -> APIError:
    """internal.NewConflictError: 409 Conflict with one FieldManagerConflict cause per field."""
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {e.describe()}",
               "field": path_string(p)} for e, p in conflicts]
    if len(conflicts) == 1:
        e, p = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {e.describe()}: {path_string(p)}"
    else:
        lines = []
        for ident in sorted({e.ident for e, _ in conflicts}):
            entry = next(e for e, _ in conflicts if e.ident == ident)
            lines.append(f"conflicts with {entry.describe()}:")
            lines.extend(f"- {path_string(p)}" for e, p in conflicts if e.ident == ident)
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return APIError(409, "Conflict", message, {"causes": causes})
