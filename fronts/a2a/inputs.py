"""A2A requests read strictly, and refused in words (SPEC §3 for the A2A front): protobuf's
JSON parser names the field it failed on but quotes Python's own exception for why ("invalid
literal for int() with base 10", "'int' object is not iterable"); a refusal here says which
field and what it must be. The SDK's query-string reader skips a value an enum does not have
(``?status=nope`` read as no filter): an unknown value is refused as REST refuses it."""
from __future__ import annotations

import re
from typing import Any

from a2a.utils import errors as a2a
from a2a.utils.proto_utils import parse_params
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from fronts.a2a.errors import protocol

FAILED_ON = re.compile(r"Failed to parse (\w+) field")
KEPT = ("Unpaired surrogate", "Value out of range", "has no field named")  # protobuf's words, already clear
INTEGERS = {FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT32,
            FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64}


def field_of(descriptor: Descriptor, name: str) -> FieldDescriptor | None:
    return descriptor.fields_by_camelcase_name.get(name) or descriptor.fields_by_name.get(name)


def expected(field: FieldDescriptor, *, one: bool = False) -> str:
    """What a field takes, in words."""
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        return "an object"
    if field.is_repeated and not one:
        return f"a list of {expected(field, one=True).removeprefix('a ').removeprefix('an ')}s" \
            if field.type != FieldDescriptor.TYPE_ENUM else f"a list, each {expected(field, one=True)}"
    if field.type == FieldDescriptor.TYPE_ENUM:
        names = [value.name for value in field.enum_type.values if value.number != 0]
        return "one of " + ", ".join(names)
    if field.type in INTEGERS:
        return "an integer"
    if field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return "a number"
    if field.type == FieldDescriptor.TYPE_BOOL:
        return "true or false"
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        full = field.message_type.full_name
        return {"google.protobuf.Timestamp": "an RFC 3339 time (2026-01-01T00:00:00Z)",
                "google.protobuf.Struct": "an object", "google.protobuf.Value": "any JSON value"}.get(full, "an object")
    return "a string"


def in_words(kind: type[Message], error: json_format.ParseError) -> str:
    """The parse error as "Bad <field path>: must be <what it takes>."."""
    text = str(error)
    names = FAILED_ON.findall(text)
    descriptor: Descriptor | None = kind.DESCRIPTOR
    field = None
    for name in names:
        field = field_of(descriptor, name) if descriptor is not None else None
        if field is None:
            break
        descriptor = field.message_type
    if field is None or any(words in text for words in KEPT):
        return text
    return f"Bad {'.'.join(names)}: must be {expected(field)}."


def parsed(kind: type[Message], params: dict[str, Any]) -> Message:
    """``params`` as the operation's request; a field it does not have, or of the wrong type, is
    ``InvalidParamsError`` saying which and why (strict input, as REST's)."""
    try:
        return json_format.ParseDict(params, kind())
    except json_format.ParseError as error:
        raise protocol(a2a.InvalidParamsError, in_words(kind, error)) from None
    except (TypeError, ValueError, AttributeError) as error:  # what ParseDict lets through on odd input
        raise protocol(a2a.InvalidParamsError, f"The request does not fit {kind.DESCRIPTOR.name}.") from error


def from_query(kind: type[Message], query: Any) -> Message:
    """A GET's or DELETE's query string as the operation's request, each parameter a field of it,
    each enum's value one it has."""
    message = kind()
    descriptor = kind.DESCRIPTOR
    unknown = sorted(set(query) - {field.camelcase_name for field in descriptor.fields})
    if unknown:
        raise protocol(a2a.InvalidParamsError, f"Unknown query parameter(s): {', '.join(unknown)}.")
    for name in query:
        field = field_of(descriptor, name)
        if field.type == FieldDescriptor.TYPE_ENUM:
            values = [v for raw in query.getlist(name) for v in raw.split(",") if v]
            bad = [v for v in values if field.enum_type.values_by_name.get(v) is None]
            if bad:
                raise protocol(a2a.InvalidParamsError, f"Bad {name} {bad[0]!r}: must be {expected(field)}.")
    try:
        parse_params(query, message)
    except json_format.ParseError as error:
        raise protocol(a2a.InvalidParamsError, in_words(kind, error)) from None
    return message

