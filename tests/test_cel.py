"""Tests of dramock.cel: compile errors, evaluation semantics, semvers, costs (the quantity type
itself: tests/test_quantity.py)."""

from __future__ import annotations

import time

import pytest

from dramock import cel
from dramock.cel import (
    CEL_SELECTOR_EXPRESSION_MAX_COST,
    MAX_EXPRESSION_LENGTH,
    CELCompileError,
    CELCostExceeded,
    CELRuntimeError,
    Semver,
    compile,
    device_env,
    evaluate_cached,
    lib_regex,
)
from dramock.schemas.quantity import Quantity

DRIVER = "dra.example.com"


def _device(**overrides):
    wire = {
        "name": "gpu-0",
        "attributes": {
            "model": {"string": "a100"},
            "cores": {"int": 108},
            "mig": {"bool": True},
            "ecc": {"bool": False},
            "driverVersion": {"version": "1.2.3-rc.1"},
            "runtime": {"version": "12.4.0"},
            "other.example.com/family": {"string": "ampere"},
            "other.example.com/index": {"int": 3},
            "names": {"strings": ["fish", "bird"]},
            "sizes": {"ints": [1, 2, 4]},
        },
        "capacity": {
            "memory": {"value": "40Gi"},
            "cpus": {"value": "1500m"},
            "other.example.com/slots": {"value": "4"},
        },
        "allowMultipleAllocations": True,
    }
    wire.update(overrides)
    return device_env(DRIVER, wire)


DEV = _device()


def ev(expr: str, device=None, **kw) -> bool:
    return compile(expr, **kw).evaluate(DEV if device is None else device)


# ============================================================================ the specs' selectors

# The kinds of selector expressions the DRA specification texts (KEP-4381, KEP-5004, KEP-5075, KEP-5963, the
# kubernetes.io DRA page) write, restated against DEV: (what it shows, expression, its value on DEV or None when
# it names attributes DEV does not have and only has to compile).
SPEC_EXPRESSIONS = [
    ("driver and attribute", "device.driver == 'dra.example.com' && device.attributes['dra.example.com'].model == "
                             "'a100'", True),
    ("driver only, double quotes", 'device.driver == "fpga.vendor.example"', False),
    ("driver only, single quotes", "device.driver == 'dra.example.com'", True),
    ("multi-line &&", 'device.attributes["dra.example.com"].model == "a100" &&\n'
                      'device.attributes["dra.example.com"].cores >= 100', True),
    ("quantity attribute isGreaterThan", 'device.attributes["fpga.vendor.example"].luts.isGreaterThan('
                                         'quantity("500k"))', None),
    ("capacity isGreaterThan", 'device.capacity["dra.example.com"].memory.isGreaterThan(quantity("32G"))', True),
    ("capacity isGreaterThan, false", 'device.capacity["dra.example.com"].cpus.isGreaterThan(quantity("2"))', False),
    ("capacity compareTo", "device.capacity['dra.example.com'].memory.compareTo(quantity('40Gi')) >= 0", True),
    ("cel.bind", 'cel.bind(acc, device.attributes["dra.example.com"], acc.mig && !acc.ecc)', True),
    ("allowMultipleAllocations", "device.allowMultipleAllocations == true", True),
    ("unqualified attribute .string", "device.attributes['profile'].string == 'quarter'", None),
]


@pytest.mark.parametrize("what,expr,value", SPEC_EXPRESSIONS, ids=[w for w, _, _ in SPEC_EXPRESSIONS])
def test_spec_expression_compiles(what, expr, value):
    ce = compile(expr)
    assert ce.output_type in ("bool", "dyn")
    assert ce.max_cost <= CEL_SELECTOR_EXPRESSION_MAX_COST
    if value is not None:
        assert ce.evaluate(DEV) is value


@pytest.mark.parametrize("expr", [
    # the CELDeviceSelector documentation and KEP examples
    'device.attributes["dra.example.com"].model == "a100"',
    'device.attributes["ext.example.com"].family == "x"',
    'device.capacity["dra.example.com"].modules.isGreaterThan(quantity("1"))',
    'device.attributes["dra.example.com"].model',
    'cel.bind(dra, device.attributes["dra.example.com"], dra.someBool && dra.anotherBool)',
    "device.capacity['test-driver.cdi.k8s.io'].counters.compareTo(quantity('2')) >= 0",
    "device.allowMultipleAllocations == false",
    "device.attributes['type'].string == 'mig-1g'",
    ('device.attributes["resource-driver.example.com"].color == "black" &&\n'
     '  device.attributes["resource-driver.example.com"].size == "large"'),
])
def test_documented_expressions_compile(expr):
    compile(expr)


# ============================================================================ compile errors

MALFORMED = [
    ("?!", "Syntax error: mismatched input '?'"),
    ("", "Syntax error: mismatched input '<EOF>'"),
    ("device.", "Syntax error: mismatched input '<EOF>' expecting IDENTIFIER"),
    ("(1 + ", "Syntax error"),
    ("device.driver == ", "Syntax error"),
    ('device.driver == "gpu', "token recognition error"),
    ("device.driver = 'x'", "token recognition error at: '='"),
    ("device.driver == 'x' device", "mismatched input 'device' expecting <EOF>"),
    ("1 +* 2", "Syntax error"),
    ("quantity('1Gi'", "missing ')' at '<EOF>'"),
    ("if == 1", "reserved identifier: if"),
    ("device.attributes['x'].y == 9223372036854775808", "invalid int literal"),
    ("1", "must evaluate to bool or the unknown type, not int"),
    ("device.driver", "must evaluate to bool or the unknown type, not string"),
    ('device.capacity["x"].memory', "not kubernetes.Quantity"),
    ("[true]", "not list(bool)"),
    ("device.foo", "undefined field 'foo'"),
    ("foo == 1", "undeclared reference to 'foo' (in container '')"),
    ('device.attributes["x"].y.lowerAsci() == "a"', "undeclared reference to 'lowerAsci'"),
    ("nosuchfunction(1)", "undeclared reference to 'nosuchfunction'"),
    ("device.driver == 1", "found no matching overload for '_==_' applied to '(string, int)'"),
    ("quantity(1).sign() > 0", "found no matching overload for 'quantity' applied to '(int)'"),
    ('device.capacity["x"].memory > 1',
     "found no matching overload for '_>_' applied to '(kubernetes.Quantity, int)'"),
    ('device.capacity["x"].memory.isGreaterThan(semver("1.0.0"))',
     "found no matching overload for 'isGreaterThan' applied to 'kubernetes.Quantity.(kubernetes.Semver)'"),
    ("device.driver.startsWith(1)", "found no matching overload for 'startsWith' applied to 'string.(int)'"),
    ("!device.driver", "found no matching overload for '!_' applied to '(string)'"),
    ("true && 1", "found no matching overload for '_&&_' applied to '(bool, int)'"),
    ("1 ? true : false", "found no matching overload for '_?_:_' applied to '(int, bool, bool)'"),
    ("1 == 1.0", "found no matching overload for '_==_' applied to '(int, double)'"),
    ('[1, "a"].size() > 0', "expected type 'int' but found 'string'"),
    ("cel.bind(1, 2, true)", "cel.bind() variable names must be simple identifiers"),
    ("[1, 2].all(1, true)", "argument must be a simple name"),
    ("has(device)", "invalid argument to has() macro"),
    ("device.driver.all(x, true)", "expression of type 'string' cannot be range of a comprehension"),
    ("[1, 2].all(x, x)", "found no matching overload for '_&&_' applied to '(bool, int)'"),
    ('device.attributes["x"].y.matches("(")', "invalid matches argument"),
    ("device.driver.size", "type 'string' does not support field selection"),
    ("Foo{a: 1} == 1", "undeclared reference to 'Foo'"),
    ("(" * 300 + "true" + ")" * 300, "expression recursion limit exceeded: 250"),
    ("x.all(y, true)", "undeclared reference to 'x'"),
    ('semver("1.0.0") < semver("2.0.0")',
     "found no matching overload for '_<_' applied to '(kubernetes.Semver, kubernetes.Semver)'"),
]


@pytest.mark.parametrize("expr,message", MALFORMED, ids=[m[0][:40] for m in MALFORMED])
def test_malformed_expression_fails_to_compile(expr, message):
    with pytest.raises(CELCompileError) as exc:
        compile(expr)
    assert message in exc.value.message
    assert not isinstance(exc.value, CELCostExceeded)


def test_compile_error_shape_matches_upstream():
    with pytest.raises(CELCompileError) as exc:
        compile("device.driver == 'a' && device.nope")
    assert exc.value.message == (
        "compilation failed: ERROR: <input>:1:31: undefined field 'nope'\n"
        " | device.driver == 'a' && device.nope\n"
        " | ..............................^")
    with pytest.raises(CELCompileError) as exc:
        compile("1 +")
    assert exc.value.message.startswith("compilation failed: ERROR: <input>:1:4: Syntax error: ")
    # multi-line expressions report the line
    with pytest.raises(CELCompileError) as exc:
        compile("device.driver == 'a' &&\n  device.nope")
    assert "ERROR: <input>:2:9: undefined field 'nope'\n |   device.nope\n | ........^" in exc.value.message


def test_all_errors_are_reported():
    with pytest.raises(CELCompileError) as exc:
        compile("foo == 1 && device.bar")
    assert "undeclared reference to 'foo'" in exc.value.message
    assert "undefined field 'bar'" in exc.value.message


def test_feature_gated_environment():
    compile("device.allowMultipleAllocations", consumable_capacity=True)
    with pytest.raises(CELCompileError, match="undefined field 'allowMultipleAllocations'"):
        compile("device.allowMultipleAllocations", consumable_capacity=False)
    compile('device.attributes["x"].y.includes("a")', list_type_attributes=True)
    with pytest.raises(CELCompileError, match="undeclared reference to 'includes'"):
        compile('device.attributes["x"].y.includes("a")', list_type_attributes=False)


def test_compile_is_cached_and_errors_too():
    a = compile('device.driver == "x"')
    assert compile('device.driver == "x"') is a
    for _ in range(2):
        with pytest.raises(CELCompileError, match="undefined field"):
            compile("device.nope")


def test_max_expression_length_constant():
    assert MAX_EXPRESSION_LENGTH == 10 * 1024


# ============================================================================ evaluation


@pytest.mark.parametrize("expr,expected", [
    ('device.driver == "dra.example.com"', True),
    ('device.driver == "other.example.com"', False),
    ('device.driver.startsWith("dra.") && device.driver.endsWith(".com")', True),
    # string attributes
    ('device.attributes["dra.example.com"].model == "a100"', True),
    ('device.attributes["dra.example.com"].model != "a100"', False),
    ('device.attributes["dra.example.com"]["model"] == "h100"', False),
    ('device.attributes["dra.example.com"].model in ["a100", "h100"]', True),
    ('device.attributes["dra.example.com"].model.matches("^a[0-9]+$")', True),
    ('device.attributes["other.example.com"].family == "ampere"', True),
    # int attributes
    ('device.attributes["dra.example.com"].cores == 108', True),
    ('device.attributes["dra.example.com"].cores > 100', True),
    ('device.attributes["dra.example.com"].cores >= 109', False),
    ('device.attributes["dra.example.com"].cores < 108.5', True),
    ('device.attributes["dra.example.com"].cores == 108.0', True),  # runtime numeric equality across types
    ('device.attributes["dra.example.com"].cores == "108"', False),  # heterogeneous: unequal, not an error
    ('device.attributes["other.example.com"].index % 2 == 1', True),
    # bool attributes
    ('device.attributes["dra.example.com"].mig', True),
    ('device.attributes["dra.example.com"].ecc', False),
    ('!device.attributes["dra.example.com"].ecc', True),
    ('device.attributes["dra.example.com"].mig == true', True),
    ('device.attributes["dra.example.com"].mig == 1', False),  # bool is not a number
    # version attributes
    ('device.attributes["dra.example.com"].driverVersion.isLessThan(semver("1.2.3"))', True),
    ('device.attributes["dra.example.com"].runtime.isGreaterThan(semver("12.3.99"))', True),
    ('device.attributes["dra.example.com"].runtime == semver("12.4.0")', True),
    ('device.attributes["dra.example.com"].runtime.compareTo(semver("12.4.0")) == 0', True),
    (('device.attributes["dra.example.com"].runtime.major() == 12 && '
      'device.attributes["dra.example.com"].runtime.minor() == 4'), True),
    # capacity
    ('device.capacity["dra.example.com"].memory.isGreaterThan(quantity("32Gi"))', True),
    ('device.capacity["dra.example.com"].memory.isLessThan(quantity("32Gi"))', False),
    ('device.capacity["dra.example.com"].memory.compareTo(quantity("40Gi")) == 0', True),
    ('device.capacity["dra.example.com"].memory == quantity("40960Mi")', True),
    ('device.capacity["dra.example.com"].memory.compareTo(quantity("42949672960")) == 0', True),
    ('device.capacity["dra.example.com"].cpus.compareTo(quantity("1.5")) == 0', True),
    ('device.capacity["other.example.com"].slots.asInteger() == 4', True),
    # allowMultipleAllocations
    ("device.allowMultipleAllocations", True),
    ("device.allowMultipleAllocations == false", False),
    # presence checks
    ('has(device.attributes["dra.example.com"].model)', True),
    ('has(device.attributes["dra.example.com"].missing)', False),
    ('"model" in device.attributes["dra.example.com"]', True),
    ('"dra.example.com" in device.attributes && !("nope.example.com" in device.attributes)', True),
    ('has(device.attributes.nope)', False),
    ('device.attributes["nope.example.com"].size() == 0', True),  # unknown domain: empty map
    ('device.capacity["nope.example.com"] == {}', True),
    ("has(device.driver)", True),
    # driver domain for unqualified names
    ('device.attributes[device.driver].model == "a100"', True),
    # iteration over domains / names
    ('device.attributes.exists_one(d, d == "dra.example.com")', True),
    ("device.attributes.size() == 2 && device.capacity.size() == 2", True),
    ('device.attributes["dra.example.com"].exists(n, n == "model")', True),
    ('device.capacity["dra.example.com"].all(n, device.capacity["dra.example.com"][n].sign() == 1)', True),
    # list-type attributes
    ('device.attributes["dra.example.com"].names.includes("fish")', True),
    ('device.attributes["dra.example.com"].names.includes("cat")', False),
    ('device.attributes["dra.example.com"].model.includes("a100")', True),  # scalar
    ('device.attributes["dra.example.com"].sizes.exists(s, s > 3)', True),
    ('device.attributes["dra.example.com"].sizes.sum() == 7', True),
    ('2 in device.attributes["dra.example.com"].sizes', True),
])
def test_evaluation_truth_table(expr, expected):
    assert ev(expr) is expected


@pytest.mark.parametrize("expr,message", [
    ('device.attributes["dra.example.com"].missing == 1', "no such key: missing"),
    ('device.attributes["dra.example.com"]["missing"] == 1', "no such key: missing"),
    ('device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))', "no such key: noSuchAttr"),
    ('device.capacity["dra.example.com"].nope.isGreaterThan(quantity("0"))', "no such key: nope"),
    ('device.attributes["dra.example.com"].cores.exists(x, x > 0)', "got 'types.Int', expected iterable type"),
    ('device.attributes["dra.example.com"].model.exists(x, x == "a")',
     "got 'types.String', expected iterable type"),
    ('device.attributes["dra.example.com"].runtime.exists(x, true)', "got 'cel.Semver', expected iterable type"),
    ('device.attributes["dra.example.com"].model', "CEL result of type string could not be converted to bool"),
    ('device.attributes["dra.example.com"].names', "CEL result of type list could not be converted to bool"),
    ('device.attributes["dra.example.com"].model.isGreaterThan(quantity("1"))', "no such overload"),
    ('device.attributes["dra.example.com"].model > 1', "no such overload"),
    ('quantity(device.attributes["dra.example.com"].model).sign() == 1',
     "quantities must match the regular expression"),
    ('semver(device.attributes["dra.example.com"].model).major() == 1', "No Major.Minor.Patch elements found"),
    ('device.attributes["dra.example.com"].cores / 0 == 1', "division by zero"),
    ('device.attributes["dra.example.com"].cores % 0 == 1', "modulus by zero"),
    ("9223372036854775807 + dyn(1) > 0", "integer overflow"),
    ('device.capacity["dra.example.com"].cpus.asInteger() == 1', "cannot convert value to integer"),
    ('[1, 2][device.attributes["dra.example.com"].cores] == 1', "out of range"),
])
def test_evaluation_errors(expr, message):
    with pytest.raises(CELRuntimeError) as exc:
        ev(expr)
    assert message in exc.value.message
    assert not isinstance(exc.value, CELCostExceeded)


def test_error_absorption_is_commutative():
    missing = 'device.attributes["dra.example.com"].missing == 1'
    assert ev(f"{missing} || true") is True
    assert ev(f"true || {missing}") is True
    assert ev(f"{missing} && false") is False
    assert ev(f"false && {missing}") is False
    for expr in (f"{missing} || false", f"{missing} && true", f"true && {missing}"):
        with pytest.raises(CELRuntimeError, match="no such key"):
            ev(expr)
    # comprehensions: a false element decides all(), a true one exists(), despite errors elsewhere
    assert ev('["model", "missing"].all(n, device.attributes["dra.example.com"][n] == "x")') is False
    assert ev('["missing", "model"].exists(n, device.attributes["dra.example.com"][n] == "a100")') is True
    with pytest.raises(CELRuntimeError, match="no such key"):
        ev('["missing", "model"].all(n, device.attributes["dra.example.com"][n] == "a100")')
    # a ternary only evaluates the chosen branch
    assert ev(f"device.driver == 'x' ? {missing} : true") is True


def test_has_does_not_swallow_errors():
    with pytest.raises(CELRuntimeError, match="no such key: nope"):
        ev('has(device.attributes["dra.example.com"].nope.inner)')


def test_cel_bind():
    assert ev('cel.bind(d, device.attributes["dra.example.com"], d.model == "a100" && d.cores == 108)')
    assert ev('cel.bind(x, 2, cel.bind(y, x * 3, y == 6))')
    assert ev('cel.bind(x, 1, cel.bind(x, x + 1, x == 2))')  # shadowing
    assert ev('cel.bind(d, device.attributes["nope.example.com"], !has(d.model))')
    with pytest.raises(CELRuntimeError, match="no such key: model"):
        ev('cel.bind(d, device.attributes["nope.example.com"], d.model == "a")')


def test_device_env_qualified_names_and_types():
    env = _device()
    assert env["driver"] == DRIVER
    assert env["attributes"][DRIVER]["model"] == "a100"
    assert env["attributes"][DRIVER]["cores"] == 108
    assert env["attributes"][DRIVER]["mig"] is True
    assert env["attributes"][DRIVER]["driverVersion"] == Semver.parse("1.2.3-rc.1")
    assert env["attributes"]["other.example.com"]["family"] == "ampere"
    assert env["capacity"][DRIVER]["memory"] == Quantity.parse("40Gi")
    assert env["capacity"]["other.example.com"]["slots"] == Quantity.parse("4")
    assert env["allowMultipleAllocations"] is True
    assert env["attributes"]["unknown.example.com"] == {}
    assert "unknown.example.com" not in env["attributes"]
    plain = device_env("d.example.com", {"name": "x"})
    assert plain["allowMultipleAllocations"] is False
    assert compile("device.allowMultipleAllocations == false").evaluate(plain)
    with pytest.raises(CELRuntimeError, match="attribute v: parse semantic version"):
        device_env("d", {"attributes": {"v": {"version": "1.2"}}})
    with pytest.raises(CELRuntimeError, match="unsupported attribute value"):
        device_env("d", {"attributes": {"v": {}}})
    with pytest.raises(CELRuntimeError, match="capacity m: quantities must match"):
        device_env("d", {"capacity": {"m": {"value": "lots"}}})


def test_evaluate_accepts_a_plain_mapping():
    device = {"driver": DRIVER, "attributes": {DRIVER: {"model": "a100", "v": Semver.parse("1.0.0")}},
              "capacity": {DRIVER: {"mem": Quantity.parse("1Gi")}}, "allowMultipleAllocations": False}
    assert compile('device.attributes["dra.example.com"].model == "a100"').evaluate(device)
    assert compile('device.attributes["x.example.com"].size() == 0').evaluate(device)
    assert compile('device.capacity["dra.example.com"].mem.isGreaterThan(quantity("1M"))').evaluate(device)
    assert compile('!device.allowMultipleAllocations').evaluate(device)
    assert compile('device.attributes["dra.example.com"].v == semver("1.0.0")').evaluate(device)
    assert compile('device.driver == ""').evaluate({})


def test_evaluate_cached():
    calls = []
    env = _device()
    ce = compile('device.attributes["dra.example.com"].model == "a100"')
    assert evaluate_cached(ce, ("slice-uid", "7", "gpu-0"), env) is True
    assert evaluate_cached(ce.expression, ("slice-uid", "7", "gpu-0"), {}) is True  # served from the cache
    other = _device(attributes={"model": {"string": "h100"}})
    assert ce.evaluate_cached(("slice-uid", "8", "gpu-0"), other) is False
    for _ in range(2):  # errors are remembered too
        with pytest.raises(CELRuntimeError, match="no such key: x"):
            evaluate_cached('device.attributes["dra.example.com"].x', ("k",), env)
    assert not calls


# ============================================================================ library functions


@pytest.mark.parametrize("expr", [
    # quantity
    'quantity("1Gi") == quantity("1024Mi")',
    'quantity("1Gi").isGreaterThan(quantity("1G"))',
    'quantity("50M").compareTo(quantity("50Mi")) == -1',
    'quantity("200M").compareTo(quantity("0.2G")) == 0',
    'quantity("1.5Gi").add(quantity("512Mi")) == quantity("2Gi")',
    'quantity("50k").add(20) == quantity("50020")',
    'quantity("50k").sub(20000) == quantity("30k")',
    'quantity("50k").add(20).sub(quantity("100k")).sub(-50000) == quantity("20")',
    'quantity("500m").add(quantity("500m")) == quantity("1")',
    'quantity("1").sub(quantity("2")).sign() == -1 && quantity("0").sign() == 0',
    'quantity("50000000G").isInteger() && quantity("50k").asInteger() == 50000',
    '!quantity("9999999999999999999999999999999999999G").isInteger()',
    'quantity("50k").sub(20000).asApproximateFloat() == 30000.0',
    'quantity("1.5").asApproximateFloat() == 1.5',
    '!quantity("1000m").isInteger() && quantity("1k").isInteger()',
    'quantity("1Ki").mul(3) == quantity("3Ki")',
    ('isQuantity("1.3G") && isQuantity("1.3Gi") && !isQuantity("1,3G") && !isQuantity("200K") && '
     '!isQuantity("Three") && isQuantity("10000k")'),
    'quantity("1e3") == quantity("1k") && quantity("1E-3") == quantity("1m")',
    'sign(quantity("-1")) == -1',
    # semver
    'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3',
    'semver("1.0.0-alpha").isLessThan(semver("1.0.0"))',
    'semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-alpha.beta"))',
    'semver("1.0.0-alpha.beta").isLessThan(semver("1.0.0-beta.2"))',
    'semver("1.0.0-beta.2").isLessThan(semver("1.0.0-beta.11"))',
    'semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))',
    'semver("1.2.3+build.1") == semver("1.2.3+build.2")',
    'semver("2.0.0").compareTo(semver("10.0.0")) == -1',
    'isSemver("1.0.0") && !isSemver("v1.0") && isSemver("v1.0", true) && !isSemver("hello")',
    'semver("v01.02", true) == semver("1.2.0")',
    'semver("v0.0.1", true).isLessThan(semver("1.0.0"))',
    # strings extension
    '"TacoCat".lowerAscii() == "tacocat" && "TacoCÆt".upperAscii() == "TACOCÆT"',
    '"a,b,c".split(",") == ["a", "b", "c"] && "a,b,c".split(",", 2) == ["a", "b,c"]',
    '"abc".split("") == ["a", "b", "c"] && "a,b".split(",", 0) == []',
    '["a", "b"].join() == "ab" && ["a", "b"].join("-") == "a-b"',
    '"hello hello".replace("he", "we") == "wello wello" && "hello hello".replace("he", "we", 1) == "wello hello"',
    '"  \\t trim me \\n".trim() == "trim me"',
    '"hello mellow".indexOf("ello") == 1 && "hello mellow".indexOf("ello", 2) == 7 && "x".indexOf("") == 0',
    '"hello mellow".lastIndexOf("ello") == 7 && "hello mellow".lastIndexOf("ello", 6) == 1',
    '"tacocat".substring(4) == "cat" && "tacocat".substring(0, 4) == "taco"',
    '"tacocat".charAt(3) == "o" && "tacocat".charAt(7) == ""',
    '"abc".contains("b") && "abc".size() == 3 && size("abc") == 3 && "é".size() == 1',
    'strings.quote("a\\"b") == "\\"a\\\\\\"b\\""',
    # regex library
    '"abc123".find("[0-9]+") == "123" && "abc".find("[0-9]+") == ""',
    '"a1b22c333".findAll("[0-9]+") == ["1", "22", "333"] && "a1b22".findAll("[0-9]+", 1) == ["1"]',
    'matches("abc", "^a") && "asymetric".matches("[^a]?sym")',
    # lists library & sets
    '[1, 2, 3].isSorted() && ![3, 1].isSorted() && [1, 2, 3].sum() == 6 && [3, 1, 2].min() == 1',
    '["b", "a"].max() == "b" && [1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2',
    'sets.contains([1, 2, 3], [3, 1]) && sets.equivalent([1, 2], [2, 1, 1]) && sets.intersects([1], [2, 1])',
    # macros
    '[1, 2, 3].all(x, x > 0) && [1, 2, 3].exists(x, x == 2) && [1, 2, 3].exists_one(x, x > 2)',
    '[1, 2, 3].map(x, x * 2) == [2, 4, 6] && [1, 2, 3].map(x, x > 1, x * 10) == [20, 30]',
    '[1, 2, 3].filter(x, x % 2 == 1) == [1, 3] && {"a": 1, "b": 2}.filter(k, k == "b") == ["b"]',
    '{"a": 1, "b": 2}.all(k, v, v > 0 && k.size() == 1)',
    '[10, 20].exists(i, v, i == 1 && v == 20)',
    '[1, 2].transformList(i, v, v * i) == [0, 2]',
    '{"a": 1}.transformMap(k, v, v + 1) == {"a": 2}',
    # conversions and standard functions
    'int("42") == 42 && uint(42) == 42u && double(1) == 1.0 && string(12) == "12"',
    'string(1.5) == "1.5" && string(1e6) == "1e+06" && string(123456.0) == "123456" && string(true) == "true"',
    'int(2.9) == 2 && int(-2.9) == -2 && bool("true") && bytes("a") == b"a"',
    'type(1) == int && type("a") == string && type([1]) == list && type(quantity("1")) != int',
    '-7 / 2 == -3 && -7 % 3 == -1 && 7u / 2u == 3u && 1.0 / 0.0 > 1e308',
    '-9223372036854775808 < 0 && 0x10 == 16 && 1u + 2u == 3u',
    '{"a": {"b": 1}}.a.b == 1 && {"a": 1}["a"] == 1 && [[1], [2]][1][0] == 2',
    '[1, 2] + [3] == [1, 2, 3] && "ab" + "c" == "abc"',
    'dyn(1) == 1u && dyn(1) == 1.0 && dyn([1]) != [true]',
    # optional types
    'optional.of(1).hasValue() && !optional.none().hasValue() && optional.of(1).value() == 1',
    'optional.none().orValue(3) == 3 && optional.none().or(optional.of(2)).value() == 2',
    'device.attributes["dra.example.com"].?missing.orValue("x") == "x"',
    'device.attributes["dra.example.com"].?model.orValue("x") == "a100"',
    'device.attributes[?"dra.example.com"].hasValue() && !device.attributes[?"x.example.com"].hasValue()',
    'optional.of(2).optMap(x, x * 2).value() == 4 && optional.ofNonZeroValue(0) == optional.none()',
    '[?optional.none(), ?optional.of(1)] == [1] && {?"a": optional.none(), "b": 1} == {"b": 1}',
])
def test_library_functions(expr):
    assert ev(expr) is True


def test_negative_literal_folding_and_limits():
    assert ev("-9223372036854775808 == -9223372036854775807 - 1")
    with pytest.raises(CELRuntimeError, match="integer overflow"):
        ev("-(-9223372036854775807 - 1) == 0")
    with pytest.raises(CELCompileError, match="invalid int literal"):
        compile("-(9223372036854775808) < 0")


def test_regex_is_linear_time():
    """RE2 semantics when google-re2 is installed: a catastrophic pattern for a backtracking engine."""
    if lib_regex._re2 is None:  # pragma: no cover - depends on the machine
        pytest.skip("google-re2 not installed")
    start = time.perf_counter()
    assert ev('!"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!".matches("^(a+)+$")')
    assert time.perf_counter() - start < 0.5


# ============================================================================ semver


@pytest.mark.parametrize("text,message", [
    ("", "Version string empty"),
    ("1.2", "No Major.Minor.Patch elements found"),
    ("v1.2.3", "Invalid character(s) found in major number \"v1\""),
    ("01.2.3", "Major number must not contain leading zeroes \"01\""),
    ("1.02.3", "Minor number must not contain leading zeroes \"02\""),
    ("1.2.03", "Patch number must not contain leading zeroes \"03\""),
    ("1.2.3-", "Prerelease is empty"),
    ("1.2.3-01", "Numeric PreRelease version must not contain leading zeroes \"01\""),
    ("1.2.3-a_b", "Invalid character(s) found in prerelease \"a_b\""),
    ("1.2.3+", "Build meta data is empty"),
    ("1.2.x", "Invalid character(s) found in patch number \"x\""),
])
def test_semver_invalid(text, message):
    with pytest.raises(ValueError) as exc:
        Semver.parse(text)
    assert str(exc.value) == message


def test_semver_parse_and_order():
    v = Semver.parse("1.2.3-alpha.1+build.5")
    assert (v.major, v.minor, v.patch) == (1, 2, 3)
    assert str(v) == "1.2.3-alpha.1+build.5"
    order = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
             "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0"]
    parsed = [Semver.parse(x) for x in order]
    shuffled = parsed[5:] + parsed[:5]
    assert sorted(shuffled) == parsed
    assert Semver.parse("1.2", normalize=True) == Semver.parse("1.2.0")
    assert Semver.parse("v01.02.03", normalize=True) == Semver.parse("1.2.3")
    with pytest.raises(ValueError, match="short version cannot contain PreRelease/Build meta data"):
        Semver.parse("1.2-rc", normalize=True)


# ============================================================================ cost


@pytest.mark.parametrize("expr,cost", [
    # the expected worst-case costs of upstream's compile_test.go
    ('"no-such-domain" in device.attributes', 3),
    ('device.driver == ""', 2),
    ('device.driver == "dra.example.com"', 4),
    ('device.attributes["dra.example.com"].name', 4),
    ('cel.bind(dra, device.attributes["dra.example.com"], dra.name)', 15),
    ('device.attributes["dra.example.com"].name > 0', 5),
    ('device.attributes["dra.example.com"].name == "fish"', 5),
    ('device.attributes["dra.example.com"].name.exists(x, x > 0)', 5 + (3 + 3) * 64),
    ('device.attributes["dra.example.com"].names.all(x, x != "")', 5 + (2 + 2) * 64),
    ('device.attributes["dra.example.com"].name.includes("fish")', 4 + 48),
    ('1 in device.attributes["dra.example.com"].names', 4 + 64),
    ('device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))', 6),
    ('device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', 6),
    (('"name" in device.capacity["dra.example.com"] && '
      'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))'), 10),
    (('!("name" in device.capacity["dra.example.com"]) || '
      'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))'), 11),
    ('device.attributes.exists_one(x, x == "dra.example.com")', 164),
    ('device.attributes["dra.example.com"].exists_one(x, x == "services")', 133),
    ('device.attributes["dra.example.com"].services.split("example").size() >= 2', 19),
    ('device.attributes["dra.example.com"].services.matches("[^a]?sym")', 18),
    ("device.allowMultipleAllocations == true", 3),
])
def test_cost_estimate_matches_upstream(expr, cost):
    assert compile(expr).max_cost == cost
    assert cel.estimate_cost(expr) == cost


NESTED = ("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, "
          "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, "
          "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, "
          "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))")


def _doubling(levels: int) -> str:
    """A string that doubles at every cel.bind: exponential size in the expression length."""
    expr = 'cel.bind(s0, "0123456789", '
    for i in range(1, levels + 1):
        expr += f"cel.bind(s{i}, s{i - 1} + s{i - 1}, "
    return expr + f"s{levels}.size() > 0" + ")" * (levels + 1)


def _replace_blowup(levels: int) -> str:
    expr = 'cel.bind(s0, "aaaaaaaaaaaaaaaaaaaa", '
    for i in range(1, levels + 1):
        expr += f"cel.bind(s{i}, s{i - 1}.replace(\"a\", s{i - 1}), "
    return expr + f"s{levels}.size() > 0" + ")" * (levels + 1)


@pytest.mark.parametrize("expr", [
    NESTED,
    _doubling(40),
    ("[1,2,3,4,5,6,7,8,9,10].map(a, [1,2,3,4,5,6,7,8,9,10].map(b, [1,2,3,4,5,6,7,8,9,10].map(c, "
     "[1,2,3,4,5,6,7,8,9,10].map(d, [1,2,3,4,5,6,7,8,9,10].map(e, [1,2,3,4,5,6,7,8,9,10]))))).size() > 0"),
    ('device.attributes["dra.example.com"].names.all(a, device.attributes["dra.example.com"].names.all(b, '
     'device.attributes["dra.example.com"].names.all(c, device.attributes["dra.example.com"].names.all(d, '
     'a + b + c + d != ""))))'),
])
def test_pathological_expression_rejected_at_compile_time(expr):
    with pytest.raises(CELCostExceeded) as exc:
        compile(expr)
    assert exc.value.message == "too complex, exceeds cost limit"
    assert exc.value.cost > CEL_SELECTOR_EXPRESSION_MAX_COST
    assert isinstance(exc.value, CELCompileError)
    assert compile(expr, cost_limit=None).max_cost == exc.value.cost  # stored expressions skip the check
    assert NESTED and compile(NESTED, cost_limit=None).max_cost == 85555551  # upstream's estimate


@pytest.mark.parametrize("expr", [NESTED, _doubling(60), _replace_blowup(8)])
def test_runtime_cost_guard_cuts_off_exponential_expressions(expr):
    ce = compile(expr, cost_limit=None)
    start = time.perf_counter()
    with pytest.raises(CELCostExceeded) as exc:
        ce.evaluate(DEV)
    assert time.perf_counter() - start < 3.0
    assert exc.value.message == "operation cancelled: actual cost limit exceeded"
    assert isinstance(exc.value, CELRuntimeError)  # the allocator treats it as an evaluation error


def test_time_budget_guard():
    ce = compile(NESTED, cost_limit=None)
    start = time.perf_counter()
    with pytest.raises(CELCostExceeded, match="evaluation time budget exceeded"):
        ce.evaluate(DEV, cost_limit=None, time_budget=0.05)
    assert time.perf_counter() - start < 1.0


def test_cost_exceeded_is_never_absorbed():
    ce = compile(f"{NESTED} || true", cost_limit=None)
    with pytest.raises(CELCostExceeded):
        ce.evaluate(DEV)
    ce = compile(f"[1, 2].exists(i, i == 1 || {NESTED})", cost_limit=None)
    assert ce.evaluate(DEV) is True  # short-circuit: the expensive branch never runs
    ce = compile(f"[1, 2].exists(i, {NESTED} && i == 3)", cost_limit=None)
    with pytest.raises(CELCostExceeded):
        ce.evaluate(DEV)


def test_cheap_runtime_limit_can_be_lowered():
    ce = compile("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, x > 0)")
    assert ce.evaluate(DEV) is True
    with pytest.raises(CELCostExceeded):
        ce.evaluate(DEV, cost_limit=5)


def test_evaluation_speed_is_reasonable():
    ce = compile('device.driver == "dra.example.com" && device.attributes["dra.example.com"].model == "a100" '
                 '&& device.capacity["dra.example.com"].memory.isGreaterThan(quantity("32Gi"))')
    start = time.perf_counter()
    for _ in range(2000):
        assert ce.evaluate(DEV)
    assert (time.perf_counter() - start) / 2000 < 200e-6  # generous: ~3 µs on a developer machine


# ============================================================================ robustness


def test_long_clause_chains_and_deep_expressions():
    import sys

    limit = sys.getrecursionlimit()
    models = " || ".join(f'device.attributes["dra.example.com"].model == "m{i}"' for i in range(300))
    assert len(models) > 10 * 1024  # longer than the API allows, still fine here
    ce = compile(f"({models}) || device.attributes['dra.example.com'].model == 'a100'")
    assert ce.evaluate(DEV) is True
    assert ce.max_cost == 301 * 5
    conj = " && ".join(f"device.attributes['dra.example.com'].cores > {i % 100}" for i in range(200))
    assert ev(conj) is True
    sums = " + ".join(["1"] * 3000) + " == 3000"  # 3000 levels of left-nested calls
    assert ev(sums) is True
    nested = "[" * 200 + "1" + "]" * 200 + " != []"
    assert ev(nested) is True
    assert ev("(" * 240 + "true" + ")" * 240) is True
    assert sys.getrecursionlimit() == limit  # no lasting side effect on the process


def test_logic_chains_keep_cel_semantics():
    missing = 'device.attributes["dra.example.com"].missing'
    assert ev(f"true && {missing} == 1 && false") is False
    assert ev(f"false || {missing} == 1 || true") is True
    with pytest.raises(CELRuntimeError, match="no such key"):
        ev(f"true && {missing} == 1 && true")
    with pytest.raises(CELRuntimeError, match="no such overload"):
        ev('true && device.attributes["dra.example.com"].cores')
    assert ev('false && device.attributes["dra.example.com"].cores') is False
    with pytest.raises(CELCompileError, match=r"applied to '\(bool, int\)'"):
        compile("true && true && 1")


def test_derived_attribute_expressions():
    ce = compile('device.attributes["dra.example.com"].model + "-x"', derived_attribute=True)
    assert ce.evaluate_value(DEV) == "a100-x"
    assert compile('device.attributes["dra.example.com"].sizes.map(s, s * 2)',
                   derived_attribute=True).evaluate_value(DEV) == [2, 4, 8]
    compile('semver("1.0.0")', derived_attribute=True)
    with pytest.raises(CELCompileError, match=r"must evaluate to a primitive scalar \(string, integer, boolean, "
                                              r"semver\) or a list of these scalars, not double"):
        compile("1.5", derived_attribute=True)
    with pytest.raises(CELCompileError, match=r"semver\), not list\(int\)"):
        compile("[1]", derived_attribute=True, list_type_attributes=False)


def test_evaluate_cached_remembers_cost_limit_errors():
    ce = compile(NESTED, cost_limit=None)
    start = time.perf_counter()
    for _ in range(2):
        with pytest.raises(CELCostExceeded, match="actual cost limit exceeded"):
            ce.evaluate_cached(("pathological", 1), DEV)
    first_and_second = time.perf_counter() - start
    start = time.perf_counter()
    with pytest.raises(CELCostExceeded):
        ce.evaluate_cached(("pathological", 1), DEV)
    assert time.perf_counter() - start < first_and_second / 10
