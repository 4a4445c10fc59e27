"""The checks with a shortcut for the usual valid value still report every invalid one, at the boundaries
where the shortcut stops applying (lengths in bytes, not characters; semver; one value or several)."""

from __future__ import annotations

import pytest

from dramock.schemas.validation import names
from dramock.schemas.validation.resource.attributes import _validate_device_attribute
from dramock.schemas.validation.resource.names import validate_qualified_name


def reasons(causes: list) -> list[str]:
    return [c["reason"] for c in causes]


@pytest.mark.parametrize("attribute,want", [
    ({"int": 1}, []),
    ({"bool": False}, []),
    ({"string": "x" * 64}, []),
    ({"string": "x" * 65}, ["FieldValueTooLong"]),
    ({"string": "é" * 32}, []),  # 64 bytes
    ({"string": "é" * 33}, ["FieldValueTooLong"]),  # 33 characters, 66 bytes
    ({"string": 5}, []),  # (a wrong type is the decoder's to refuse)
    ({"version": "1.0.0"}, []),
    ({"version": "1.0.0-rc.1+build.5"}, []),
    ({"version": "1.0"}, ["FieldValueInvalid"]),
    ({"version": "01.0.0"}, ["FieldValueInvalid"]),
    ({"version": "1.0.0-" + "a" * 60}, ["FieldValueTooLong"]),
    ({"version": 1}, ["FieldValueInvalid"]),
    ({"int": None}, ["FieldValueInvalid"]),
    ({"other": 1}, ["FieldValueInvalid"]),
    ({"int": 1, "bool": True}, ["FieldValueInvalid"]),
    ({"strings": []}, ["FieldValueInvalid"]),
])
def test_device_attribute(attribute: dict, want: list[str]) -> None:
    assert reasons(_validate_device_attribute(attribute, "spec.devices[0].attributes[a]")) == want


@pytest.mark.parametrize("name,want", [
    ("a" * 32, []),
    ("a" * 33, ["FieldValueTooLong"]),
    ("_x9", []),
    ("9x", ["FieldValueInvalid"]),
    ("dra.example.com/x", []),
    ("Dra.Example.com/x", []),  # (driver names are checked lower-cased)
    ("dra.example.com/9", ["FieldValueInvalid"]),
    ("a/b/c", ["FieldValueInvalid"]),
    ("", ["FieldValueInvalid"]),
])
def test_qualified_attribute_name(name: str, want: list[str]) -> None:
    assert reasons(validate_qualified_name(name, "spec.devices[0].attributes")) == want


@pytest.mark.parametrize("check,value,errors", [
    (names.is_dns1123_label, "a" * 63, 0), (names.is_dns1123_label, "a" * 64, 1),
    (names.is_dns1123_label, "A", 1), (names.is_dns1123_label, "a\n", 1), (names.is_dns1123_label, "", 1),
    (names.is_dns1123_subdomain, "a." * 126 + "a", 0), (names.is_dns1123_subdomain, "a." * 127, 2),
    (names.is_dns1123_subdomain, "a." * 127 + "a", 1),
    (names.is_qualified_name, "a" * 63, 0), (names.is_qualified_name, "a" * 64, 1),
    (names.is_qualified_name, "example.com/" + "a" * 63, 0), (names.is_qualified_name, "/a", 1),
    (names.is_qualified_name, "-a", 1), (names.is_qualified_name, "", 2),
    (names.is_label_value, "", 0), (names.is_label_value, "a" * 63, 0), (names.is_label_value, "a" * 64, 1),
    (names.is_label_value, "a-", 1),
    (names.is_c_identifier, "a_1", 0), (names.is_c_identifier, "1a", 1),
])
def test_name_rules(check, value: str, errors: int) -> None:
    assert len(check(value)) == errors
    wrapped = {names.is_dns1123_label: names.validate_dns1123_label,
               names.is_dns1123_subdomain: names.validate_dns1123_subdomain,
               names.is_qualified_name: names.validate_label_name,
               names.is_label_value: names.validate_label_value}.get(check)
    if wrapped is not None:
        assert [c["message"] for c in wrapped(value, "f")] == [f'Invalid value: "{value}": {m}' for m in check(value)]
