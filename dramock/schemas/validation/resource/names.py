"""DRA names: driver and pool names, share IDs (UUIDs), and attribute / capacity names (a C identifier,
optionally prefixed with a domain)."""

from __future__ import annotations

from dramock.schemas.validation.field import Cause, invalid_value, required, too_long
from dramock.schemas.validation.names import (
    C_IDENTIFIER_RE,
    is_c_identifier,
    is_dns1123_subdomain,
    validate_dns1123_subdomain,
)
from dramock.schemas.validation.resource.limits import (
    DEVICE_MAX_DOMAIN_LENGTH,
    DEVICE_MAX_ID_LENGTH,
    DRIVER_NAME_MAX_LENGTH,
    POOL_NAME_MAX_LENGTH,
)


def validate_driver_name(name: str, path: str) -> list[Cause]:
    """corevalidation.ValidateCSIDriverName: DRA driver names follow the CSI driver name rules."""
    errs: list[Cause] = []
    if not name:
        errs.append(required(path))
    if len(name) > DRIVER_NAME_MAX_LENGTH:
        errs.append(too_long(path, DRIVER_NAME_MAX_LENGTH))
    errs.extend(invalid_value(path, name, m) for m in is_dns1123_subdomain(name.lower()))
    return errs


def validate_pool_name(name: str, path: str) -> list[Cause]:
    if not name:
        return [required(path)]
    errs: list[Cause] = []
    if len(name) > POOL_NAME_MAX_LENGTH:
        errs.append(too_long(path, POOL_NAME_MAX_LENGTH))
    for part in name.split("/"):
        errs.extend(validate_dns1123_subdomain(part, path))
    return errs


def _validate_uid(uid: str, path: str) -> list[Cause]:
    """validateUID: google/uuid.Validate, then the lowercase RFC 4122 normalized form."""
    s = uid
    if len(s) == 45 and s[:9].lower() == "urn:uuid:":
        s = s[9:]
    elif len(s) == 38 and s[0] == "{" and s[-1] == "}":
        s = s[1:-1]
    if len(s) == 36:
        ok = all(s[i] == "-" for i in (8, 13, 18, 23)) and all(
            c in "0123456789abcdefABCDEF" for i, c in enumerate(s) if i not in (8, 13, 18, 23))
    elif len(s) == 32:
        ok = all(c in "0123456789abcdefABCDEF" for c in s)
    else:
        return [invalid_value(path, uid, f"error validating uid: invalid UUID length: {len(uid)}")]
    if not ok:
        return [invalid_value(path, uid, "error validating uid: invalid UUID format")]
    if len(uid) != 36 or uid != uid.lower():
        return [invalid_value(path, uid, "uid must be in RFC 4122 normalized form, "
                              "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters")]
    return []


def _validate_c_identifier(ident: str, path: str) -> list[Cause]:
    errs: list[Cause] = []
    if len(ident) > DEVICE_MAX_ID_LENGTH:
        errs.append(too_long(path, DEVICE_MAX_ID_LENGTH))
    errs.extend(invalid_value(path, ident, m) for m in is_c_identifier(ident))
    return errs


def validate_qualified_name(name: str, path: str) -> list[Cause]:
    """Attribute and capacity names: a C identifier, optionally prefixed with a domain and `/`."""
    if len(name) <= DEVICE_MAX_ID_LENGTH and C_IDENTIFIER_RE.fullmatch(name) is not None:  # a valid bare one
        return []
    parts = name.split("/")
    errs: list[Cause] = []
    if len(parts) == 1:
        errs.extend(_validate_c_identifier(parts[0], path))
    elif len(parts) == 2:
        if not parts[0]:
            errs.append(invalid_value(path, "", "the domain must not be empty"))
        else:
            errs.extend(validate_driver_name(parts[0], path))
        if not parts[1]:
            errs.append(invalid_value(path, "", "the name must not be empty"))
        else:
            errs.extend(_validate_c_identifier(parts[1], path))
    else:
        errs.append(invalid_value(path, name, "must not contain more than one slash"))
    return errs


def validate_fully_qualified_name(name: str, path: str) -> list[Cause]:
    errs = validate_qualified_name(name, path)
    if "/" not in name:
        errs.append(invalid_value(path, name, "a fully qualified name must be a domain and a name separated by a "
                                  "slash"))
    return errs


def _dv_fully_qualified_name(name: str, path: str) -> list[Cause]:
    """The declarative format=k8s-resource-fully-qualified-name (used where only it applies)."""
    errs: list[Cause] = []
    parts = name.split("/")
    if len(parts) == 1:
        errs.extend(_validate_c_identifier(parts[0], path))
    elif len(parts) == 2:
        if not parts[0]:
            errs.append(invalid_value(path, "", "prefix must not be empty"))
        else:
            if len(parts[0]) > DEVICE_MAX_DOMAIN_LENGTH:
                errs.append(too_long(path, DEVICE_MAX_DOMAIN_LENGTH))
            errs.extend(invalid_value(path, parts[0], "prefix: " + m) for m in is_dns1123_subdomain(parts[0]))
        if not parts[1]:
            errs.append(invalid_value(path, "", "name must not be empty"))
        else:
            errs.extend(_validate_c_identifier(parts[1], path))
    if "/" not in name:
        errs.append(invalid_value(path, name, "a fully qualified name must be a domain and a name separated by a "
                                  "slash"))
    return errs
