"""Request body decoding (JSON, YAML, protobuf) and response media-type negotiation."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

import yaml

from dramock import errors, fastjson
from dramock.apiserver import bodies, protobuf
from dramock.jsonvalue import go_type_name
from dramock.registry.kind import Kind
from dramock.registry.kinds import known_group_versions
from dramock.schemas import structural

Obj = dict[str, Any]

MAX_BODY = 3 * 1024 * 1024  # upstream's limit for a JSON/YAML request body

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()


def parse_document(body: bytes, content_type: str, kind: Kind | None = None,
                   in_pieces: bool = False) -> tuple[Any, list[str]]:
    """Parse a JSON or YAML body; returns (value, duplicate field paths). Malformed input → 400.

    With `kind` (an object body for that kind), a malformed JSON body gets upstream's
    transformDecodeError wording, which names the expected kind and quotes the start of the body.
    """
    mt = media_type(content_type)
    yaml_body = mt in (YAML, APPLY_PATCH, "text/yaml", "application/x-yaml")
    try:
        if yaml_body:
            return bodies.load_json_or_yaml(body, in_pieces)
        return bodies.load_json(body, in_pieces)
    except bodies.BodyError as e:
        if yaml_body:
            raise errors.bad_request(f"error converting YAML to JSON: {e}")
        failure = str(e)
    except (ValueError, yaml.YAMLError) as e:
        if yaml_body:
            raise errors.bad_request(f"error converting YAML to JSON: yaml: {_short(e)}")
        failure = _go_json_error(e, body)
    detail = f"couldn't get version/kind; json parse error: {failure}"
    if kind is None:
        raise errors.bad_request(detail)
    raise errors.bad_request(f"the object provided is unrecognized (must be of type {kind.kind}): {detail} "
                             f"({_summary(body)})")


def parse_body(body: bytes, content_type: str) -> tuple[Any, list[str]]:
    """A subresource's body (a Binding, a Scale) as any client sends it: JSON, YAML or protobuf; not yet
    type-checked. Returns (value, duplicate field paths)."""
    if media_type(content_type) == PROTOBUF:
        return protobuf.decode(body), []
    return parse_document(body, content_type or JSON)


def _short(e: Exception) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _go_json_error(e: Exception, body: bytes) -> str:
    """Go's encoding/json wording for the common syntax errors."""
    if isinstance(e, json.JSONDecodeError):
        if e.pos >= len(body.rstrip()):
            return "unexpected end of JSON input"
        return f"invalid character {body[e.pos:e.pos + 1].decode('latin-1')!r} looking for beginning of value"
    return _short(e)


def _summary(body: bytes, limit: int = 30) -> str:
    text = body.decode("utf-8", "replace")
    return text if len(text) <= limit else text[:limit] + " ..."


@dataclass
class Decoded:
    obj: Obj
    warnings: list[str]


def decode_object(body: bytes, content_type: str, kind: Kind, field_validation: str,
                  definition: str | None = None, in_pieces: bool = False) -> Decoded:
    """Decode a create/update body for `kind`, applying upstream's strict-decoding rules."""
    mt = media_type(content_type)
    dups: list[str]
    if mt == PROTOBUF:
        obj, dups = protobuf.decode(body), []
    elif mt in (JSON, YAML, "", "*/*", "text/yaml", "application/x-yaml"):
        obj, dups = parse_document(body, content_type, kind, in_pieces)
    else:
        raise errors.unsupported_media_type(content_type)
    return check_object(obj, dups, kind, field_validation, definition)


def check_object(obj: Any, dups: list[str], kind: Kind, field_validation: str,
                 definition: str | None = None, fill_type_meta: bool = True) -> Decoded:
    """Type-check `obj` against the kind's definition and handle unknown/duplicate fields."""
    if not isinstance(obj, dict):
        raise errors.bad_request(f"Object '{kind.kind}' is not a JSON object" if obj is not None
                                 else "Object 'Kind' is missing in 'null'")
    check_type_meta(obj, kind, fill=fill_type_meta)
    report = check_types(obj, definition or kind.definition, kind.kind, kind.version)
    warnings: list[str] = []
    if dups or report.unknown:
        problems = [f'duplicate field "{p}"' for p in dups] + [f'unknown field "{p}"' for p in report.unknown]
        if field_validation == "Strict":
            raise errors.bad_request(
                f'{kind.kind} in version "{kind.version}" cannot be handled as a {kind.kind}: '
                f"strict decoding error: {', '.join(problems)}")
        if field_validation == "Warn":
            warnings = problems
    return Decoded(obj, warnings)


def check_types(obj: Any, definition: str, kind_name: str, version: str) -> structural.DecodeReport:
    """Go's decoding of `obj` into the type `definition` names: a value of the wrong type is a 400 in
    transformDecodeError's words; nulls become zero values; unknown fields are removed and reported."""
    if not isinstance(obj, dict):
        raise errors.bad_request(f'{kind_name} in version "{version}" cannot be handled as a {kind_name}: '
                                 f"json: cannot unmarshal {go_type_name(obj)} into Go value of type "
                                 f"{version}.{kind_name}")
    report = structural.check(obj, definition)
    if report.type_errors:
        raise errors.bad_request(
            f'{kind_name} in version "{version}" cannot be handled as a {kind_name}: {report.type_errors[0]}')
    return report


def check_type_meta(obj: Obj, kind: Kind, fill: bool = True) -> None:
    """apiVersion/kind in a body must name the endpoint's kind; missing ones are filled in (as upstream)."""
    av, k = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(av, (str, type(None))) or not isinstance(k, (str, type(None))):
        raise errors.bad_request(f"Object 'Kind' is missing in '{_summary(json.dumps(obj).encode(), 100)}'")
    if av:
        group, _, version = av.rpartition("/")
        if (group, version) not in _known_group_versions():
            raise errors.bad_request(
                f'{k or kind.kind} in version "{version}" cannot be handled as a {kind.kind}: no kind '
                f'"{k or kind.kind}" is registered for version "{av}" in scheme "pkg/api/legacyscheme/scheme.go:30"')
    if k and k != kind.kind:
        version = (av or kind.api_version).rpartition("/")[2]
        raise errors.bad_request(
            f'{k} in version "{version}" cannot be handled as a {kind.kind}: converting ({version}.{k}) to '
            f"({kind.group.split('.')[0] or 'core'}.{kind.kind}): unknown conversion")
    if av and av != kind.api_version:
        raise errors.bad_request(f"the API version in the data ({av}) does not match the expected API "
                                 f"version ({kind.api_version})")
    if fill:
        obj["apiVersion"], obj["kind"] = kind.api_version, kind.kind


@functools.cache
def _known_group_versions() -> frozenset[tuple[str, str]]:
    return frozenset(known_group_versions())  # fixed by the kinds this package defines


# ---- response negotiation ----

@dataclass(frozen=True)
class Accept:
    """What the client asked for: plain objects, a Table, or PartialObjectMetadata, as JSON, YAML or protobuf."""

    form: str = ""  # "", "Table", "PartialObjectMetadata", "PartialObjectMetadataList"
    version: str = "v1"  # meta.k8s.io version of Table / PartialObjectMetadata
    yaml: bool = False
    protobuf: bool = False
    json_fallback: bool = False  # protobuf was asked for, with application/json as a later choice


_PLAIN = Accept()  # no Accept header: plain JSON


def negotiate(accept_header: str | None) -> Accept:
    """The first clause of the client's Accept this server can answer (upstream's order; q is not ranked)."""
    return _negotiate(accept_header) if accept_header else _PLAIN


# A client sends the same Accept on every request: each distinct header is parsed once (a header nothing here
# can answer raises, and is not remembered).
@functools.lru_cache(maxsize=256)
def _negotiate(accept_header: str) -> Accept:
    for clause in accept_header.split(","):
        parts = [p.strip() for p in clause.split(";")]
        mt = parts[0].lower()
        params = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        as_ = params.get("as", "")
        if mt in (JSON, "*/*", "application/*", PROTOBUF, YAML):
            if as_:
                if params.get("g") != "meta.k8s.io" or as_ not in (
                        "Table", "PartialObjectMetadata", "PartialObjectMetadataList"):
                    continue
                if params.get("v", "v1") not in ("v1", "v1beta1"):
                    continue
                # Upstream renders a Table as JSON or YAML only (AllowsMediaTypeTransform): skip the clause.
                if as_ == "Table" and mt == PROTOBUF:
                    continue
                if mt == PROTOBUF and params.get("v", "v1") != "v1":
                    continue  # only meta.k8s.io/v1's PartialObjectMetadata has a compiled contract here
                return Accept(as_, params.get("v", "v1"), mt == YAML, mt == PROTOBUF)
            return Accept(yaml=mt == YAML, protobuf=mt == PROTOBUF,
                          json_fallback=mt == PROTOBUF and JSON in accept_header.lower())
        if mt.startswith("application/json") and not as_:
            return Accept()
    raise errors.not_acceptable(
        "only the following media types are accepted: application/json, application/yaml, "
        "application/vnd.kubernetes.protobuf")


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def warning_header(text: str) -> str:
    """A `Warning: 299 - "text"` value (RFC 7234 quoting). Control characters, which no header may carry,
    become spaces, as Go's net/http writes them."""
    text = _CONTROL.sub(" ", text).replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{text}"'


def negotiate_error(accept_header: str | None) -> Accept:
    """The form of a Status error: the negotiated media type, or JSON when negotiation itself fails."""
    try:
        return negotiate(accept_header)
    except errors.APIError:
        return Accept()


def dumps(obj: Any) -> str:
    return fastjson.dumps(obj)


def to_yaml(obj: Any) -> str:
    return yaml.safe_dump(obj, default_flow_style=False, sort_keys=True)
