"""JSON encoding and decoding on orjson, with the standard library for what orjson does not take.

orjson writes what `json.dumps(obj, separators=(",", ":"), ensure_ascii=False)` writes, several times
faster; values it refuses (integers beyond 64 bits, non-string keys, other types) go through `json`.
`loads` is for JSON this project's own processes wrote (responses, watch events, stored rows); request
bodies from clients go through `dramock.apiserver.bodies`, which keeps Go's decoding rules.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

JSONDecodeError = (orjson.JSONDecodeError, json.JSONDecodeError)


def dumpb(obj: Any) -> bytes:
    try:
        return orjson.dumps(obj)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def dumps(obj: Any) -> str:
    try:
        return orjson.dumps(obj).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def loads(data: bytes | str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)  # what orjson refuses and Python reads (e.g. NaN); raises as json does
