"""What the three patch formats share: the 400/422 answers upstream gives and decoding a raw body."""

from __future__ import annotations

import json
from typing import Any

from dramock.errors import APIError, bad_request, invalid
from dramock.jsonvalue import go_type_name

Obj = dict[str, Any]


# The strings upstream answers for patches it cannot apply (errors.NewGenericServerResponse(422, ...)
# keeps only its own generic message) and for unusable merge patches (jsonpatch.ErrBadJSONPatch).
GENERIC_422_MESSAGE = "the server rejected our request due to an error in our request"
BAD_JSON_PATCH = "Invalid JSON Patch"


def generic_unprocessable() -> APIError:
    """errors.NewGenericServerResponse(422, "", GroupResource{}, "", msg, 0, false): msg is dropped."""
    return APIError(422, "Invalid", GENERIC_422_MESSAGE, {})


def _invalid_patch_result(result: Any) -> APIError:
    """422 answered when the patched document no longer decodes into an object (e.g. became a list)."""
    text = json.dumps(result, separators=(",", ":"))
    why = (f"couldn't get version/kind; json parse error: json: cannot unmarshal {go_type_name(result)} "
           'into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
           'Kind string "json:\\"kind,omitempty\\"" }')
    return invalid("", "", "", [{"reason": "FieldValueInvalid", "field": "patch",
                                 "message": f"Invalid value: {json.dumps(text)}: {why}"}])


def _parse_body(raw: str | bytes | bytearray) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise bad_request(str(e)) from None
