"""Numeric limits of the CEL implementation: the upstream selector limits (expression length, cost), the
evaluation time budget, the parser's recursion limit, and the 64-bit integer ranges of CEL's int and uint."""

from __future__ import annotations

# Upstream resource.k8s.io/v1 constants.
MAX_EXPRESSION_LENGTH = 10 * 1024  # CELSelectorExpressionMaxLength
CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000  # CELSelectorExpressionMaxCost
DEFAULT_TIME_BUDGET = 2.0  # seconds of wall clock per evaluation (a second guard after the cost limit)
MAX_RECURSION_DEPTH = 250  # cel-go's default parser recursion limit


INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)
UINT64_MAX = (1 << 64) - 1


def fits_int64(v: int) -> bool:
    return INT64_MIN <= v <= INT64_MAX
