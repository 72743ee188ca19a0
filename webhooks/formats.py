"""What a delivery's body is, by its endpoint's ``format`` (SPEC §17, §18).

``event``: the feed's event, as ``GET …/events`` answers it. A front that speaks another
protocol registers its own rendering of an event (the A2A front: a push notification).
"""
from __future__ import annotations

from typing import Callable

from events import feed
from events.models import Event
from webhooks.services import as_body

EVENT = "event"
BODIES: dict[str, Callable[[Event], str]] = {EVENT: lambda event: as_body(feed.as_answer(event))}


def register(format: str, render: Callable[[Event], str]) -> None:
    BODIES[format] = render


def body_of(format: str, event: Event) -> str:
    return BODIES[format](event)
