"""Compiled expressions and the entry points: compile() (parse, check, estimate, compile; cached per
expression and options), CompiledExpression evaluation under the cost limit and the time budget, the
per-device result cache, estimate_cost() and clear_caches()."""

from __future__ import annotations

import contextlib
import copy
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

from dramock.cel.activation import CHECK_EVERY, FIRST_VARIABLE_SLOT, Closure
from dramock.cel.checker import Checker
from dramock.cel.compiler import Compiler
from dramock.cel.cost import CostEstimator
from dramock.cel.dra import QUANTITY_MEMO, SEMVER_MEMO, EnvOptions, as_device_env, check_output_type
from dramock.cel.errors import (
    ACTUAL_COST_MESSAGE,
    COST_LIMIT_MESSAGE,
    CELCompileError,
    CELCostExceeded,
    CELRuntimeError,
    format_issues,
)
from dramock.cel.lexer import SyntaxIssue
from dramock.cel.limits import CEL_SELECTOR_EXPRESSION_MAX_COST, DEFAULT_TIME_BUDGET, INT64_MAX
from dramock.cel.parser import Parser
from dramock.cel.values import DeviceEnv, type_name
from dramock.memo import remember

_DEEP_EXPRESSION = 150  # closure nesting depth above which evaluation raises the recursion limit


@contextlib.contextmanager
def _recursion_headroom(frames: int) -> Iterator[None]:
    """Temporarily allow `frames` more Python frames (pure-Python recursion: CPython 3.11+ does not use
    the C stack for it). Only compiling, and evaluating unusually deep expressions, need this."""
    old = sys.getrecursionlimit()
    if frames + 1000 <= old:
        yield
        return
    sys.setrecursionlimit(frames + 1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def estimate_cost(expression: str) -> int:
    """Worst-case cost estimate of an expression (compiles it without enforcing the limit)."""
    return compile(expression, cost_limit=None).max_cost


class CompiledExpression:
    """A checked, compiled CEL selector expression.

    `max_cost` is the worst-case cost estimate (compare it with CEL_SELECTOR_EXPRESSION_MAX_COST);
    `output_type` the static result type ("bool" or "dyn")."""

    __slots__ = ("_depth", "_dynamic", "_fn", "_results", "_tail", "expression", "key", "max_cost", "output_type")

    def __init__(self, expression: str, fn: Closure, max_cost: int, nslots: int, dynamic: bool,
                 output_type: str, key: tuple, depth: int = 0):
        self.expression = expression
        self.max_cost = max_cost
        self.output_type = output_type
        self.key = key
        self._fn = fn
        self._tail = [None] * (nslots - FIRST_VARIABLE_SLOT)
        self._dynamic = dynamic
        self._depth = depth
        self._results: dict[Any, Any] = {}  # evaluate_cached: device key -> bool or error message

    def __repr__(self) -> str:
        return f"CompiledExpression({self.expression!r}, max_cost={self.max_cost})"

    def evaluate_value(self, device: Mapping[str, Any], *, cost_limit: int | None = CEL_SELECTOR_EXPRESSION_MAX_COST,
                       time_budget: float | None = DEFAULT_TIME_BUDGET) -> Any:
        """Evaluate and return the raw CEL value (bool, int, str, list, dict, Quantity, Semver...)."""
        env = device if type(device) is DeviceEnv else as_device_env(device)
        limit = INT64_MAX if cost_limit is None else cost_limit
        deadline = time.perf_counter() + time_budget if self._dynamic and time_budget is not None else None
        s = [0, min(limit, CHECK_EVERY), limit, deadline, env]
        if self._tail:
            s += self._tail
        try:
            if self._depth > _DEEP_EXPRESSION:
                with _recursion_headroom(4 * self._depth):
                    r = self._fn(s)
            else:
                r = self._fn(s)
            if type(r) is list or isinstance(r, dict):
                r = copy.deepcopy(r)  # constants and device values are shared between evaluations
            return r
        except CELRuntimeError:
            raise
        except RecursionError:
            raise CELRuntimeError("expression recursion limit exceeded during evaluation") from None
        except MemoryError:
            raise CELCostExceeded("operation cancelled: out of memory") from None
        except Exception as e:  # a bug or a malformed device; never let it escape as something else
            raise CELRuntimeError(f"internal evaluation error: {type(e).__name__}: {e}") from e

    def evaluate(self, device: Mapping[str, Any], *, cost_limit: int | None = CEL_SELECTOR_EXPRESSION_MAX_COST,
                 time_budget: float | None = DEFAULT_TIME_BUDGET) -> bool:
        """Does the device match? `device` is a DeviceEnv (see device_env) or a plain mapping
        {"driver", "attributes": {domain: {name: value}}, "capacity": {domain: {name: Quantity}},
        "allowMultipleAllocations"}. Raises CELRuntimeError (e.g. "no such key: model") or CELCostExceeded."""
        r = self.evaluate_value(device, cost_limit=cost_limit, time_budget=time_budget)
        if r is True or r is False:
            return r
        t = type_name(r)
        raise CELRuntimeError(f"CEL result of type {t} could not be converted to bool: "
                              f"type conversion error from '{t}' to 'bool'")

    def evaluate_cached(self, device_key: Any, device: Mapping[str, Any]) -> bool:
        """evaluate() memoized per (expression, device_key); device_key must change when the device does
        (e.g. (slice uid, slice resourceVersion, device name))."""
        return _evaluate_cached(self, device_key, device)


_COMPILED: dict[tuple, CompiledExpression | tuple[type, str]] = {}
_COMPILED_MAX = 4096
_EVALUATED_MAX = 1 << 16  # cached results per compiled expression
_cache_lock = threading.Lock()


def compile(expression: str, *, cost_limit: int | None = CEL_SELECTOR_EXPRESSION_MAX_COST,
            list_type_attributes: bool = True, consumable_capacity: bool = True,
            derived_attribute: bool = False) -> CompiledExpression:
    """Parse, type-check, cost-estimate and compile a DRA CEL selector expression (cached).

    Raises CELCompileError with upstream-like text ("compilation failed: ERROR: <input>:1:5: ...",
    "must evaluate to bool or the unknown type, not int"), or CELCostExceeded("too complex, exceeds cost
    limit") when the worst-case estimate is above `cost_limit` (pass None for stored expressions, which
    upstream does not re-check). `list_type_attributes` (DRAListTypeAttributes: includes()) and
    `consumable_capacity` (DRAConsumableCapacity: device.allowMultipleAllocations) select the
    environment; stored expressions use both. `derived_attribute` (DRADerivedAttributes) compiles an
    attribute-deriving expression instead of a selector: it must evaluate to a string, int, bool or semver
    (or a list of them with list-type attributes); use evaluate_value() for it.
    """
    key = (expression, bool(list_type_attributes), bool(consumable_capacity), bool(derived_attribute))
    hit = _COMPILED.get(key)
    if hit is None:
        try:
            frames = min(8 * len(expression) + 3000, 100_000) if isinstance(expression, str) else 0
            with _recursion_headroom(frames):
                opts = EnvOptions(bool(list_type_attributes), bool(consumable_capacity), bool(derived_attribute))
                hit = _compile(expression, opts, key)
        except CELCompileError as e:
            hit = (type(e), e.message)
        remember(_COMPILED, key, hit, _COMPILED_MAX)
    if type(hit) is tuple:
        raise hit[0](hit[1])
    assert isinstance(hit, CompiledExpression)
    if cost_limit is not None and hit.max_cost > cost_limit:
        raise CELCostExceeded(COST_LIMIT_MESSAGE, hit.max_cost)
    return hit


def _compile(expression: str, opts: EnvOptions, key: tuple) -> CompiledExpression:
    if not isinstance(expression, str):
        raise CELCompileError("compilation failed: expression must be a string")
    try:
        ast = Parser(expression).parse()
        checker = Checker(opts)
        t = checker.check(ast)
        if checker.issues:
            raise CELCompileError("compilation failed: " + format_issues(expression, checker.issues))
        check_output_type(t, opts)
        cost = CostEstimator().est(ast)[0]
        comp = Compiler()
        fn = comp.c(ast)
    except SyntaxIssue as e:
        raise CELCompileError("compilation failed: " + format_issues(expression, [(e.pos, e.message)])) from None
    except RecursionError:  # pragma: no cover - only for expressions far beyond the length limit
        raise CELCompileError("compilation failed: expression recursion limit exceeded") from None
    return CompiledExpression(expression, fn, cost, comp.nslots, comp.dynamic, str(t), key, comp.max_depth)


def _evaluate_cached(ce: CompiledExpression, device_key: Any, device: Mapping[str, Any]) -> bool:
    results = ce._results
    hit = results.get(device_key)
    if hit is not None:
        if hit is True or hit is False:
            return hit
        if type(hit) is tuple:
            raise CELCostExceeded(*hit)
        raise CELRuntimeError(hit)
    if len(results) >= _EVALUATED_MAX:
        results.clear()
    try:
        r = ce.evaluate(device)
    except CELCostExceeded as e:
        if e.message == ACTUAL_COST_MESSAGE:  # deterministic; a time budget running out is not
            results[device_key] = (e.message, e.cost)
        raise
    except CELRuntimeError as e:
        results[device_key] = e.message
        raise
    results[device_key] = r
    return r


def evaluate_cached(expression: str | CompiledExpression, device_key: Any, device: Mapping[str, Any]) -> bool:
    """Evaluate a selector against a device, memoized per (expression, device_key). A string expression is
    compiled without the estimated-cost check (stored expressions are not re-validated upstream; the
    runtime cost limit still applies). Errors (CELRuntimeError) are memoized too."""
    ce = expression if isinstance(expression, CompiledExpression) else compile(expression, cost_limit=None)
    return _evaluate_cached(ce, device_key, device)


def clear_caches() -> None:
    """Drop the compile and evaluation caches."""
    with _cache_lock:
        for ce in _COMPILED.values():
            if isinstance(ce, CompiledExpression):
                ce._results.clear()
        _COMPILED.clear()
        SEMVER_MEMO.clear()
        QUANTITY_MEMO.clear()
