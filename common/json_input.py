"""Reading a request's JSON body, the one way every front does (SPEC §3): standard JSON, except
that an object naming a member twice is malformed (``{"title": "a", "title": "b"}``), where
Python's parser would quietly keep the last one, and JSON nested more than MAX_JSON_DEPTH levels
deep is malformed too (Python's parser would recurse to its limit and raise)."""
from __future__ import annotations

import json
import math
import sys
from typing import Any, BinaryIO

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


MAX_JSON_DEPTH = 64


def json_depth_exceeds(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``body`` opens more than ``limit`` arrays or objects inside each other, counted
    outside strings. A cheap scan before parsing: Python's parser would recurse to its limit."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False  # too few openers to nest that deep: no scan needed
    depth, in_string, escaped = 0, False, False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return False


def unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members: dict[str, Any] = {}
    for name, value in pairs:
        if name in members:
            raise ValueError(f"the object names {name!r} twice")
        members[name] = value
    return members


def loads(text: str | bytes) -> Any:
    """``json.loads`` refusing repeated member names, NaN or Infinity (not JSON) and nesting past
    MAX_JSON_DEPTH, each as a ``ValueError``."""
    if json_depth_exceeds(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text):
        raise ValueError(f"the JSON nests more than {MAX_JSON_DEPTH} levels deep")
    return json.loads(text, object_pairs_hook=unique_members, parse_constant=refuse_constant,
                      parse_int=bounded_int, parse_float=bounded_float)


# I-JSON (RFC 7493 §2.2): a number past an IEEE double's range is not interoperable, and every
# field that takes a number here is bounded far below it; refusing it when the body is read
# keeps a 4,000-digit integer or 1e999 (Python's inf) from reaching code that converts it.
def bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > 308 and abs(int(digits)) > sys.float_info.max:
        raise ValueError(f"a number of {len(digits)} digits is past a double's range")
    return int(digits)


def bounded_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text[:40]} is past a double's range")
    return value


def refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


class StrictJSONParser(JSONParser):
    """DRF's JSON parser through ``loads``: a repeated member is ``400 malformed_json``."""

    def parse(self, stream: BinaryIO, media_type=None, parser_context=None) -> Any:
        encoding = (parser_context or {}).get("encoding", "utf-8")
        try:
            return loads(stream.read().decode(encoding))
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
