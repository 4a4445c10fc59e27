"""Serving the documents: bodies built once and cached with their hash/ETag, the /openapi/v3 index,
and the HTTP answers of /openapi/v2 (JSON or gnostic protobuf, by Accept) and /openapi/v3/<path>."""

from __future__ import annotations

import functools
import hashlib
import json

from dramock.registry import Registry

from . import v2_protobuf
from .definitions import Obj
from .documents import v2_document, v3_document, v3_paths

V2_CONTENT_TYPE = "application/json"
V3_CONTENT_TYPE = "application/json"


def _digest(body: bytes) -> str:
    """Upstream's OpenAPI hash: uppercase hex SHA-512 of the serialized document."""
    return hashlib.sha512(body).hexdigest().upper()


def _serialize(doc: Obj) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


def v2_bytes(registry: Registry | None = None) -> tuple[bytes, str]:
    """(JSON body, quoted ETag) of /openapi/v2. Built once per registry."""
    return _v2_bytes(registry or Registry.default())


@functools.cache
def _v2_bytes(registry: Registry) -> tuple[bytes, str]:
    body = _serialize(v2_document(registry))
    return body, f'"{_digest(body)}"'


def v3_bytes(path: str, registry: Registry | None = None) -> tuple[bytes, str] | None:
    """(JSON body, hash) of /openapi/v3/<path>; the hash is the `?hash=` value and, quoted, the ETag."""
    return _v3_bytes(path, registry or Registry.default())


@functools.cache
def _v3_bytes(path: str, registry: Registry) -> tuple[bytes, str] | None:
    doc = v3_document(path.strip("/"), registry)
    if doc is None:
        return None
    body = _serialize(doc)
    return body, _digest(body)


def v3_index(registry: Registry | None = None) -> Obj:
    """GET /openapi/v3: every group-version document with its content-addressed URL."""
    out: Obj = {}
    for p in v3_paths(registry):
        res = v3_bytes(p, registry)
        assert res is not None
        out[p] = {"serverRelativeURL": f"/openapi/v3/{p}?hash={res[1]}"}
    return {"paths": out}


def v3_index_bytes(registry: Registry | None = None) -> tuple[bytes, str]:
    return _v3_index_bytes(registry or Registry.default())


@functools.cache
def _v3_index_bytes(registry: Registry) -> tuple[bytes, str]:
    body = _serialize(v3_index(registry))
    return body, f'"{_digest(body)}"'


def v3_response(path: str, query_hash: str | None,
                registry: Registry | None = None) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body for GET /openapi/v3/<path>[?hash=...], as kube-openapi's handler answers.

    A stale hash redirects (301) to the current URL; a matching hash makes the response immutable.
    """
    res = v3_bytes(path, registry)
    if res is None:
        return 404, {"Content-Type": "text/plain; charset=utf-8"}, b"404 page not found\n"
    body, digest = res
    path = path.strip("/")
    if query_hash and query_hash != digest:
        return 301, {"Location": f"/openapi/v3/{path}?hash={digest}"}, b""
    headers = {"Content-Type": V3_CONTENT_TYPE, "ETag": f'"{digest}"', "Vary": "Accept"}
    if query_hash:
        headers["Cache-Control"] = "public, immutable"
        headers["Expires"] = "Thu, 31 Dec 2099 23:59:59 GMT"
    return 200, headers, body


# kube-openapi serves the gnostic protobuf for both spellings of its media type (the "@" one is older and
# not a valid MIME token), answering with the first.
_V2_PROTOBUF_TYPES = ("application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
                      "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")


def _v2_media_type(accept: str | None) -> str | None:
    """The media type /openapi/v2 answers for `accept` (highest q first, then the client's order), or None."""
    if not accept:
        return V2_CONTENT_TYPE
    ranked = []
    for i, clause in enumerate(accept.split(",")):
        parts = [p.strip() for p in clause.split(";")]
        q = next((p.split("=", 1)[1] for p in parts[1:] if p.replace(" ", "").startswith("q=")), "1")
        try:
            weight = float(q)
        except ValueError:
            weight = 1.0
        if weight > 0:
            ranked.append((-weight, i, parts[0].lower()))
    for _w, _i, mime in sorted(ranked):
        if mime in ("application/json", "application/*", "*/*"):
            return V2_CONTENT_TYPE
        if mime in _V2_PROTOBUF_TYPES:
            return _V2_PROTOBUF_TYPES[0]
    return None


def v2_protobuf_bytes(registry: Registry | None = None) -> tuple[bytes, str]:
    """The whole v2 document as gnostic's openapi.v2.Document, with its ETag."""
    return _v2_protobuf_bytes(registry or Registry.default())


@functools.cache
def _v2_protobuf_bytes(registry: Registry) -> tuple[bytes, str]:
    body = v2_protobuf.document(json.loads(v2_bytes(registry)[0]))
    return body, f'"{_digest(body)}"'


def v2_response(accept: str | None, if_none_match: str | None = None,
                registry: Registry | None = None) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body for GET /openapi/v2: JSON, or gnostic protobuf (what client-go's
    `OpenAPISchema()` asks for: kubectl explain's plaintext-openapiv2 output and kubectl's fallbacks)."""
    mime = _v2_media_type(accept)
    if mime is None:
        return 406, {"Content-Type": "text/plain; charset=utf-8"}, b"406 Not Acceptable\n"
    if mime != V2_CONTENT_TYPE:
        body, etag = v2_protobuf_bytes(registry)
        headers = {"Content-Type": mime, "ETag": etag, "Vary": "Accept"}
        if if_none_match and if_none_match.strip() == etag:
            return 304, headers, b""
        return 200, headers, body
    body, etag = v2_bytes(registry)
    headers = {"Content-Type": V2_CONTENT_TYPE, "ETag": etag, "Vary": "Accept"}
    if if_none_match and if_none_match.strip() == etag:
        return 304, headers, b""
    return 200, headers, body
