"""Schema conversion: the local-flavour 1.37 definitions turned back into published OpenAPI v2/v3
definitions (refs, nullable types, `allOf` around refs with siblings, Quantity/IntOrString), and the
closure of definitions a document carries."""

from __future__ import annotations

import copy
from typing import Any

from dramock.registry.kind import Kind
from dramock.schemas import defs

Obj = dict[str, Any]

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"


# The upstream definitions of the two "oneOf" types (kubernetes-validate rewrites them as oneOf).
_SPECIAL_DEFINITIONS: dict[str, Obj] = {
    QUANTITY: {
        "description": (
            "Quantity is a fixed-point representation of a number. It provides convenient "
            "marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() accessors.\n\n"
            "The serialization format is:\n\n```\n<quantity>        ::= <signedNumber><suffix>\n\n"
            "\t(Note that <suffix> may be empty, from the \"\" case in <decimalSI>.)\n\n"
            "<digit>           ::= 0 | 1 | ... | 9 <digits>          ::= <digit> | <digit><digits> "
            "<number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits> <sign>            "
            "::= \"+\" | \"-\" <signedNumber>    ::= <number> | <sign><number> <suffix>          "
            "::= <binarySI> | <decimalExponent> | <decimalSI> <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei\n\n"
            "\t(International System of units; See: http://physics.nist.gov/cuu/Units/binary.html)\n\n"
            "<decimalSI>       ::= m | \"\" | k | M | G | T | P | E\n\n"
            "\t(Note that 1024 = 1Ki but 1000 = 1k; I didn't choose the capitalization.)\n\n"
            "<decimalExponent> ::= \"e\" <signedNumber> | \"E\" <signedNumber>\n```\n\n"
            "No matter which of the three exponent forms is used, no quantity may represent a number "
            "greater than 2^63-1 in magnitude, nor may it have more than 3 decimal places. Numbers larger "
            "or more precise will be capped or rounded up. (E.g.: 0.1m will rounded up to 1m.) This may be "
            "extended in the future if we require larger or smaller quantities.\n\n"
            "When a Quantity is parsed from a string, it will remember the type of suffix it had, and will "
            "use the same type again when it is serialized.\n\n"
            "Before serializing, Quantity will be put in \"canonical form\". This means that "
            "Exponent/suffix will be adjusted up or down (with a corresponding increase or decrease in "
            "Mantissa) such that:\n\n- No precision is lost - No fractional digits will be emitted - The "
            "exponent (or suffix) is as large as possible.\n\nThe sign will be omitted unless the number "
            "is negative.\n\nExamples:\n\n- 1.5 will be serialized as \"1500m\" - 1.5Gi will be "
            "serialized as \"1536Mi\"\n\nNote that the quantity will NEVER be internally represented by "
            "a floating point number. That is the whole point of this exercise.\n\nNon-canonical values "
            "will still parse as long as they are well formed, but will be re-emitted in their canonical "
            "form. (So always use canonical form, or don't diff.)\n\nThis format is intended to make it "
            "difficult to use these numbers without writing some sort of special handling code in the "
            "hopes that that will cause implementors to also use a fixed point implementation."
        ),
        "type": "string",
    },
    INT_OR_STRING: {
        "description": (
            "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML "
            "marshalling and unmarshalling, it produces or consumes the inner type.  This allows you to "
            "have, for example, a JSON field that can accept a name or number."
        ),
        "format": "int-or-string",
        "type": "string",
    },
}

# Meta types every group-version document carries (used by the paths' request/response bodies).
_PATH_DEFINITIONS = (
    META + "APIResourceList",
    META + "DeleteOptions",
    META + "Patch",
    META + "Status",
    META + "WatchEvent",
)


def _convert(schema: Any, ref_prefix: str, v3: bool, prop_name: str | None = None) -> Any:
    """Convert one local-flavour schema node (recursively) to OpenAPI v2 or v3."""
    if isinstance(schema, list):
        return [_convert(s, ref_prefix, v3) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: Obj = {}
    for key, value in schema.items():
        if key == "$ref":
            out[key] = ref_prefix + value[len(defs.REF_PREFIX):]
        elif key == "type":
            types = [value] if isinstance(value, str) else [t for t in value if t != "null"]
            if types:
                out[key] = types[0]
        elif key == "enum" and prop_name in ("apiVersion", "kind"):
            continue  # added by the JSON-schema generator; upstream publishes no enum here
        elif key == "properties":
            out[key] = {name: _convert(sub, ref_prefix, v3, name) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = _convert(value, ref_prefix, v3)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [_convert(s, ref_prefix, v3) for s in value]
        else:
            out[key] = copy.deepcopy(value)
    if v3 and "$ref" in out and len(out) > 1:
        # OpenAPI 3.0 ignores siblings of $ref: upstream wraps the ref in allOf.
        ref = out.pop("$ref")
        out = {"allOf": [{"$ref": ref}], **out}
    return dict(sorted(out.items()))


def _definition(name: str, ref_prefix: str, v3: bool) -> Obj:
    if name in _SPECIAL_DEFINITIONS:
        return copy.deepcopy(_SPECIAL_DEFINITIONS[name])
    return _convert(defs.definition(name), ref_prefix, v3)


def _refs_in(schema: Any, out: set[str]) -> None:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(defs.REF_PREFIX):
            out.add(ref[len(defs.REF_PREFIX):])
        for v in schema.values():
            _refs_in(v, out)
    elif isinstance(schema, list):
        for v in schema:
            _refs_in(v, out)


def closure(roots: list[str]) -> list[str]:
    """All definition names reachable from `roots` (roots included), sorted."""
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in seen or name not in defs.definitions():
            continue
        seen.add(name)
        if name in _SPECIAL_DEFINITIONS:
            continue
        refs: set[str] = set()
        _refs_in(defs.definition(name), refs)
        stack.extend(refs - seen)
    return sorted(seen)


def _kind_roots(kinds: list[Kind]) -> list[str]:
    roots = list(_PATH_DEFINITIONS)
    for k in kinds:
        roots.append(k.definition)
        lst = defs.kind_definition(k.group, k.version, k.list_kind)
        if lst:
            roots.append(lst)
        if "binding" in k.subresources:
            roots.append("io.k8s.api.core.v1.Binding")
    return roots
