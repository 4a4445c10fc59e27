"""Refresh protos/k8s/ from checkouts of kubernetes/api, kubernetes/apimachinery and google/gnostic-models.

    python protos/k8s/import_upstream.py <kubernetes/api dir> <kubernetes/apimachinery dir> <gnostic-models dir>
    python protos/generate_k8s.py

What it takes over is the wire contract only, as facts: packages, messages, field names, numbers and
types from each `generated.proto` (comments and prose are left behind), trimmed to the messages the
served kinds reach. core/v1 is large, so it is cut to the closure of the kinds dramock serves.

From the Go types (`types.go` and friends) it takes the facts protobuf cannot carry and the JSON form
depends on, writing them to dramock/apiserver/pb/gojson.py:
  - a field's JSON name where it differs from its protobuf name,
  - fields embedded with `json:",inline"` (their members sit in the parent's JSON object),
  - fields whose zero value JSON keeps: Go pointers, and tags without `omitempty`,
  - messages that only wrap a Go slice type (`+protobuf.nullable=true`, e.g. `type ExtraValue []string`):
    on the wire `{items: [...]}`, in JSON the bare list.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FACTS = HERE.parent.parent / "dramock" / "apiserver" / "pb" / "gojson.py"

# (repository index, upstream path of generated.proto, Go package dir, roots; None = every message)
API, MACHINERY = 0, 1
CORE_ROOTS = ["Namespace", "NamespaceList", "Node", "NodeList", "Pod", "PodList", "ResourceQuota",
              "ResourceQuotaList", "Event", "EventList", "ConfigMap", "ConfigMapList", "Secret", "SecretList",
              "ServiceAccount", "ServiceAccountList", "Binding", "Service", "ServiceList"]
SOURCES = [
    (MACHINERY, "pkg/runtime/generated.proto", "pkg/runtime", None),
    (MACHINERY, "pkg/runtime/schema/generated.proto", "pkg/runtime/schema", None),
    (MACHINERY, "pkg/api/resource/generated.proto", "pkg/api/resource", None),
    (MACHINERY, "pkg/util/intstr/generated.proto", "pkg/util/intstr", None),
    (MACHINERY, "pkg/apis/meta/v1/generated.proto", "pkg/apis/meta/v1", None),
    (API, "core/v1/generated.proto", "core/v1", CORE_ROOTS),
    (API, "coordination/v1/generated.proto", "coordination/v1", None),
    (API, "events/v1/generated.proto", "events/v1", None),
    (API, "resource/v1/generated.proto", "resource/v1", None),
    (API, "resource/v1beta2/generated.proto", "resource/v1beta2", None),
    (API, "resource/v1beta1/generated.proto", "resource/v1beta1", None),
    (API, "resource/v1alpha3/generated.proto", "resource/v1alpha3", None),
    (API, "apidiscovery/v2/generated.proto", "apidiscovery/v2", None),  # aggregated discovery
    (API, "apps/v1/generated.proto", "apps/v1", None),
    (API, "batch/v1/generated.proto", "batch/v1", None),
    (API, "scheduling/v1alpha3/generated.proto", "scheduling/v1alpha3", []),  # what batch/v1 Job refers to
    (API, "scheduling/v1beta1/generated.proto", "scheduling/v1beta1", ["Workload", "WorkloadList", "PodGroup",
                                                                       "PodGroupList"]),
    (API, "autoscaling/v1/generated.proto", "autoscaling/v1", ["Scale"]),  # the scale subresource
    (API, "authentication/v1/generated.proto", "authentication/v1", None),
    (API, "authorization/v1/generated.proto", "authorization/v1", None),
    (API, "rbac/v1/generated.proto", "rbac/v1", None),
]
IMPORT_PREFIX = ("k8s.io/api/", "k8s.io/apimachinery/")

_MESSAGE = re.compile(r"^message (\w+) \{$")
# A message generated for a Go slice type: its comment carries this marker (other markers may follow).
_SLICE_WRAPPER = re.compile(r"^// \+protobuf\.nullable=true\n(?://[^\n]*\n)*message (\w+) \{", re.M)
_FIELD = re.compile(r"^\s*(optional|repeated)?\s*(map<\s*\w+\s*,\s*[\w.]+\s*>|[\w.]+)\s+(\w+)\s*=\s*(\d+)\s*;")


def show(repo: Path, path: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True, text=True,
                          check=True).stdout


def parse_proto(text: str) -> tuple[str, list[str], dict[str, list[str]]]:
    """(package, imports, message -> its field lines), comments dropped."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    package, imports, messages, current = "", [], {}, None
    for line in text.splitlines():
        line = line.split("//", 1)[0].rstrip()
        if not line.strip():
            continue
        if line.startswith("package "):
            package = line.split()[1].rstrip(";")
        elif line.startswith("import "):
            imports.append(line.split('"')[1])
        elif m := _MESSAGE.match(line):
            current = m.group(1)
            messages[current] = []
        elif line == "}":
            current = None
        elif current is not None:
            if not _FIELD.match(line):
                raise ValueError(f"unexpected line in message {current}: {line!r}")
            messages[current].append(line.strip())
    return package, imports, messages


def field_types(lines: list[str], package: str) -> list[str]:
    """Fully qualified message types the fields refer to."""
    out = []
    for line in lines:
        m = _FIELD.match(line)
        assert m
        typ = m.group(2)
        if typ.startswith("map<"):
            typ = typ[4:-1].split(",")[1].strip()
        if typ[0].isupper() or typ.startswith("."):
            out.append(typ.lstrip(".") if typ.startswith(".") else f"{package}.{typ}")
    return out


def go_structs(repo: Path, pkg_dir: str) -> dict[str, list[tuple[str, str, str]]]:
    """struct name -> [(Go type, json tag, protobuf tag)] from the package's non-test Go files."""
    names = subprocess.run(["git", "-C", str(repo), "ls-tree", "--name-only", f"HEAD:{pkg_dir}"],
                           capture_output=True, text=True, check=True).stdout.split()
    structs: dict[str, list[tuple[str, str, str]]] = {}
    for name in names:
        if not name.endswith(".go") or name.endswith("_test.go") or "generated" in name:
            continue
        current = None
        for line in show(repo, f"{pkg_dir}/{name}").splitlines():
            if m := re.match(r"^type (\w+) struct \{", line):
                current = structs.setdefault(m.group(1), [])
            elif line.startswith("}"):
                current = None
            elif current is not None and "protobuf:" in line:
                m = re.match(r'^\s*(\w+\s+)?(\S+)\s+`(.*)`', line)
                if m:
                    tags = dict(re.findall(r'(\w+):"([^"]*)"', m.group(3)))
                    json_tag = tags.get("json", "")
                    if m.group(1) is None and not json_tag.split(",")[0]:  # embedded, unnamed: inlined
                        json_tag = ",inline"
                    current.append((m.group(2), json_tag, tags.get("protobuf", "")))
    return structs


def main(api: Path, machinery: Path, gnostic: Path) -> int:
    repos = [api, machinery]
    parsed = {}  # upstream import path -> (package, imports, messages)
    slice_wrappers = set()  # fully qualified
    for idx, path, _pkg, _roots in SOURCES:
        prefix = "k8s.io/api/" if idx == API else "k8s.io/apimachinery/"
        text = show(repos[idx], path)
        parsed[prefix + path] = parse_proto(text)
        slice_wrappers |= {f"{parsed[prefix + path][0]}.{m}" for m in _SLICE_WRAPPER.findall(text)}
    by_package = {pkg: key for key, (pkg, _, _) in parsed.items()}

    # Which messages each file keeps: its roots' closure across every file (None roots: all of them).
    keep: dict[str, set[str]] = {key: set() for key in parsed}
    todo = []
    for idx, path, _pkg, roots in SOURCES:
        key = ("k8s.io/api/" if idx == API else "k8s.io/apimachinery/") + path
        package, _, messages = parsed[key]
        todo += [f"{package}.{m}" for m in (roots if roots is not None else messages)]
    while todo:
        full = todo.pop()
        package, name = full.rsplit(".", 1)
        key = by_package[package]
        if name in keep[key]:
            continue
        keep[key].add(name)
        todo += field_types(parsed[key][2][name], package)

    inline, keep_zero, renamed = [], [], {}
    for idx, path, pkg_dir, _roots in SOURCES:
        key = ("k8s.io/api/" if idx == API else "k8s.io/apimachinery/") + path
        package, imports, messages = parsed[key]
        used_imports = sorted(i for i in imports if i.startswith(IMPORT_PREFIX) and keep.get(i) and any(
            t.startswith(parsed[i][0] + ".") for m in keep[key] for t in field_types(messages[m], package)))
        out = [f"// Wire contract of {package}, taken as facts from upstream's {path}.",
               "// Regenerate with protos/k8s/import_upstream.py, then protos/generate_k8s.py.", "",
               'syntax = "proto2";', "", f"package {package};", ""]
        out += [f'import "{i}";' for i in used_imports]
        out += ["", f'option go_package = "{key.rsplit("/", 1)[0]}";', ""]
        for name in sorted(keep[key]):
            out.append(f"message {name} {{")
            out += [f"  {line}" for line in messages[name]]
            out += ["}", ""]
        dest = HERE / key
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text("\n".join(out))

        structs = go_structs(repos[idx], pkg_dir)
        for name in sorted(keep[key]):
            by_number = {m.group(4): m.group(3) for m in map(_FIELD.match, messages[name]) if m}
            for go_type, json_tag, pb_tag in structs.get(name, []):
                # The tag names the field ("bytes,1,opt,name=x"), except some embedded ones ("bytes,1,req").
                number = pb_tag.split(",")[1] if pb_tag.count(",") else ""
                pb_name = by_number.get(number, "")
                if not pb_name:
                    continue
                full = f"{package}.{name}.{pb_name}"
                json_name, *opts = json_tag.split(",")
                if "inline" in opts:
                    inline.append(full)
                    continue
                if json_name and json_name != pb_name:
                    renamed[full] = json_name
                if go_type.startswith("*") or "omitempty" not in opts:
                    keep_zero.append(full)

    wrappers = [w for w in slice_wrappers if w.rsplit(".", 1)[1] in keep[by_package[w.rsplit(".", 1)[0]]]]
    for w in wrappers:  # the JSON mapper relies on this shape
        package, name = w.rsplit(".", 1)
        assert [m.group(2, 3) for m in map(_FIELD.match, parsed[by_package[package]][2][name])] == [
            ("string", "items")], f"{w}: not a []string wrapper"

    spec = "openapiv2/OpenAPIv2.proto"
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", show(gnostic, spec), flags=re.S)
    text = re.sub(r"\n\s*\n+", "\n", text)
    (HERE / spec).parent.mkdir(parents=True, exist_ok=True)
    (HERE / spec).write_text(f"// gnostic's OpenAPI v2 document model, as facts from google/gnostic-models {spec}.\n"
                             + text.strip() + "\n")

    FACTS.parent.mkdir(parents=True, exist_ok=True)
    FACTS.write_text(
        '"""Go JSON facts protobuf descriptors do not carry (written by protos/k8s/import_upstream.py)."""\n\n'
        "# Embedded with `json:\",inline\"`: the member's fields sit in the parent's JSON object.\n"
        "INLINE = frozenset([\n" + "".join(f"    {f!r},\n" for f in sorted(inline)) + "])\n\n"
        "# JSON names that differ from the protobuf field name.\n"
        "JSON_NAMES = {\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in sorted(renamed.items())) + "}\n\n"
        "# Zero values JSON keeps (Go pointers, and tags without omitempty).\n"
        "KEEP_ZERO = frozenset([\n" + "".join(f"    {f!r},\n" for f in sorted(keep_zero)) + "])\n\n"
        "# Messages wrapping a Go slice type (`type ExtraValue []string`): JSON is the bare `items` list.\n"
        "SLICE_WRAPPERS = frozenset([\n" + "".join(f"    {f!r},\n" for f in sorted(wrappers)) + "])\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(Path(a) for a in sys.argv[1:4])))
