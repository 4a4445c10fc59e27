"""Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) both ways, driven by the message descriptors.

The messages are upstream's generated.proto contracts (protos/k8s/, compiled into dramock.apiserver.pb).
One mapper turns a message into the dict its JSON encoding gives and back, with Kubernetes' own rules:

- `resource.Quantity` is its string; `intstr.IntOrString` an int or a string; `runtime.RawExtension` and
  `meta/v1.FieldsV1` carry raw JSON bytes; `meta/v1.Time` is {seconds, nanos} on the wire and RFC 3339 in
  JSON (whole seconds; `MicroTime` keeps microseconds); `meta/v1.Duration` is nanoseconds and Go's
  duration string.
- Presence: Go writes every non-pointer scalar, zero or not, so a zero on the wire means "unset" unless
  the Go field is a pointer or its JSON tag lacks omitempty (gojson.KEEP_ZERO). Value structs that come
  out empty are dropped; pointer structs (`emptyDir: {}`) stay. Repeated fields and maps have no
  presence: empty ones are absent.
- Embedded structs (`json:",inline"`, gojson.INLINE) merge into the parent's JSON object.
- Messages generated for Go slice types (`Verbs`, `ExtraValue`; gojson.SLICE_WRAPPERS) are their list.

A body is the magic `k8s\\x00` and a `runtime.Unknown` envelope whose `raw` holds the object's message.
A watch stream (`;stream=watch`) is 4-byte big-endian length-prefixed frames, each a bare `WatchEvent`
whose object's raw is the enveloped object, as upstream's raw stream serializer writes them.
"""

from __future__ import annotations

import base64
import calendar
import json
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import import_module
from pathlib import Path
from typing import Any, cast

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.unknown_fields import UnknownFieldSet

from ..errors import APIError, bad_request, internal
from .pb import gojson
from .pb.k8s.io.apimachinery.pkg.apis.meta.v1 import generated_pb2 as meta_v1
from .pb.k8s.io.apimachinery.pkg.runtime import generated_pb2 as runtime_pb

Obj = dict[str, Any]

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
WATCH_MEDIA_TYPE = MEDIA_TYPE + ";stream=watch"
MAGIC = b"k8s\x00"

_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
_TIME, _MICRO_TIME, _DURATION, _FIELDS_V1 = (f"{_META}.{n}" for n in ("Time", "MicroTime", "Duration", "FieldsV1"))
_QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
_RAW_EXTENSION = "k8s.io.apimachinery.pkg.runtime.RawExtension"

# API group -> protobuf package prefix (the version is appended).
_PACKAGES = {"": "k8s.io.api.core", "resource.k8s.io": "k8s.io.api.resource",
             "coordination.k8s.io": "k8s.io.api.coordination", "events.k8s.io": "k8s.io.api.events",
             "apidiscovery.k8s.io": "k8s.io.api.apidiscovery", "meta.k8s.io": "k8s.io.apimachinery.pkg.apis.meta",
             "apps": "k8s.io.api.apps", "batch": "k8s.io.api.batch", "autoscaling": "k8s.io.api.autoscaling",
             "authentication.k8s.io": "k8s.io.api.authentication",
             "authorization.k8s.io": "k8s.io.api.authorization",
             "rbac.authorization.k8s.io": "k8s.io.api.rbac", "scheduling.k8s.io": "k8s.io.api.scheduling"}
# meta/v1 kinds every group version registers (metav1.AddToGroupVersion), whatever apiVersion names them.
# The legacy discovery documents are meta/v1 types as well.
_META_KINDS = frozenset({"Status", "DeleteOptions", "WatchEvent", "ListOptions", "GetOptions", "CreateOptions",
                         "UpdateOptions", "PatchOptions", "APIVersions", "APIGroupList", "APIGroup",
                         "APIResourceList"})

_POOL = descriptor_pool.Default()


def _register_contracts() -> None:
    """Import every compiled contract under pb/k8s: importing a module adds its messages to the pool."""
    root = Path(__file__).resolve().parent / "pb"
    for module in sorted((root / "k8s").rglob("generated_pb2.py")):
        import_module(f"{__package__}.pb." + ".".join(module.relative_to(root).with_suffix("").parts))


_register_contracts()


def _descriptor(cls_or_msg: Message | type[Message]) -> Descriptor:
    """A message's descriptor. The stubs also name upb's descriptor class, which the runtime's `Descriptor`
    accepts as an instance (its metaclass says so)."""
    return cast(Descriptor, cls_or_msg.DESCRIPTOR)


def message_class(api_version: str, kind: str) -> type[Message] | None:
    """The generated class for (apiVersion, kind), or None when no served contract defines it."""
    group, _, version = api_version.rpartition("/")
    if kind in _META_KINDS or group == "meta.k8s.io":
        full = f"{_META}.{kind}"
    elif group in _PACKAGES:
        full = f"{_PACKAGES[group]}.{version}.{kind}"
    else:
        return None
    try:
        return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(full))
    except KeyError:
        return None


# ---------------------------------------------------------------- the descriptor-driven mapper

@dataclass(frozen=True)
class _Field:
    name: str  # protobuf
    json: str
    number: int
    repeated: bool
    is_map: bool
    inline: bool
    keep_zero: bool
    message: Descriptor | None  # the value's message type (a map's value type for maps)
    bytes_: bool  # a bytes scalar (base64 in JSON)


@dataclass(frozen=True)
class _Plan:
    fields: tuple[_Field, ...]
    by_number: dict[int, _Field]
    # JSON name -> (inlined fields to descend through, the field): members of inlined structs included.
    by_json: dict[str, tuple[tuple[str, ...], _Field]]


_PLANS: dict[str, _Plan] = {}


def _plan(desc: Descriptor) -> _Plan:
    plan = _PLANS.get(desc.full_name)
    if plan is None:
        fields = []
        for fd in desc.fields:
            full = f"{desc.full_name}.{fd.name}"
            entry = fd.message_type if fd.message_type is not None and fd.message_type.GetOptions().map_entry else None
            value = entry.fields_by_name["value"] if entry is not None else fd
            fields.append(_Field(
                fd.name, gojson.JSON_NAMES.get(full, fd.name), fd.number,
                fd.is_repeated, entry is not None, full in gojson.INLINE, full in gojson.KEEP_ZERO,
                value.message_type, value.type == FieldDescriptor.TYPE_BYTES))
        by_json: dict[str, tuple[tuple[str, ...], _Field]] = {}
        for f in fields:
            if f.inline and f.message is not None:
                for name, (chain, member) in _plan(f.message).by_json.items():
                    by_json.setdefault(name, ((f.name, *chain), member))
            else:
                by_json[f.json] = ((), f)
        plan = _PLANS[desc.full_name] = _Plan(tuple(fields), {f.number: f for f in fields}, by_json)
    return plan


def to_json(msg: Message) -> Obj:
    """The dict the message's JSON encoding gives. Malformed special values raise APIError 400."""
    return _message_to_json(msg, "")


def _message_to_json(msg: Message, path: str) -> Obj:
    desc = _descriptor(msg)
    _check_wire_types(msg, desc, path)
    by_number = _plan(desc).by_number
    out: Obj = {}
    for fd, values in msg.ListFields():  # set fields only (and non-empty repeated ones)
        f = by_number[fd.number]
        if f.is_map:
            where = _join(path, f.json)
            out[f.json] = {_text(k): _value_to_json(f, v, where) for k, v in values.items()}
        elif f.repeated:
            out[f.json] = [_value_to_json(f, v, path) for v in values]
        else:
            value = _value_to_json(f, values, path)
            if f.inline:
                out.update(value)
            elif value is not None and (f.keep_zero or not (value is False or value == 0 or value == ""
                                                           or value == {})):
                out[f.json] = value
    return out


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _check_wire_types(msg: Message, desc: Descriptor, path: str) -> None:
    """A known field number with the wrong wire type lands among the unknown fields; upstream rejects it."""
    unknown = UnknownFieldSet(msg)
    for i in range(len(unknown)):
        number = unknown[i].field_number
        if desc.fields_by_number.get(number) is not None:
            raise bad_request(f"malformed protobuf request body: wrong wire type for "
                              f"{_join(path, desc.fields_by_number[number].name)}")


def _value_to_json(f: _Field, value: Any, path: str) -> Any:
    if f.message is None:
        if f.bytes_:
            return base64.b64encode(value).decode("ascii")
        return _text(value)
    where = _join(path, f.json)
    special = _SPECIAL_TO_JSON.get(f.message.full_name)
    if special is not None:
        return special(value, where)
    return _message_to_json(value, where)


def _text(value: Any) -> Any:
    """upb hands a proto2 string that is not UTF-8 over as bytes; Go's JSON writes U+FFFD instead."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def from_json(obj: Obj, cls: type[Message]) -> Message:
    """The message for a JSON-shape dict (fields the contract lacks are left out, as a Go client would)."""
    msg = cls()
    _fill(msg, obj, "")
    return msg


def _fill(msg: Message, obj: Obj, path: str) -> None:
    if not isinstance(obj, dict):
        raise bad_request(f"{path or 'object'}: expected an object, got {type(obj).__name__}")
    by_json = _plan(_descriptor(msg)).by_json
    for key, value in obj.items():
        entry = by_json.get(key)
        if entry is None or value is None:
            continue  # a field the contract lacks, or JSON null (Go's zero)
        chain, f = entry
        target_msg: Any = msg  # a generated message: its fields are attributes the stubs cannot name
        for name in chain:  # into the inlined struct that holds this member
            target_msg = getattr(target_msg, name)
            target_msg.SetInParent()
        if f.is_map:
            target = getattr(target_msg, f.name)
            for k, v in value.items():
                if f.message is None:
                    target[k] = _scalar_from_json(f, v, path)
                else:
                    _value_into(f, target[k], v, _join(path, f"{f.json}[{k}]"))
        elif f.repeated:
            target = getattr(target_msg, f.name)
            if f.message is None:
                target.extend(_scalar_from_json(f, v, path) for v in value)
            else:
                where = _join(path, f.json)
                for v in value:
                    _value_into(f, target.add(), v, where)
        elif f.message is None:
            setattr(target_msg, f.name, _scalar_from_json(f, value, path))
        else:
            sub = getattr(target_msg, f.name)
            _value_into(f, sub, value, _join(path, f.json))
            sub.SetInParent()


def _scalar_from_json(f: _Field, value: Any, path: str) -> Any:
    if f.bytes_:
        try:
            return base64.b64decode(value, validate=True)
        except (ValueError, TypeError) as e:
            raise bad_request(f"{_join(path, f.json)}: illegal base64 data: {e}")
    return value


def _value_into(f: _Field, target: Message, value: Any, path: str) -> None:
    assert f.message is not None
    special = _SPECIAL_FROM_JSON.get(f.message.full_name)
    if special is not None:
        special(target, value, path)
    else:
        _fill(target, value, path)


# ---- Kubernetes' special types

_EPOCH_ORDINAL = datetime(1970, 1, 1).toordinal()


def _time_to_json(msg: Any, path: str, micro: bool = False) -> str | None:
    if not msg.seconds and not msg.nanos:  # the zero Time: null in JSON, absent here
        return None
    try:
        t = datetime.fromtimestamp(msg.seconds, UTC)
    except (OverflowError, OSError, ValueError) as e:
        raise bad_request(f"{path} is out of range: {msg.seconds} seconds ({e})")
    text = f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    return f"{text}.{msg.nanos // 1000:06d}Z" if micro else text + "Z"


def _time_from_json(msg: Any, value: Any, path: str) -> None:
    if not isinstance(value, str):
        raise bad_request(f"{path}: expected an RFC 3339 time string")
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise bad_request(f'{path}: parsing time "{value}": not RFC 3339')
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    msg.seconds = calendar.timegm(t.utctimetuple())
    if t.microsecond:
        msg.nanos = t.microsecond * 1000


_DURATION_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 10**9,
                   "m": 60 * 10**9, "h": 3600 * 10**9}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def _duration_to_json(msg: Any, _path: str) -> str:
    """Go's time.Duration.String()."""
    ns = msg.duration
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns == 0:
        return "0s"
    if ns < 10**9:
        for unit, size in (("ms", 10**6), ("µs", 10**3), ("ns", 1)):
            if ns >= size:
                return sign + _trim(ns, size) + unit
    hours, rest = divmod(ns, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    text = _trim(rest, 10**9) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    return f"{sign}{minutes}m{text}" if minutes else sign + text


def _trim(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{frac:0{digits}d}".rstrip("0")


def _duration_from_json(msg: Any, value: Any, path: str) -> None:
    text = value if isinstance(value, str) else ""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    parts = _DURATION_PART.findall(body)
    if body == "0":
        parts = [("0", "s")]
    if not parts or "".join(n + u for n, u in parts) != body:
        raise bad_request(f'{path}: time: invalid duration "{value}"')
    msg.duration = sign * round(sum(float(n) * _DURATION_UNITS[u] for n, u in parts))


def _raw_json_to_json(raw: bytes, path: str) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise bad_request(f"{path} does not hold valid JSON: {e}")


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _int_or_string_from_json(msg: Any, value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise bad_request(f"{path}: expected an integer or a string")
    if isinstance(value, str):
        msg.type, msg.strVal = 1, value
    else:
        msg.type, msg.intVal = 0, value


def _set_quantity(msg: Any, value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise bad_request(f"{path}: quantities must match the regular expression "
                          "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    msg.string = value if isinstance(value, str) else json.dumps(value)


def _slice_from_json(msg: Any, value: Any, path: str) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise bad_request(f"{path}: expected a list of strings")
    msg.items.extend(value)


_SPECIAL_TO_JSON: dict[str, Callable[[Any, str], Any]] = {
    _TIME: _time_to_json,
    _MICRO_TIME: lambda m, p: _time_to_json(m, p, micro=True),
    _DURATION: _duration_to_json,
    _QUANTITY: lambda m, _p: _text(m.string) or "0",  # Go marshals the zero Quantity as "0"
    _INT_OR_STRING: lambda m, _p: _text(m.strVal) if m.type == 1 else m.intVal,
    _RAW_EXTENSION: lambda m, p: _raw_json_to_json(m.raw, p),
    _FIELDS_V1: lambda m, p: _raw_json_to_json(m.Raw, p),
    # Go slice types (`Verbs []string`, `ExtraValue []string`): the bare list.
    **{w: lambda m, _p: [_text(v) for v in m.items] for w in gojson.SLICE_WRAPPERS},
}
_SPECIAL_FROM_JSON: dict[str, Callable[[Any, Any, str], None]] = {
    _TIME: _time_from_json,
    _MICRO_TIME: _time_from_json,
    _DURATION: _duration_from_json,
    _QUANTITY: _set_quantity,
    _INT_OR_STRING: _int_or_string_from_json,
    _RAW_EXTENSION: lambda m, v, _p: setattr(m, "raw", _dumps(v)),
    _FIELDS_V1: lambda m, v, _p: setattr(m, "Raw", _dumps(v)),
    **{w: lambda m, v, p: _slice_from_json(m, v, p) for w in gojson.SLICE_WRAPPERS},
}


# ---------------------------------------------------------------- envelopes

def decode(body: bytes) -> Obj:
    """Decode an enveloped request body into the dict the same object would have as JSON.

    Raises `APIError` 400 for a malformed body and 415 for an envelope we cannot decode (a kind outside
    the served contracts, or a compressed/non-protobuf payload).
    """
    body = bytes(body)
    if not body.startswith(MAGIC):
        raise bad_request("the protobuf request body does not start with the 'k8s\\x00' prefix")
    envelope = runtime_pb.Unknown()
    try:
        envelope.ParseFromString(body[len(MAGIC):])
    except DecodeError as e:
        raise bad_request(f"malformed protobuf request body: {e}")
    api_version, kind = envelope.typeMeta.apiVersion, envelope.typeMeta.kind
    if not isinstance(api_version, str) or not isinstance(kind, str):
        raise bad_request("the protobuf request body's type meta is not UTF-8")
    if not kind:
        raise bad_request("the protobuf request body has no kind in its runtime.Unknown envelope")
    if envelope.contentEncoding:
        raise _unsupported(f"content encoding {envelope.contentEncoding!r} is not supported")
    if envelope.contentType not in ("", MEDIA_TYPE):
        raise _unsupported(f"the protobuf envelope's content type {envelope.contentType!r} is not supported")
    cls = message_class(api_version, kind)
    if cls is None:
        raise _unsupported(f"decoding {api_version}/{kind} from protobuf is not supported; "
                           f"send it as application/json")
    if not envelope.HasField("raw"):  # clients always send it; without it the body was cut short
        raise bad_request(f"the protobuf request body has no {kind} payload in its runtime.Unknown envelope")
    msg = cls()
    try:
        msg.ParseFromString(envelope.raw)
        obj = to_json(msg)
    except (DecodeError, RecursionError, UnicodeDecodeError) as e:  # proto2 strings are checked when read
        raise bad_request(f"malformed protobuf request body: {e}")
    return {"apiVersion": api_version, "kind": kind, **obj}


def _unsupported(message: str) -> APIError:
    return APIError(415, "UnsupportedMediaType", message)


def encode(obj: Obj) -> bytes:
    """The enveloped protobuf form of a JSON-shape object (apiVersion and kind pick its message)."""
    return Encoder(0).encode(obj)


class Encoder:
    """Encodes responses, remembering the bytes of each stored object it encoded.

    A stored object's message is a function of (message type, uid, resourceVersion), so the bytes a GET, a
    LIST and every watcher of a write need are made once. Only callers serving stored objects pass
    `stored=True`: a dry-run answer shares its uid and resourceVersion with a different stored object.
    A list's message is assembled on the wire from its items' bytes: a message is the concatenation of
    its fields, and each item is one length-delimited field.
    """

    def __init__(self, max_objects: int = 20_000):
        self.max_objects = max_objects
        self._cache: OrderedDict[tuple[str, str, str], bytes] = OrderedDict()

    def encode(self, obj: Obj, stored: bool = False) -> bytes:
        """The enveloped protobuf form of `obj`; 406 when no served contract defines its kind."""
        api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
        cls = message_class(api_version, kind)
        if cls is None:
            raise APIError(406, "NotAcceptable", f"{api_version}/{kind} has no protobuf encoding")
        desc = _descriptor(cls)
        items = desc.fields_by_name.get("items")
        try:
            if kind.endswith("List") and items is not None and items.message_type is not None:
                raw = self._list(obj, desc, items, stored)
            else:
                raw = self._object(obj, desc, stored)
        except (TypeError, ValueError, AttributeError) as e:  # a value the contract's type cannot hold
            raise internal(f"encoding {api_version}/{kind} as protobuf: {e}")
        envelope = runtime_pb.Unknown(raw=raw)
        envelope.typeMeta.apiVersion, envelope.typeMeta.kind = api_version, kind
        return MAGIC + envelope.SerializeToString()

    def watch_frame(self, event_type: str, obj: Obj, stored: bool = True) -> bytes:
        """One length-prefixed frame of a protobuf watch stream: a bare WatchEvent whose object is the
        enveloped object (upstream's raw stream serializer around its embedded serializer)."""
        event = meta_v1.WatchEvent(type=event_type)
        event.object.raw = self.encode(obj, stored)
        data = event.SerializeToString()
        return len(data).to_bytes(4, "big") + data

    def _object(self, obj: Obj, desc: Descriptor, stored: bool) -> bytes:
        metadata = obj.get("metadata")
        uid, rv = (metadata.get("uid"), metadata.get("resourceVersion")) if isinstance(metadata, dict) else (None, None)
        if not (stored and uid and rv and self.max_objects):
            return from_json(obj, message_factory.GetMessageClass(desc)).SerializeToString()
        key = (desc.full_name, uid, rv)
        raw = self._cache.get(key)
        if raw is None:
            raw = self._cache[key] = from_json(obj, message_factory.GetMessageClass(desc)).SerializeToString()
            if len(self._cache) > self.max_objects:
                self._cache.popitem(last=False)
        return raw

    def _list(self, obj: Obj, desc: Descriptor, items: FieldDescriptor, stored: bool) -> bytes:
        meta_field = desc.fields_by_name["metadata"]
        assert meta_field.message_type is not None and items.message_type is not None  # ListMeta, the item kind
        list_meta = from_json(obj.get("metadata") or {}, message_factory.GetMessageClass(meta_field.message_type))
        parts = [_length_delimited(meta_field.number, list_meta.SerializeToString())]
        tag = _varint(items.number << 3 | 2)
        for item in obj.get("items") or ():
            raw = self._object(item, items.message_type, stored)
            parts += (tag, _varint(len(raw)), raw)
        return b"".join(parts)


def _length_delimited(number: int, data: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _varint(n: int) -> bytes:
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)
