"""Parsing request bodies (JSON and YAML) with Go's rules and bounded work.

kube-apiserver decodes with Go's encoding/json (through sigs.k8s.io/json) and go-yaml. Where Python's
parsers differ in ways a client can see, this module follows Go:

- NaN, Infinity and numbers outside float64 (`1e999`) are syntax errors, not values that could never
  be served back as JSON;
- invalid UTF-8 and lone UTF-16 surrogate escapes (`"\\ud800"`) inside strings become U+FFFD;
- nesting is bounded (Go's decoder stops at 10,000 levels; Python's recursion limit is lower, so the
  bound here is MAX_DEPTH, which every later recursive pass over the object can afford);
- YAML aliases are expanded only up to go-yaml's ratio of aliases to decoded nodes, so that a
  "billion laughs" document is refused before it is built.

Duplicate keys are recorded, as strict field validation reports them.
"""

from __future__ import annotations

import json
import json.scanner
import math
import re
from typing import Any

import orjson
import yaml

MAX_DEPTH = 200
MAX_FAST = 1 << 20  # bodies up to this size try the orjson path first


class BodyError(ValueError):
    """A body that cannot be decoded; the message is Go's wording without the caller's prefix."""


class _DuplicateKeys(dict):
    """A dict built by the decoders that remembers duplicate keys (strict decoding reports them)."""

    duplicates: list[str]


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict:
    d = _DuplicateKeys()
    dups = []
    for k, v in pairs:
        if k in d:
            dups.append(k)
        d[k] = v
    if dups:
        d.duplicates = dups
    return d


def _reject_constant(name: str) -> Any:
    raise BodyError(f"invalid character '{name[0] if name != '-Infinity' else '-'}' looking for beginning of value")


def _go_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise BodyError(f"json: cannot unmarshal number {text} into Go value of type float64")
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _finish(value: Any, path: str, dups: list[str], depth: int, fix_surrogates: bool) -> Any:
    """Plain dicts again (duplicate markers collected), depth checked, lone surrogates replaced."""
    if depth > MAX_DEPTH:
        raise BodyError("json: exceeded max depth")
    if isinstance(value, dict):
        for k in getattr(value, "duplicates", ()):
            dups.append(f"{path}.{k}" if path else k)
        out = {}
        for k, v in value.items():
            if fix_surrogates and isinstance(k, str):
                k = _SURROGATE.sub("\ufffd", k)
            out[k] = _finish(v, f"{path}.{k}" if path else str(k), dups, depth + 1, fix_surrogates)
        return out
    if isinstance(value, list):
        return [_finish(v, f"{path}[{i}]", dups, depth + 1, fix_surrogates) for i, v in enumerate(value)]
    if fix_surrogates and isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    return value


# Every string of a valid JSON text in order (outside strings a quote only opens one), with the colon that
# follows it when the string is an object key. See _fast_load.
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"([ \t\r\n]*:)?')
_BLANK_COLON = re.compile(rb'"[ \t\r\n]+:')


def _plain_count(value: Any, depth: int) -> int:
    """The keys in a decoded value; -1 when it holds a float (orjson reads integers beyond 64 bits as
    floats, Python's json as ints) or nests deeper than MAX_DEPTH: the slow path decides those."""
    if depth > MAX_DEPTH:
        return -1
    if type(value) is dict:
        n = len(value)
        for v in value.values():
            if type(v) in (dict, list, float):
                c = _plain_count(v, depth + 1)
                if c < 0:
                    return -1
                n += c
        return n
    if type(value) is list:
        n = 0
        for v in value:
            if type(v) in (dict, list, float):
                c = _plain_count(v, depth + 1)
                if c < 0:
                    return -1
                n += c
        return n
    return -1 if type(value) is float else 0


def _fast_load(body: bytes) -> Any:
    """The value of a body that needs none of load_json's repairs, or None (then the slow path runs).

    orjson refuses everything Go would have to repair or refuse here (invalid UTF-8, lone surrogates, NaN,
    1e999) and keeps the last of duplicate keys silently. Duplicates are ruled out by counting: the decoded
    value has as many keys as the text has key tokens only when no key repeats.
    """
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if type(value) is not dict:
        return None
    keys = _plain_count(value, 1)
    if keys < 0 or keys != _key_tokens(body):
        return None
    return value


def _key_tokens(body: bytes) -> int:
    """How many object keys the text has. Without a backslash every quote delimits a string, and in valid
    JSON only a key's closing quote is followed by a colon: when none has blanks before its colon, counting
    `":` is exact (the usual body, several times faster than the scan)."""
    if b"\\" not in body and _BLANK_COLON.search(body) is None:
        return body.count(b'":')
    return sum(1 for colon in _STRING.findall(body) if colon)


def load_json(body: bytes | str, in_pieces: bool = False) -> tuple[Any, list[str]]:
    """(value, duplicate key paths); BodyError or json.JSONDecodeError on bad input.

    `in_pieces`: walk objects and arrays in Python (strings and numbers are still scanned in C), about three
    times slower, but the C scanner holds the interpreter lock for a whole object (~40 ms for 150,000 members):
    for a big body decoded in a worker thread, while the event loop thread has to wait."""
    if not in_pieces and isinstance(body, bytes) and len(body) < MAX_FAST:
        value = _fast_load(body)
        if value is not None:
            return value, []
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    decoder = json.JSONDecoder(object_pairs_hook=_pairs_hook, parse_constant=_reject_constant, parse_float=_go_float)
    if in_pieces:
        decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    try:
        value = decoder.decode(text)
    except RecursionError:
        raise BodyError("json: exceeded max depth") from None
    dups: list[str] = []
    # A lone surrogate can only come from a \uD8xx-\uDFxx escape.
    return _finish(value, "", dups, 0, "\\ud" in text or "\\uD" in text), dups


# ---------------------------------------------------------------- YAML


# libyaml's parser where PyYAML was built with it: the pure-Python one held the event loop for seconds on a
# long flow sequence (tests/test_fuzz.py's slowest /readyz); the constructors and resolvers below are the same.
class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    pass


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    d = _DuplicateKeys()
    dups = []
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in d:
            dups.append(str(key))
        d[key] = loader.construct_object(value_node, deep=True)
    if dups:
        d.duplicates = dups
    return d


def _reject_float_constants(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    value = loader.construct_yaml_float(node)
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        # YAML's .nan/.inf have no JSON form; sigs.k8s.io/yaml refuses to convert them.
        raise BodyError(f"json: unsupported value: {node.value}")
    return value


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:float", _reject_float_constants)
# Kubernetes YAML is YAML 1.2-ish: timestamps stay strings.
_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.copy().items()
}

# go-yaml's alias budget: the share of decoded nodes that may come from aliases falls from 99 % (up to
# 400,000 decoded nodes) to 10 % (4,000,000 and more).
_ALIAS_RATIO_LOW, _ALIAS_RATIO_HIGH = 400_000, 4_000_000


def _allowed_alias_ratio(decoded: int) -> float:
    if decoded <= _ALIAS_RATIO_LOW:
        return 0.99
    if decoded >= _ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _ALIAS_RATIO_LOW) / (_ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_aliasing(root: yaml.Node) -> None:
    """Count what expanding every alias would decode, without expanding. In document order the first visit of
    a node is its definition and every later reference to it is an alias; each node's totals are computed
    once, so the cost is the size of the document as written."""
    decoded: dict[int, int] = {}  # nodes decoded when this node is, aliases expanded
    aliases: dict[int, int] = {}  # alias expansions among those
    # Frames: [node, its children, next child index, decoded so far, aliases so far].
    stack: list[list[Any]] = [[root, _children(root), 0, 1, 0]]
    open_ids = {id(root)}
    while stack:
        frame = stack[-1]
        node, children, i = frame[0], frame[1], frame[2]
        if i < len(children):
            frame[2] = i + 1
            child = children[i]
            if id(child) in open_ids:
                raise BodyError("yaml: anchor value contains itself")
            if id(child) in decoded:  # an alias of a node defined earlier
                frame[3] += decoded[id(child)]
                frame[4] += aliases[id(child)] + 1
            else:
                open_ids.add(id(child))
                stack.append([child, _children(child), 0, 1, 0])
            continue
        stack.pop()
        open_ids.discard(id(node))
        decoded[id(node)], aliases[id(node)] = frame[3], frame[4]
        if stack:
            stack[-1][3] += frame[3]
            stack[-1][4] += frame[4]
    n, a = decoded[id(root)], aliases[id(root)]
    if a > 100 and n > 1000 and a / n > _allowed_alias_ratio(n):
        raise BodyError("yaml: document contains excessive aliasing")


def load_yaml(body: bytes) -> tuple[Any, list[str]]:
    """(value, duplicate key paths) of a single YAML document; BodyError or yaml.YAMLError on bad input."""
    text = body.decode("utf-8", "replace")
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, []
        _check_aliasing(node)
        value = loader.construct_document(node)
    except RecursionError:
        raise BodyError("yaml: exceeded max depth") from None
    finally:
        loader.dispose()
    dups: list[str] = []
    return _finish(value, "", dups, 0, False), dups


def load_json_or_yaml(body: bytes, in_pieces: bool = False) -> tuple[Any, list[str]]:
    """A YAML body that is a JSON object (what clients usually send as apply patches) takes the JSON parser,
    ~50x faster than PyYAML; anything else is YAML."""
    if body.lstrip()[:1] == b"{":
        try:
            return load_json(body, in_pieces)
        except (ValueError, BodyError):
            pass
    return load_yaml(body)
