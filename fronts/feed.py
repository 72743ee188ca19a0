"""The feed's HTTP side (SPEC §17), for the REST route and the MCP tool alike: a reader's query
parameters read as a question (``events.feed.Question``: a bad one is ``422 invalid_request``
naming it), and the feed as Server-Sent Events lines."""
from __future__ import annotations

import json
import re
from typing import Iterator

from django.core.serializers.json import DjangoJSONEncoder

from common.refusals import InvalidRequest
from events.feed import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    MAX_WAIT,
    Page,
    Question,
    WaitForEvent,
    as_answer,
    follow,
    read,
)

PARAMETERS = frozenset({"after", "types", "task", "limit", "wait"})
WHOLE = r"0|[1-9][0-9]{0,18}"  # a whole number as the query string writes it (no "01", no "1.0")
SECONDS = r"[1-5]?[0-9](\.[0-9]{1,3})?|60(\.0{1,3})?"  # ?wait=: 0 to MAX_WAIT (60), at most three decimals
TYPE = re.compile(r"[a-z][a-z_]*(\.[a-z_]+)*")
MAX_TYPES = 50
# The parameters as read here, for /v1/schema: exactly what is taken (SPEC §3).
PARAMETER_SCHEMAS = {
    "after": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
    "task": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
    "wait": {"type": "string", "pattern": f"^(?:{SECONDS})$"},
    "types": {"type": "string", "pattern": f"^{TYPE.pattern}(?:,{TYPE.pattern}){{0,{MAX_TYPES - 1}}}$"},
}


def whole_number(params, name: str, *, low: int, high: int) -> int | None:
    """``name`` as a whole number in [low, high], or None when absent; anything else is a 422
    naming it (SPEC §3: ``?after=1.0``, ``?after=`` and ``?after=01`` are not numbers here).
    ``params``: the query parameters, or a stream's headers."""
    if name not in params:
        return None
    raw = params[name]
    if not re.fullmatch(WHOLE, raw) or not low <= int(raw) <= high:
        raise InvalidRequest(f"Bad {name}.", fields={name: [f"A whole number from {low} to {high}."]})
    return int(raw)


def event_types(params) -> list[str]:
    if "types" not in params:
        return []
    types = params["types"].split(",")
    if not 0 < len(types) <= MAX_TYPES or not all(TYPE.fullmatch(t) for t in types):
        raise InvalidRequest("Bad types.", fields={"types": [
            f"A comma-separated list of 1 to {MAX_TYPES} event types, such as task.created,task.claim_lapsed."]})
    return types


def seconds(params, name: str) -> float:
    """``?wait=S``: 0 to MAX_WAIT seconds, a whole number or a decimal (``2.5``)."""
    if name not in params:
        return 0.0
    raw = params[name]
    if not re.fullmatch(SECONDS, raw):
        raise InvalidRequest(f"Bad {name}.", fields={name: [f"Seconds from 0 to {MAX_WAIT}."]})
    return float(raw)


def question(params, *, after: int | None = None) -> Question:
    """The query parameters (a QueryDict) as a question; a bad one is ``422 invalid_request``
    naming it. ``after``: a stream's ``Last-Event-ID``, in place of ``?after=``."""
    for name in PARAMETERS:
        if len(params.getlist(name)) > 1:
            raise InvalidRequest(f"Bad {name}.", fields={name: ["Give it once."]})
    asked = whole_number(params, "after", low=0, high=2**63 - 1)
    return Question(after=asked if after is None else after, types=event_types(params),
                    task=whole_number(params, "task", low=1, high=2**63 - 1),
                    limit=whole_number(params, "limit", low=1, high=MAX_LIMIT) or DEFAULT_LIMIT,
                    wait=seconds(params, "wait"))


def stream(*, space_id: int, params, last_event_id: str | None, wait_for: WaitForEvent) -> Iterator[str]:
    """The feed as Server-Sent Events (SPEC §17): each event as ``id:`` its seq, ``event:`` its
    type, ``data:`` the event; resumed after ``Last-Event-ID``; a comment at least every
    KEEPALIVE_SECONDS; over after STREAM_SECONDS (the client reconnects with Last-Event-ID).
    The question is checked before the first line, so a bad one is still a ``422``."""
    headers = {} if last_event_id is None else {"Last-Event-ID": last_event_id.strip()}
    asked = question(params, after=whole_number(headers, "Last-Event-ID", low=0, high=2**63 - 1))
    first = read(space_id=space_id, after=asked.after, types=asked.types, task=asked.task, limit=asked.limit)
    return _stream(space_id, asked, first, wait_for)


def _stream(space_id: int, asked: Question, page: Page, wait_for: WaitForEvent) -> Iterator[str]:
    yield "retry: 2000\n: following the feed\n\n"
    yield from as_lines(page)
    for later in follow(space_id, page.next, types=asked.types, task=asked.task, limit=asked.limit,
                        wait_for=wait_for):
        yield from as_lines(later) if later.events else [": keep-alive\n\n"]


def as_lines(page: Page) -> Iterator[str]:
    for event in page.events:
        body = json.dumps(as_answer(event), cls=DjangoJSONEncoder)
        yield f"id: {event.seq}\nevent: {event.type}\ndata: {body}\n\n"


