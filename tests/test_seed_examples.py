"""Every YAML example of the spec documents in ../shared/seeds, applied with the real kubectl.

The seeds are web pages and KEPs flattened to text: their YAML sits in ```yaml fences or loose between
paragraphs, documents are separated by `---` (once as `–--`), and two KEPs lost all indentation on the
way (every line starts at column 0). Loose and flattened documents are recovered here: the first with
a line-based scanner, the second by re-indenting each line under the nearest enclosing field that the
official 1.37 schema (kubernetes-validate, the same definitions upstream publishes) says can hold it.

Each extracted document has a stable id `<seed file>#<index>` and exactly one expectation in EXPECTED:

- ACCEPT: a complete example in a version 1.37 serves (resource.k8s.io/v1, v1beta1, v1beta2 with those
  enabled through --runtime-config, or core/v1): `kubectl apply --dry-run=server` must accept it.
- REJECT: deliberately incomplete (`...` placeholders) or invalid as written; the reason is spelled out
  and, where the document is still well-formed, kubectl must show upstream's error for it.
- UNSERVED: a version 1.37 does not serve (v1alpha2; v1alpha3 outside DeviceTaintRule): kubectl must
  answer `no matches for kind "X" in version "resource.k8s.io/v1alphaN"` as it does against upstream.
- OUT_OF_SCOPE: not a DRA object and not served by dramock (apps/v1 Deployment), listed with the reason.
- FRAGMENT: a snippet of an object (`<seed>#fragment<k>`: no apiVersion/kind), listed with what it shows.

A document the table does not know (a seed was edited) fails test_every_example_is_classified.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.conftest import Server, start_server, stop

SEEDS = Path(__file__).resolve().parents[1].parent / "shared" / "seeds"
NAMESPACE = "seed-examples"
RUNTIME_CONFIG = "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true"
SERVED_RESOURCE_VERSIONS = {"v1", "v1beta1", "v1beta2"}
DRA_KINDS = {"DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "DeviceTaintRule"}
# Core objects (served by dramock) that the DRA flows of the specs use.
CORE_KINDS = {"Pod", "ResourceQuota", "Node", "Namespace"}


# --- extraction ---


@dataclass
class Example:
    id: str
    text: str
    line: int  # 1-based line of the document's first line in the seed
    flattened: bool = False
    fragment: bool = False  # a snippet of an object: no apiVersion/kind
    doc: Any = None
    parse_error: str | None = None

    @property
    def api_version(self) -> str:
        if isinstance(self.doc, dict):
            return str(self.doc.get("apiVersion", ""))
        m = re.search(r"^apiVersion:\s*(\S+)", self.text, re.M)
        return m.group(1) if m else ""

    @property
    def kind(self) -> str:
        if isinstance(self.doc, dict):
            return str(self.doc.get("kind", ""))
        m = re.search(r"^kind:\s*(\S+)", self.text, re.M)
        return m.group(1) if m else ""


SEPARATOR = re.compile(r"^(---|\u2013--|\u2014-?)\s*$")  # the docs page renders one `---` as `–--`
KEY_LINE = re.compile(r"^[A-Za-z0-9_.\-/\"']+:(\s|$)")
DOC_START = re.compile(r"^(apiVersion|kind):\s*\S")
FRAGMENT_START = re.compile(r"^(metadata|spec|status|selectors|requests|devices|allocation):\s*$")


def _yamlish(line: str) -> bool:
    return (line.startswith((" ", "\t", "- ", "#")) or line == "-" or bool(KEY_LINE.match(line))
            or line.strip() == "..." or bool(SEPARATOR.match(line)))


def _split_fences(lines: list[str]) -> Iterator[tuple[bool, int, list[str]]]:
    """(fenced, first line number, lines) regions; a fence's info string must be yaml or empty to count."""
    i, start, buf = 0, 1, []
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if m:
            if buf:
                yield False, start, buf
            lang, j = m.group(1), i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if lang in ("yaml", "yml", ""):
                yield True, i + 2, lines[i + 1:j]
            i, start, buf = j + 1, j + 2, []
            continue
        buf.append(lines[i])
        i += 1
    if buf:
        yield False, start, buf


def _documents(fenced: bool, first: int, lines: list[str]) -> Iterator[tuple[int, list[str], bool]]:
    """(first line number, lines, is_fragment) of one region. A document starts at a column-0 apiVersion/kind
    line; outside documents, a loose block opened by an object field (`spec:`, `status:`, `selectors:`...) and
    followed by YAML is a fragment of an object."""
    doc: list[str] = []
    doc_line = 0
    fragment = False

    def flush() -> Iterator[tuple[int, list[str], bool]]:
        while doc and not doc[-1].strip():
            doc.pop()
        if doc:
            yield doc_line, list(doc), fragment
        doc.clear()

    for n, line in enumerate(lines):
        lineno = first + n
        if SEPARATOR.match(line):
            yield from flush()
            continue
        if doc and DOC_START.match(line):
            key = line.split(":", 1)[0]
            if fragment or any(d.startswith(key + ":") for d in doc):  # a second apiVersion/kind: the next one
                yield from flush()
        if not doc:
            nxt = lines[n + 1] if n + 1 < len(lines) else ""
            if DOC_START.match(line):
                doc, doc_line, fragment = [line], lineno, False
            elif not fenced and FRAGMENT_START.match(line) and nxt.startswith(("  ", "- ")):
                doc, doc_line, fragment = [line], lineno, True
            continue
        if fenced or _yamlish(line) or doc[-1].rstrip().endswith((": |", ": |-", ": >", ": >-")):
            doc.append(line)
        elif not line.strip():
            doc.append(line)
        else:  # prose: the loose document ended
            yield from flush()
    yield from flush()


def extract(path: Path) -> list[Example]:
    lines = path.read_text(encoding="utf-8").splitlines()
    examples: list[Example] = []
    fragments = 0
    for fenced, first, region in _split_fences(lines):
        found = list(_documents(fenced, first, region))
        if fenced and not found and isinstance(_safe_load("\n".join(region)), dict):
            found = [(first, region, True)]  # a fenced YAML snippet without apiVersion/kind
        for lineno, doc_lines, fragment in found:
            text = "\n".join(doc_lines) + "\n"
            if fragment:
                ex = Example(f"{path.stem}#fragment{fragments}", text, lineno, fragment=True)
                fragments += 1
                ex.doc = _safe_load(text)
                examples.append(ex)
                continue
            ex = Example(f"{path.stem}#{sum(not e.fragment for e in examples)}", text, lineno)
            ex.flattened = _is_flattened(doc_lines)
            source = reindent(doc_lines) if ex.flattened else text
            try:
                ex.doc = yaml.safe_load(source)
                if ex.flattened:
                    ex.text = source
            except yaml.YAMLError as e:
                ex.parse_error = str(e).splitlines()[0]
            examples.append(ex)
    return examples


def _safe_load(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


def _is_flattened(lines: list[str]) -> bool:
    """No line is indented although some key opens a nested block that is not a list."""
    if any(line[:1] in (" ", "\t") for line in lines if line.strip()):
        return False
    content = [line for line in lines if line.strip() and not line.startswith("#")]
    return any(re.match(r"^[A-Za-z0-9_.\-/]+:\s*$", a) and not b.startswith("-") for a, b in zip(content, content[1:],
                                                                                              strict=False))


# --- schema-guided re-indentation of flattened documents ---


_DEFS: dict | None = None


def _defs() -> dict:
    global _DEFS
    if _DEFS is None:
        base = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / "v1.37.0-local"
        _DEFS = json.loads((base / "_definitions.json").read_text())["$defs"]
    return _DEFS


def _resolve(schema: dict | None) -> dict | None:
    while isinstance(schema, dict):
        if "$ref" in schema:
            schema = _defs()[schema["$ref"].rsplit("/", 1)[1]]
        elif schema.get("allOf"):
            schema = schema["allOf"][0]
        else:
            return schema
    return None


def _root_schema(lines: list[str]) -> dict | None:
    api = next((m.group(1) for m in (re.match(r"^apiVersion:\s*(\S+)", x) for x in lines) if m), "")
    kind = next((m.group(1) for m in (re.match(r"^kind:\s*(\S+)", x) for x in lines) if m), "")
    group, _, version = api.rpartition("/")
    for schema in _defs().values():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            if (gvk.get("group", ""), gvk.get("version"), gvk.get("kind")) == (group, version, kind):
                return schema
    return None


@dataclass
class _Frame:
    shape: str  # object | map | list | any
    schema: dict | None
    indent: int  # where this frame's children start
    used: bool = False  # a line was placed under it

    def has_field(self, key: str) -> bool:
        return self.shape == "object" and key in (self.schema or {}).get("properties", {})

    def open(self) -> bool:  # takes any key
        return self.shape in ("map", "any")

    def child(self, key: str) -> dict | None:
        if self.shape == "object":
            return _resolve((self.schema or {}).get("properties", {}).get(key))
        if self.shape == "map":
            return _resolve((self.schema or {}).get("additionalProperties"))
        return None


def _frame_for(schema: dict | None, indent: int) -> _Frame:
    if schema is None:
        return _Frame("any", None, indent)
    types = schema.get("type") or []
    types = [types] if isinstance(types, str) else types
    if "array" in types:
        return _Frame("list", _resolve(schema.get("items")), indent)
    if schema.get("properties"):
        return _Frame("object", schema, indent)
    if "additionalProperties" in schema or "object" in types:
        return _Frame("map", schema, indent)
    return _Frame("any", None, indent)


def _item_fits(frame: _Frame, key: str | None) -> bool:
    item = frame.schema
    if item is None:
        return True
    if key is None:
        return not item.get("properties")
    return key in item.get("properties", {}) or "additionalProperties" in item


def reindent(lines: list[str]) -> str:
    """Indent a document whose lines all start at column 0, as the schema of its kind nests them."""
    stack = [_Frame("object", _root_schema(lines), 0)]
    out: list[str] = []
    block_indent: int | None = None
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            out.append(" " * stack[-1].indent + line)
            continue
        item = line.startswith("- ") or line == "-"
        body = line[2:].strip() if item else line
        m = KEY_LINE.match(body)
        if block_indent is not None and not item and not m:
            out.append(" " * block_indent + line)  # continuation of a block scalar
            continue
        block_indent = None
        key = body.split(":", 1)[0] if m else None
        prefix = ""
        if item:
            if stack[-1].shape == "any" and not stack[-1].used:  # an unknown field holding a list
                stack[-1] = _Frame("list", None, stack[-1].indent)
            lists = [i for i, f in enumerate(stack) if f.shape == "list"]
            j = next((i for i in reversed(lists) if _item_fits(stack[i], key)), lists[-1] if lists else 0)
            del stack[j + 1:]
            lst = stack[-1]
            if key is None:
                out.append(" " * lst.indent + line)
                continue
            stack.append(_frame_for(lst.schema, lst.indent + 2))
            prefix, indent = "- ", lst.indent
        else:
            # A map that was just opened takes the key (`attributes:` then `nodeName:` names an attribute);
            # otherwise the nearest enclosing object with that field, then the nearest open map.
            j = len(stack) - 1 if stack[-1].shape == "map" and not stack[-1].used else None
            if j is None:
                j = next((i for i in range(len(stack) - 1, -1, -1) if stack[i].has_field(key or "")), None)
            if j is None:
                j = next((i for i in range(len(stack) - 1, -1, -1) if stack[i].open()), len(stack) - 1)
            del stack[j + 1:]
            indent = stack[-1].indent
        value = body.split(":", 1)[1].strip() if m else ""
        stack[-1].used = True
        out.append(" " * indent + prefix + body)
        if m and (not value or value.startswith("#")):
            child = stack[-1].child(key or "")
            stack.append(_frame_for(child, stack[-1].indent + 2))
        elif value in ("|", "|-", "|+", ">", ">-", ">+"):
            block_indent = stack[-1].indent + 2
    return "\n".join(out) + "\n"


# --- expectations ---

ACCEPT, REJECT, UNSERVED, OUT_OF_SCOPE, FRAGMENT = "accept", "reject", "unserved", "out-of-scope", "fragment"


@dataclass
class Expect:
    outcome: str
    reason: str = ""
    errors: list[str] = field(default_factory=list)  # what kubectl must print (substrings)


INCOMPLETE = "incomplete: `...` placeholders stand for omitted fields"
NO_NODE_SELECTION = ("spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                     "`perDeviceNodeSelection` is required")
COUNTERS_ONLY = ("a sharedCounters-only slice with none of nodeName/nodeSelector/allNodes/perDeviceNodeSelection; "
                 "upstream validateResourceSliceSpec requires exactly one of them on every slice")
V1BETA1_SHAPE = ("written in the v1beta1 request shape (deviceClassName and selectors directly on the request) "
                 "under apiVersion resource.k8s.io/v1, where they belong under `exactly`; kubectl's default "
                 "Strict field validation rejects the unknown fields")
SPEC_USED = "shows quota usage by putting `used` (a status field) under spec; Strict field validation rejects it"


def _strict(kind: str, *paths: str) -> list[str]:
    fields = ", ".join(f'unknown field "{p}"' for p in paths)
    return [f'Error from server (BadRequest): error when creating "STDIN": {kind} in version "v1" cannot be handled '
            f"as a {kind}: strict decoding error: {fields}"]


V1BETA1_CLAIM = Expect(REJECT, V1BETA1_SHAPE, _strict("ResourceClaim", "spec.devices.requests[0].deviceClassName",
                                                       "spec.devices.requests[0].selectors"))
COUNTER_SLICE = Expect(REJECT, COUNTERS_ONLY, [NO_NODE_SELECTION])

EXPECTED: dict[str, Expect] = {
    # KEP-5004 (DRA extended resource)
    "000_2164117d21b12c9e#0": Expect(OUT_OF_SCOPE, "apps/v1 Deployment asking for an extended resource: no DRA "
                                                   "field, and dramock serves no apps group"),
    "000_2164117d21b12c9e#1": Expect(ACCEPT),
    "000_2164117d21b12c9e#2": Expect(REJECT, "incomplete: the slice has no spec.pool (name and resourceSliceCount "
                                             "are required)",
                                     ['The ResourceSlice "gke-drabeta-n1-standard-4-2xt4-346fe653-zrw2-gpu.coqj92d" '
                                      "is invalid", "* spec.pool.name: Required value",
                                      "* spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero"]),
    "000_2164117d21b12c9e#3": Expect(ACCEPT),
    "000_2164117d21b12c9e#4": Expect(ACCEPT),
    "000_2164117d21b12c9e#5": Expect(REJECT, SPEC_USED, _strict("ResourceQuota", "spec.used")),
    "000_2164117d21b12c9e#6": Expect(ACCEPT),
    "000_2164117d21b12c9e#7": Expect(REJECT, SPEC_USED, _strict("ResourceQuota", "spec.used")),
    "000_2164117d21b12c9e#fragment0": Expect(FRAGMENT, "a Pod status snippet in the KEP's early field names "
                                                       "(requestMapping[].extendedResourceName; 1.37 has "
                                                       "requestMappings[].resourceName)"),
    # KEP-5075 (consumable capacity): fragments without apiVersion, indentation lost
    "001_29566050729fee7d#0": Expect(REJECT, INCOMPLETE + " (metadata); no apiVersion"),
    "001_29566050729fee7d#1": Expect(REJECT, INCOMPLETE + " (metadata); no apiVersion"),
    "001_29566050729fee7d#2": Expect(REJECT, INCOMPLETE + " (metadata, results, devices); no apiVersion"),
    "001_29566050729fee7d#3": Expect(REJECT, INCOMPLETE + " (metadata); no apiVersion"),
    "001_29566050729fee7d#fragment0": Expect(FRAGMENT, "the selectors of a DeviceClass spec, indentation lost"),
    # kubernetes.io DRA docs page, an older revision
    "002_220bbdbb0b6fee64#0": Expect(UNSERVED),
    "002_220bbdbb0b6fee64#1": Expect(UNSERVED),
    "002_220bbdbb0b6fee64#2": Expect(ACCEPT),
    "002_220bbdbb0b6fee64#3": Expect(REJECT, INCOMPLETE + " (the rest of the pod spec, containers included)"),
    # KEP-4381 (structured parameters)
    "003_10c8e9635341db63#0": Expect(ACCEPT),
    "003_10c8e9635341db63#1": Expect(ACCEPT),
    "003_10c8e9635341db63#2": Expect(ACCEPT),
    "003_10c8e9635341db63#3": Expect(REJECT, INCOMPLETE + " (metadata, pool)"),
    "003_10c8e9635341db63#fragment0": Expect(FRAGMENT, "requests of a claim spec in the pre-v1 shape, for the quota "
                                                       "discussion (`allocationMode: exactCount`)"),
    "003_10c8e9635341db63#fragment1": Expect(FRAGMENT, "requests of a claim spec in the pre-v1 shape, for the quota "
                                                       "discussion (`allocationMode: all`)"),
    # KEP-5963 (device compatibility groups): indentation lost in the seed, recovered from the schema
    "004_4c87848cac35376d#0": Expect(ACCEPT),
    "004_4c87848cac35376d#1": COUNTER_SLICE,
    "004_4c87848cac35376d#2": Expect(ACCEPT),
    "004_4c87848cac35376d#3": V1BETA1_CLAIM,
    "004_4c87848cac35376d#4": V1BETA1_CLAIM,
    "004_4c87848cac35376d#5": COUNTER_SLICE,
    "004_4c87848cac35376d#6": Expect(ACCEPT),
    "004_4c87848cac35376d#7": V1BETA1_CLAIM,
    "004_4c87848cac35376d#8": V1BETA1_CLAIM,
    "004_4c87848cac35376d#9": COUNTER_SLICE,
    "004_4c87848cac35376d#10": Expect(ACCEPT),
    "004_4c87848cac35376d#11": V1BETA1_CLAIM,
    "004_4c87848cac35376d#12": V1BETA1_CLAIM,
    "004_4c87848cac35376d#13": COUNTER_SLICE,
    "004_4c87848cac35376d#14": Expect(ACCEPT),
}


def _seed_files() -> list[Path]:
    return sorted(SEEDS.glob("*.txt")) if SEEDS.is_dir() else []


EXAMPLES: dict[str, Example] = {ex.id: ex for path in _seed_files() for ex in extract(path)}
def _order(example_id: str) -> tuple:
    stem, _, index = example_id.partition("#")
    return stem, index.startswith("fragment"), int(index.removeprefix("fragment"))


ALL_IDS = sorted(set(EXPECTED) | set(EXAMPLES), key=_order)


def _label(example_id: str) -> str:
    ex = EXAMPLES.get(example_id)
    return f"{example_id}-{ex.kind}-{ex.api_version.rpartition('/')[2] or 'none'}" if ex else example_id


def has_placeholder(text: str) -> bool:
    return any(line.strip() in ("...", "…") or re.search(r"<[^<>\n]*\.\.\.[^<>\n]*>|<[a-z][a-z -]*>", line)
               for line in text.splitlines())


def is_dra(ex: Example) -> bool:
    """A resource.k8s.io kind, or a core object the DRA flows of the specs use (pods, quotas, nodes)."""
    return ex.api_version.startswith("resource.k8s.io/") or ex.kind in DRA_KINDS | CORE_KINDS


def served(ex: Example) -> bool:
    group, _, version = ex.api_version.rpartition("/")
    if group == "resource.k8s.io":
        return version in SERVED_RESOURCE_VERSIONS
    return group == "" and version == "v1" and ex.kind in CORE_KINDS


def _describe(ex: Example) -> str:
    how = "indentation recovered from the schema" if ex.flattened else "as written"
    return f"{ex.id} ({SEEDS.name}/{ex.id.split('#')[0]}.txt line {ex.line}, {how}):\n{ex.text}"


@pytest.fixture(scope="module")
def seed_server(tmp_path_factory) -> Iterator[Server]:
    s = start_server(str(tmp_path_factory.mktemp("seeds")), "--runtime-config", RUNTIME_CONFIG)
    try:
        s.kubectl("create", "namespace", NAMESPACE)
        yield s
    finally:
        stop(s)


def _apply(server: Server, ex: Example):
    meta = ex.doc.get("metadata") if isinstance(ex.doc, dict) else None
    ns = [] if isinstance(meta, dict) and meta.get("namespace") else ["-n", NAMESPACE]
    return server.kubectl("apply", "--dry-run=server", *ns, "-f", "-", input=ex.text, check=False)


def test_seed_directory_exists() -> None:
    assert SEEDS.is_dir(), f"seed directory {SEEDS} does not exist: the spec examples cannot be checked"
    assert _seed_files(), f"no *.txt seed documents in {SEEDS}"


def test_every_example_is_classified() -> None:
    assert SEEDS.is_dir(), f"seed directory {SEEDS} does not exist"
    unknown = sorted(set(EXAMPLES) - set(EXPECTED))
    assert not unknown, "examples without an expectation (add them to EXPECTED):\n" + "\n".join(
        _describe(EXAMPLES[i]) for i in unknown)
    gone = sorted(set(EXPECTED) - set(EXAMPLES))
    assert not gone, f"expected examples no longer found in {SEEDS}: {gone}"


def test_placeholders_are_listed_as_incomplete() -> None:
    """Every example with `...`/`<...>` placeholders is classified as rejected-for-being-incomplete, and back."""
    with_placeholders = {i for i, ex in EXAMPLES.items() if has_placeholder(ex.text)}
    listed = {i for i, e in EXPECTED.items() if e.outcome == REJECT and e.reason.startswith(INCOMPLETE)}
    assert with_placeholders == listed & set(EXAMPLES)


def test_every_seed_has_examples() -> None:
    files = {p.stem for p in _seed_files()}
    assert files, f"no seed documents in {SEEDS}"
    assert files == {i.split("#")[0] for i in EXAMPLES}, "a seed document yielded no YAML example"


def test_reindent_follows_the_schema() -> None:
    flat = """apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
name: s
spec:
driver: d.example.com
pool:
name: p
resourceSliceCount: 1
nodeName: n
devices:
- name: a
attributes:
nodeName:
string: "an attribute named like a field of the spec"
consumesCounters:
- counterSet: c
compatibilityGroups:
- x
- y
counters:
mem:
value: "1"
- name: b
"""
    assert _is_flattened(flat.splitlines())
    assert yaml.safe_load(reindent(flat.splitlines())) == {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
        "spec": {"driver": "d.example.com", "pool": {"name": "p", "resourceSliceCount": 1}, "nodeName": "n",
                 "devices": [{"name": "a",
                              "attributes": {"nodeName": {"string": "an attribute named like a field of the spec"}},
                              "consumesCounters": [{"counterSet": "c", "compatibilityGroups": ["x", "y"],
                                                    "counters": {"mem": {"value": "1"}}}]},
                             {"name": "b"}]}}


@pytest.mark.parametrize("example_id", ALL_IDS, ids=[_label(i) for i in ALL_IDS])
def test_seed_example(example_id: str, seed_server: Server) -> None:
    assert SEEDS.is_dir(), f"seed directory {SEEDS} does not exist"
    ex = EXAMPLES.get(example_id)
    assert ex is not None, f"{example_id} is no longer in the seeds"
    want = EXPECTED.get(example_id)
    assert want is not None, f"no expectation for {_describe(ex)}"
    if want.outcome == FRAGMENT:
        # Not an object (no apiVersion/kind), so there is nothing kubectl could apply.
        assert want.reason and ex.fragment and not ex.api_version and not ex.kind, _describe(ex)
        flat = not any(line.startswith(" ") for line in ex.text.splitlines())
        assert isinstance(ex.doc, dict) or flat, f"a fragment that is not YAML: {_describe(ex)}"
        return
    if want.outcome == OUT_OF_SCOPE:
        assert want.reason and not is_dra(ex) and not served(ex), _describe(ex)
        return
    assert is_dra(ex), f"not a DRA example: {_describe(ex)}"
    if want.outcome == ACCEPT:
        assert ex.doc is not None and served(ex) and not has_placeholder(ex.text), _describe(ex)
        res = _apply(seed_server, ex)
        assert res.returncode == 0 and "created (server dry run)" in res.stdout, (
            f"kubectl apply rejected {_describe(ex)}\n{res.stdout}{res.stderr}")
        return
    if want.outcome == UNSERVED:
        assert ex.doc is not None and not served(ex), _describe(ex)
        group, _, version = ex.api_version.rpartition("/")
        assert group == "resource.k8s.io" and version.startswith("v1alpha") and not (
            version == "v1alpha3" and ex.kind == "DeviceTaintRule"), _describe(ex)
        res = _apply(seed_server, ex)
        msg = f'no matches for kind "{ex.kind}" in version "{ex.api_version}"'
        assert res.returncode != 0 and msg in res.stderr, f"{_describe(ex)}\n{res.stdout}{res.stderr}"
        assert "ensure CRDs are installed first" in res.stderr
        return
    assert want.outcome == REJECT and want.reason, example_id
    if want.reason.startswith(INCOMPLETE):
        assert has_placeholder(ex.text), f"no placeholder in {_describe(ex)}"
    if ex.doc is None or not want.errors:
        # Placeholders make the document unusable as YAML or as an object: nothing to apply.
        assert ex.parse_error or not ex.api_version, _describe(ex)
        return
    res = _apply(seed_server, ex)
    assert res.returncode != 0, f"accepted although {want.reason}: {_describe(ex)}\n{res.stdout}"
    missing = [e for e in want.errors if e not in res.stderr]
    assert not missing, f"{_describe(ex)}\nkubectl said:\n{res.stderr}\nmissing: {missing}"
