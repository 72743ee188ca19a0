"""Reading a request's JSON body, the one way every front does (SPEC §3): standard JSON, except
that an object naming a member twice is malformed (``{"title": "a", "title": "b"}``), where
Python's parser would quietly keep the last one."""
from __future__ import annotations

import json
from typing import Any, BinaryIO

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


def unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members: dict[str, Any] = {}
    for name, value in pairs:
        if name in members:
            raise ValueError(f"the object names {name!r} twice")
        members[name] = value
    return members


def loads(text: str | bytes) -> Any:
    """``json.loads`` refusing repeated member names and NaN or Infinity (not JSON)."""
    return json.loads(text, object_pairs_hook=unique_members, parse_constant=refuse_constant)


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
