"""What an A2A message asks for (SPEC §18): a task to create, or a note on a task.

The first text part's first line is the title, the rest its body; a data part may carry the
create's fields. A data part is a protobuf ``Struct``, whose numbers are doubles: an integral
value (``1.0``) is taken where an integer is expected; anything else goes on to the create's
own checks, which refuse it as they refuse it over REST.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format

from common.refusals import InvalidRequest

DATA_FIELDS = ("title", "body", "work_item_id", "priority", "labels", "blocked_by")
INTEGERS = ("priority",)
INTEGER_LISTS = ("blocked_by",)


@dataclass(frozen=True)
class Asked:
    """A message's request: ``note`` on task ``task`` (its body in ``data``) or a create."""

    data: dict[str, Any]
    task: str | None = None  # the number of the task a note is for

    @property
    def note(self) -> bool:
        return self.task is not None


def integral(value: Any) -> Any:
    """A double that is a whole number, as the integer it stands for; anything else as it is."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def data_part(part: pb.Part) -> dict[str, Any]:
    value = json_format.MessageToDict(part.data)
    if not isinstance(value, dict):
        raise InvalidRequest("A data part must be an object.", fields={"data": ["An object with the task's fields."]})
    unknown = sorted(set(value) - set(DATA_FIELDS))
    if unknown:
        message = f"Unknown field; a data part takes: {', '.join(DATA_FIELDS)}."
        raise InvalidRequest(f"Unknown field(s): {', '.join(unknown)}.", fields={name: [message] for name in unknown})
    for name in INTEGERS:
        if name in value:
            value[name] = integral(value[name])
    for name in INTEGER_LISTS:
        if isinstance(value.get(name), list):
            value[name] = [integral(item) for item in value[name]]
    return value


def asked(message: pb.Message) -> Asked:
    """The request a message makes; ``422 invalid_request`` naming what is wrong with it."""
    if message.role == pb.Role.ROLE_AGENT:
        raise InvalidRequest("A message to a space comes from its user.", fields={"role": ["ROLE_USER."]})
    texts = [part.text for part in message.parts if part.WhichOneof("content") == "text"]
    datas = [part for part in message.parts if part.WhichOneof("content") == "data"]
    if len(datas) > 1:
        raise InvalidRequest("At most one data part.", fields={"parts": ["At most one data part."]})
    if message.task_id:
        text = "\n".join(texts).strip()
        if not text:
            raise InvalidRequest("A note needs text.", fields={"parts": ["A text part: the note."]})
        return Asked({"body": text}, task=message.task_id)
    fields: dict[str, Any] = {}
    if texts:
        title, _, body = texts[0].strip().partition("\n")
        fields = {"title": title.strip(), "body": body.strip()}
    if datas:
        fields.update(data_part(datas[0]))
    if not fields.get("title"):
        raise InvalidRequest("The work needs a title.", fields={"title": [
            "The first line of the first text part, or a data part's title."]})
    return Asked(fields)
