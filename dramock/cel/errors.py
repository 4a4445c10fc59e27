"""CEL errors: the exception classes (compile, runtime, cost exceeded), their fixed messages, and the text
formatting cel-go uses in them (compile issues with a source snippet, Go-quoted strings)."""

from __future__ import annotations


class CELError(Exception):
    """Base of every CEL error; `.message` is the upstream-like text."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class CELCompileError(CELError):
    """The expression does not compile (syntax, type check, result type). Validation: field.Invalid."""


class CELRuntimeError(CELError):
    """Evaluation failed (missing attribute, bad operand...). As upstream, the allocator fails the allocation."""


class CELCostExceeded(CELCompileError, CELRuntimeError):
    """Estimated cost above the limit at compile time ("too complex, exceeds cost limit": field.Forbidden
    upstream) or actual cost / time budget exhausted during evaluation."""

    def __init__(self, message: str, cost: int | None = None):
        super().__init__(message)
        self.cost = cost


COST_LIMIT_MESSAGE = "too complex, exceeds cost limit"
ACTUAL_COST_MESSAGE = "operation cancelled: actual cost limit exceeded"


def go_quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _line_col(src: str, pos: int) -> tuple[int, int]:
    line = src.count("\n", 0, pos) + 1
    col = pos - (src.rfind("\n", 0, pos) + 1) + 1
    return line, col


def format_issues(src: str, issues: list[tuple[int, str]]) -> str:
    """cel-go's Issues.String(): one "ERROR: <input>:L:C: msg" block per issue with the source snippet."""
    lines = src.split("\n")
    out = []
    seen = set()
    for pos, msg in sorted(issues, key=lambda i: i[0]):
        if (pos, msg) in seen:
            continue
        seen.add((pos, msg))
        line, col = _line_col(src, min(pos, len(src)))
        text = lines[line - 1] if line - 1 < len(lines) else ""
        out.append(f"ERROR: <input>:{line}:{col}: {msg}\n | {text}\n | {'.' * (col - 1)}^")
    return "\n".join(out)
