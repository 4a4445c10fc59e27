"""The function environment: every overload signature the checker resolves, by library (CEL standard,
cel-go strings and sets extensions, the Kubernetes lists, regex, quantity and semver libraries, optional
types, DRA), and the implementation each function name runs. The implementations live in the lib_*
modules (and dra.py for `includes`)."""

from __future__ import annotations

from collections.abc import Callable

from dramock.cel.dra import fn_includes
from dramock.cel.lib_comparable import fn_compare_to, fn_is_greater_than, fn_is_less_than
from dramock.cel.lib_lists import fn_is_sorted, fn_max, fn_min, fn_sum
from dramock.cel.lib_optional import (
    fn_has_value,
    fn_opt_none,
    fn_opt_of,
    fn_opt_of_non_zero,
    fn_or,
    fn_or_value,
    fn_value,
)
from dramock.cel.lib_quantity import (
    fn_add,
    fn_as_approximate_float,
    fn_as_integer,
    fn_div,
    fn_div_int,
    fn_is_integer,
    fn_is_quantity,
    fn_mul,
    fn_quantity,
    fn_sign,
    fn_sub,
)
from dramock.cel.lib_regex import fn_find, fn_find_all, fn_matches
from dramock.cel.lib_semver import fn_is_semver, fn_major, fn_minor, fn_patch, fn_semver
from dramock.cel.lib_sets import fn_sets_contains, fn_sets_equivalent, fn_sets_intersects
from dramock.cel.lib_standard import (
    fn_bool,
    fn_bytes,
    fn_contains,
    fn_double,
    fn_dyn,
    fn_ends_with,
    fn_int,
    fn_size,
    fn_starts_with,
    fn_string,
    fn_type,
    fn_uint,
)
from dramock.cel.lib_strings import (
    fn_char_at,
    fn_index_of,
    fn_join,
    fn_last_index_of,
    fn_lower_ascii,
    fn_quote,
    fn_replace,
    fn_split,
    fn_substring,
    fn_trim,
    fn_upper_ascii,
)
from dramock.cel.static_types import (
    BOOL,
    BYTES,
    DOUBLE,
    DYN,
    INT,
    PARAM_A,
    PARAM_B,
    QUANTITY,
    SEMVER,
    STRING,
    UINT,
    StaticType,
    list_of,
    map_of,
    optional_of,
    type_of,
)


class Overload:
    __slots__ = ("member", "params", "result")

    def __init__(self, member: bool, params: tuple, result: StaticType):
        self.member, self.params, self.result = member, params, result


FUNCTIONS: dict[str, list[Overload]] = {}


def _decl(name: str, how: str, *sigs: tuple) -> None:
    """how: "g" global, "m" member (receiver is the first parameter), "gm" both. sig: (*params, result)."""
    for sig in sigs:
        for member in ((False,) if how == "g" else (True,) if how == "m" else (False, True)):
            FUNCTIONS.setdefault(name, []).append(Overload(member, tuple(sig[:-1]), sig[-1]))


_NUMS = (INT, UINT, DOUBLE)
_decl("_+_", "g", (INT, INT, INT), (UINT, UINT, UINT), (DOUBLE, DOUBLE, DOUBLE), (STRING, STRING, STRING),
      (BYTES, BYTES, BYTES), (list_of(PARAM_A), list_of(PARAM_A), list_of(PARAM_A)))
for _op in ("_-_", "_*_", "_/_"):
    _decl(_op, "g", (INT, INT, INT), (UINT, UINT, UINT), (DOUBLE, DOUBLE, DOUBLE))
_decl("_%_", "g", (INT, INT, INT), (UINT, UINT, UINT))
_decl("-_", "g", (INT, INT), (DOUBLE, DOUBLE))
_decl("!_", "g", (BOOL, BOOL))
_decl("_==_", "g", (PARAM_A, PARAM_A, BOOL))
_decl("_!=_", "g", (PARAM_A, PARAM_A, BOOL))
for _op in ("_<_", "_<=_", "_>_", "_>=_"):
    _decl(_op, "g", (BOOL, BOOL, BOOL), (STRING, STRING, BOOL), (BYTES, BYTES, BOOL),
          *((a, b, BOOL) for a in _NUMS for b in _NUMS))
_decl("@in", "g", (PARAM_A, list_of(PARAM_A), BOOL), (PARAM_A, map_of(PARAM_A, PARAM_B), BOOL))
_decl("size", "gm", (STRING, INT), (BYTES, INT), (list_of(PARAM_A), INT), (map_of(PARAM_A, PARAM_B), INT))
for _f in ("contains", "startsWith", "endsWith"):
    _decl(_f, "m", (STRING, STRING, BOOL))
_decl("matches", "gm", (STRING, STRING, BOOL))
_decl("int", "g", (INT, INT), (UINT, INT), (DOUBLE, INT), (STRING, INT))
_decl("uint", "g", (INT, UINT), (UINT, UINT), (DOUBLE, UINT), (STRING, UINT))
_decl("double", "g", (INT, DOUBLE), (UINT, DOUBLE), (DOUBLE, DOUBLE), (STRING, DOUBLE))
_decl("string", "g", (INT, STRING), (UINT, STRING), (DOUBLE, STRING), (BOOL, STRING), (BYTES, STRING),
      (STRING, STRING))
_decl("bytes", "g", (STRING, BYTES), (BYTES, BYTES))
_decl("bool", "g", (BOOL, BOOL), (STRING, BOOL))
_decl("dyn", "g", (PARAM_A, DYN))
_decl("type", "g", (PARAM_A, type_of(PARAM_A)))
# strings extension (cel-go ext.Strings, version 2)
_decl("charAt", "m", (STRING, INT, STRING))
_decl("indexOf", "m", (STRING, STRING, INT), (STRING, STRING, INT, INT), (list_of(PARAM_A), PARAM_A, INT))
_decl("lastIndexOf", "m", (STRING, STRING, INT), (STRING, STRING, INT, INT), (list_of(PARAM_A), PARAM_A, INT))
_decl("lowerAscii", "m", (STRING, STRING))
_decl("upperAscii", "m", (STRING, STRING))
_decl("replace", "m", (STRING, STRING, STRING, STRING), (STRING, STRING, STRING, INT, STRING))
_decl("split", "m", (STRING, STRING, list_of(STRING)), (STRING, STRING, INT, list_of(STRING)))
_decl("substring", "m", (STRING, INT, STRING), (STRING, INT, INT, STRING))
_decl("trim", "m", (STRING, STRING))
_decl("join", "m", (list_of(STRING), STRING), (list_of(STRING), STRING, STRING))
_decl("strings.quote", "g", (STRING, STRING))
# Kubernetes lists library
_decl("isSorted", "m", (list_of(PARAM_A), BOOL))
_decl("sum", "m", (list_of(PARAM_A), PARAM_A))
_decl("min", "m", (list_of(PARAM_A), PARAM_A))
_decl("max", "m", (list_of(PARAM_A), PARAM_A))
# Kubernetes regex library
_decl("find", "m", (STRING, STRING, STRING))
_decl("findAll", "m", (STRING, STRING, list_of(STRING)), (STRING, STRING, INT, list_of(STRING)))
# cel-go ext.Sets
for _f in ("sets.contains", "sets.equivalent", "sets.intersects"):
    _decl(_f, "g", (list_of(PARAM_A), list_of(PARAM_A), BOOL))
# Kubernetes quantity library
_decl("quantity", "g", (STRING, QUANTITY))
_decl("isQuantity", "g", (STRING, BOOL))
_decl("sign", "gm", (QUANTITY, INT))
_decl("isGreaterThan", "m", (QUANTITY, QUANTITY, BOOL), (SEMVER, SEMVER, BOOL))
_decl("isLessThan", "m", (QUANTITY, QUANTITY, BOOL), (SEMVER, SEMVER, BOOL))
_decl("compareTo", "m", (QUANTITY, QUANTITY, INT), (SEMVER, SEMVER, INT))
_decl("asApproximateFloat", "m", (QUANTITY, DOUBLE))
_decl("asInteger", "m", (QUANTITY, INT))
_decl("isInteger", "m", (QUANTITY, BOOL))
_decl("add", "m", (QUANTITY, QUANTITY, QUANTITY), (QUANTITY, INT, QUANTITY))
_decl("sub", "m", (QUANTITY, QUANTITY, QUANTITY), (QUANTITY, INT, QUANTITY))
_decl("mul", "m", (QUANTITY, INT, QUANTITY))
_decl("div", "m", (QUANTITY, INT, QUANTITY), (QUANTITY, INT, INT, QUANTITY))
_decl("divInt", "m", (QUANTITY, INT, QUANTITY))
# Kubernetes semver library
_decl("semver", "g", (STRING, SEMVER), (STRING, BOOL, SEMVER))
_decl("isSemver", "g", (STRING, BOOL), (STRING, BOOL, BOOL))
for _f in ("major", "minor", "patch"):
    _decl(_f, "m", (SEMVER, INT))
# optional types
_decl("optional.of", "g", (PARAM_A, optional_of(PARAM_A)))
_decl("optional.ofNonZeroValue", "g", (PARAM_A, optional_of(PARAM_A)))
_decl("optional.none", "g", (optional_of(DYN),))
_decl("hasValue", "m", (optional_of(PARAM_A), BOOL))
_decl("value", "m", (optional_of(PARAM_A), PARAM_A))
_decl("orValue", "m", (optional_of(PARAM_A), PARAM_A, PARAM_A))
_decl("or", "m", (optional_of(PARAM_A), optional_of(PARAM_A), optional_of(PARAM_A)))
# DRAListTypeAttributes: includes() works for scalar and list-type attributes
_decl("includes", "m", (list_of(PARAM_A), PARAM_A, BOOL), (PARAM_A, PARAM_A, BOOL))

OPERATOR_NAMES = {"_+_", "_-_", "_*_", "_/_", "_%_", "-_", "!_", "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_",
                  "@in", "_&&_", "_||_", "_?_:_"}
FEATURE_GATED_FUNCTIONS = {"includes": "list_type_attributes"}


IMPLEMENTATIONS: dict[str, Callable] = {
    "size": fn_size, "contains": fn_contains, "startsWith": fn_starts_with, "endsWith": fn_ends_with,
    "matches": fn_matches, "int": fn_int, "uint": fn_uint, "double": fn_double, "string": fn_string,
    "bytes": fn_bytes, "bool": fn_bool, "dyn": fn_dyn, "type": fn_type,
    "charAt": fn_char_at, "indexOf": fn_index_of, "lastIndexOf": fn_last_index_of,
    "lowerAscii": fn_lower_ascii, "upperAscii": fn_upper_ascii, "replace": fn_replace, "split": fn_split,
    "substring": fn_substring, "trim": fn_trim, "join": fn_join, "strings.quote": fn_quote,
    "isSorted": fn_is_sorted, "sum": fn_sum, "min": fn_min, "max": fn_max,
    "find": fn_find, "findAll": fn_find_all,
    "sets.contains": fn_sets_contains, "sets.equivalent": fn_sets_equivalent,
    "sets.intersects": fn_sets_intersects,
    "quantity": fn_quantity, "isQuantity": fn_is_quantity, "sign": fn_sign,
    "isGreaterThan": fn_is_greater_than, "isLessThan": fn_is_less_than, "compareTo": fn_compare_to,
    "asApproximateFloat": fn_as_approximate_float, "asInteger": fn_as_integer, "isInteger": fn_is_integer,
    "add": fn_add, "sub": fn_sub, "mul": fn_mul, "div": fn_div, "divInt": fn_div_int,
    "semver": fn_semver, "isSemver": fn_is_semver, "major": fn_major, "minor": fn_minor, "patch": fn_patch,
    "optional.of": fn_opt_of, "optional.ofNonZeroValue": fn_opt_of_non_zero, "optional.none": fn_opt_none,
    "hasValue": fn_has_value, "value": fn_value, "orValue": fn_or_value, "or": fn_or,
    "includes": fn_includes,
}
# Functions whose result is the same for the same constant arguments (folded at compile time).
FOLDABLE_FUNCTIONS = frozenset({"quantity", "semver", "isQuantity", "isSemver", "int", "uint", "double", "string",
                                "bytes", "bool", "size", "lowerAscii", "upperAscii", "trim"})
