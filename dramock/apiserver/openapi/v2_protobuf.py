"""The Swagger 2.0 document as gnostic's `openapi.v2.Document` protobuf (what client-go's OpenAPISchema() reads).

Upstream serves /openapi/v2 as `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` by compiling
the JSON document into gnostic's model. The mapping follows gnostic's conventions:
- field `base_path` is JSON `basePath`, `_ref` is `$ref`; `x-*` keys go to `vendor_extension`;
- JSON objects keyed by arbitrary names (definitions, properties, responses, ...) are repeated
  `Named*` {name, value} pairs;
- values of any JSON type (`default`, `enum`, `example`, extensions) are `Any` holding their YAML text;
- `type`, `items` and `additionalProperties` are wrapped (TypeItem, ItemsItem, AdditionalPropertiesItem);
  parameters, responses and security definitions are oneofs picked by `in`, `$ref` or `type`.
"""

from __future__ import annotations

import json
from typing import Any

from ..pb.openapiv2 import OpenAPIv2_pb2 as oapi

Obj = dict[str, Any]
# A message of gnostic's generated model: its fields are attributes that no stub declares.
Message = Any

MEDIA_TYPE = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

# Messages that are nothing but a JSON object keyed by names.
_NAMED_MAPS = frozenset({"Definitions", "Properties", "ParameterDefinitions", "ResponseDefinitions",
                         "SecurityDefinitions", "Headers", "Examples", "Oauth2Scopes", "SecurityRequirement",
                         "Default", "VendorExtension"})
_NON_BODY = {"header": "header_parameter_sub_schema", "formData": "form_data_parameter_sub_schema",
             "query": "query_parameter_sub_schema", "path": "path_parameter_sub_schema"}
_SECURITY = {"basic": "basic_authentication_security", "apiKey": "api_key_security",
             "implicit": "oauth2_implicit_security", "password": "oauth2_password_security",
             "application": "oauth2_application_security", "accessCode": "oauth2_access_code_security"}


def document(doc: Obj) -> bytes:
    msg = oapi.Document()
    _fill(msg, doc)
    return msg.SerializeToString()


def _json_key(field_name: str) -> str:
    if field_name == "_ref":
        return "$ref"
    head, *rest = field_name.split("_")
    return head + "".join(p.title() for p in rest)


def _fill(msg: Message, value: Any) -> None:
    name = msg.DESCRIPTOR.name
    special = _WRAPPERS.get(name)
    if special is not None:
        special(msg, value)
        return
    if name in _NAMED_MAPS:
        _named(msg.additional_properties, value)
        return
    if name == "Any":
        msg.yaml = json.dumps(value, separators=(",", ":"))  # JSON is YAML, and what gnostic re-parses
        return
    fields = msg.DESCRIPTOR.fields_by_name
    for key, v in value.items():
        if key.startswith("x-") and "vendor_extension" in fields:
            _fill(msg.vendor_extension.add(name=key).value, v)
            continue
        f = fields.get(_snake(key))
        if f is None:
            if name == "Paths":
                _fill(msg.path.add(name=key).value, v)
            elif name == "Responses":
                _fill(msg.response_code.add(name=key).value, v)
            continue  # a key gnostic's model has no place for
        if f.message_type is None:
            if f.is_repeated:
                getattr(msg, f.name).extend(v)
            else:
                setattr(msg, f.name, v)
        elif f.is_repeated:
            for item in v:
                _fill(getattr(msg, f.name).add(), item)
        else:
            _fill(getattr(msg, f.name), v)


def _snake(key: str) -> str:
    if key == "$ref":
        return "_ref"
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def _named(target: Any, value: Obj) -> None:
    for k, v in value.items():
        entry = target.add(name=k)
        if isinstance(v, str):  # NamedString
            entry.value = v
        elif isinstance(v, list) and entry.DESCRIPTOR.fields_by_name["value"].message_type.name == "StringArray":
            entry.value.value.extend(v)
        else:
            _fill(entry.value, v)


def _type_item(msg: Message, value: Any) -> None:
    msg.value.extend(value if isinstance(value, list) else [value])


def _items_item(msg: Message, value: Any) -> None:
    for v in value if isinstance(value, list) else [value]:
        _fill(msg.schema.add(), v)


def _additional_properties(msg: Message, value: Any) -> None:
    if isinstance(value, bool):
        msg.boolean = value
    else:
        _fill(msg.schema, value)


def _schema_item(msg: Message, value: Obj) -> None:
    _fill(msg.file_schema if value.get("type") == "file" else msg.schema, value)


def _ref_or(field: str) -> Any:
    def fill(msg: Message, value: Obj) -> None:
        if "$ref" in value:
            _fill(msg.json_reference, value)
        else:
            _fill(getattr(msg, field), value)
    return fill


def _parameter(msg: Message, value: Obj) -> None:
    if value.get("in") == "body":
        _fill(msg.body_parameter, value)
    else:
        sub = _NON_BODY.get(value.get("in", ""), "query_parameter_sub_schema")
        _fill(getattr(msg.non_body_parameter, sub), value)


def _security(msg: Message, value: Obj) -> None:
    kind = value.get("flow") if value.get("type") == "oauth2" else value.get("type")
    _fill(getattr(msg, _SECURITY.get(kind or "", "api_key_security")), value)


_WRAPPERS = {
    "TypeItem": _type_item,
    "ItemsItem": _items_item,
    "AdditionalPropertiesItem": _additional_properties,
    "SchemaItem": _schema_item,
    "ResponseValue": _ref_or("response"),
    "ParametersItem": _ref_or("parameter"),
    "Parameter": _parameter,
    "SecurityDefinitionsItem": _security,
}
