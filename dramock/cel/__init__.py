"""CEL for Dynamic Resource Allocation: the one CEL implementation of dramock.

Used by API validation (compile checks of `DeviceSelector.cel.expression` on create/update) and by the
scheduler's allocator (evaluation per device). The behaviour follows upstream Kubernetes
`k8s.io/dynamic-resource-allocation/cel` (compile.go) and the Kubernetes CEL libraries (quantity, semver,
lists, regex, strings/ext, sets, optional types, two-variable comprehensions, `cel.bind`).

The pipeline is self-contained: a CEL lexer and recursive-descent parser (macros expanded at parse time,
as cel-go does), a static type checker over the DRA environment (the `device` variable), a worst-case
cost estimator (as `cel.EstimateCost` with the DRA size limits) and a compiler that turns the checked AST
into Python closures. Runtime cost is tracked in every comprehension iteration and in every operation
whose cost grows with its input (string/list concatenation, replace, join, regexes...), and evaluation
also has a wall-clock budget, so pathological expressions are cut off (`CELCostExceeded`) instead of
hanging the scheduler.

Why not celpy's runners: cel-python 0.5 has no type checker (no upstream-like compile errors), no
cost tracking, no `cel.bind`, no optional types, `has()` that swallows every error, and its
`CompiledRunner` (~40 µs per call) is several times slower than these closures; see bench/cel.py.

The package, one concept per module; a module imports only its own layer and the layers above (no cycles):

    foundations  limits (numeric limits), errors, nodes (the AST), static_types (checker types),
                 semver (the Semver value), values (runtime values and CEL equality),
                 activation (the per-evaluation cost/deadline/variable slots)
    front end    lexer -> parser (source to AST, macros expanded)
    runtime      operators (arithmetic, ordering, indexing, selection at run time)
    libraries    lib_standard, lib_strings, lib_lists, lib_sets, lib_regex, lib_quantity, lib_semver,
                 lib_comparable, lib_optional; dra (the DRA environment: the `device` variable, size
                 limits, feature options, includes(), device_env)
    functions    every overload signature and the implementation each function name runs
    passes       checker (static types), cost (worst-case estimate), compiler + comprehensions (closures)
    entry        program (compile, CompiledExpression, the caches); this file re-exports its public API

Public API:

    compile(expression, *, cost_limit=CEL_SELECTOR_EXPRESSION_MAX_COST, list_type_attributes=True,
            consumable_capacity=True, derived_attribute=False) -> CompiledExpression
        cached per expression + options; raises CELCompileError, or CELCostExceeded when the worst-case
        estimate exceeds cost_limit (None: no check, for stored expressions)
    CompiledExpression.evaluate(device, *, cost_limit=..., time_budget=...) -> bool
        raises CELRuntimeError (e.g. "no such key: model") or CELCostExceeded; .max_cost, .output_type
    CompiledExpression.evaluate_value(device) -> Any        the raw CEL value (derived attributes)
    CompiledExpression.evaluate_cached(device_key, device) -> bool
    evaluate_cached(expression_or_compiled, device_key, device) -> bool
    device_env(driver, resource_slice_device) -> DeviceEnv    (v1 wire shape -> evaluation input)
    estimate_cost(expression) -> int,  clear_caches()
    Semver.parse(s, normalize=False) -> Semver
    (kubernetes.Quantity values are dramock.schemas.quantity.Quantity)
    MAX_EXPRESSION_LENGTH (10 Ki), CEL_SELECTOR_EXPRESSION_MAX_COST (1,000,000)
"""

from __future__ import annotations

from dramock.cel.dra import device_env
from dramock.cel.errors import CELCompileError, CELCostExceeded, CELError, CELRuntimeError
from dramock.cel.limits import CEL_SELECTOR_EXPRESSION_MAX_COST, DEFAULT_TIME_BUDGET, MAX_EXPRESSION_LENGTH
from dramock.cel.program import CompiledExpression, clear_caches, compile, estimate_cost, evaluate_cached
from dramock.cel.semver import Semver
from dramock.cel.values import CelOptional, CelType, DeviceEnv, UInt

__all__ = [
    "CEL_SELECTOR_EXPRESSION_MAX_COST",
    "DEFAULT_TIME_BUDGET",
    "MAX_EXPRESSION_LENGTH",
    "CELCompileError",
    "CELCostExceeded",
    "CELError",
    "CELRuntimeError",
    "CelOptional",
    "CelType",
    "CompiledExpression",
    "DeviceEnv",
    "Semver",
    "UInt",
    "clear_caches",
    "compile",
    "device_env",
    "estimate_cost",
    "evaluate_cached",
]
