"""Writing and reading a space's feed (SPEC §17).

A task's history reaches the feed by a trigger on its rows (tasks/migrations/0018); the
changes of a space itself — settings, members, keys, catalog, holds — call ``record`` in the
transaction that makes them. Either way the event commits with its change or not at all, and
its ``seq`` is given as it commits (events/migrations/0002).
"""
from __future__ import annotations

import enum
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from django.db import connection

from common import gate
from events.errors import EventsExpired
from events.models import Event, FeedCounter
from events import sql

MAX_LIMIT = 500
DEFAULT_LIMIT = 100
MAX_WAIT = 60  # seconds a ?wait= may ask
STREAM_SECONDS = 600  # a stream ends after this; the client reconnects with Last-Event-ID
KEEPALIVE_SECONDS = 15  # a stream says something at least this often


class Woken(enum.Enum):
    """How a wait on the feed ended."""

    EVENT = "event"  # the space's feed may have moved past ``after``: read it
    TIMEOUT = "timeout"  # nothing came (the listener hears every commit, and re-checks each second)
    STOPPING = "stopping"  # the process is stopping: answer with what there is, wait no more


# How a front waits for a space's feed to move past ``after`` (at most ``timeout`` seconds):
# tasks.waiting.REGISTRY.wait_for_event, the process's one listener (SPEC §15's means).
WaitForEvent = Callable[[int, int, float], Woken]


@dataclass(frozen=True)
class Page:
    events: list[Event]
    next: int  # the seq to ask after next time


# The changes of a space itself that are events of its feed (a task's are ``task.`` and its
# history's kind); GET /v1/reference?section=events lists them from here.
SPACE_TYPES = (
    "space.settings_changed", "member.added", "member.role_changed", "member.kind_changed", "key.issued", "key.revoked",
    "catalog.item_saved", "catalog.item_deleted", "catalog.imported", "hold.added", "hold.released",
    "webhook.disabled", "budget.threshold", "budget.exhausted",
    "approval.requested", "approval.given", "approval.refused",
    "question.asked", "question.answered", "question.expired", "question.withdrawn", "message.posted",
    "routine.fired", "routine.skipped",
)


def record(*, space_id: int, type: str, actor_id: int | None = None, data: dict[str, Any] | None = None) -> None:
    """One event of the space's feed, in the caller's transaction."""
    if type not in SPACE_TYPES:
        raise ValueError(f"{type!r} is not a feed event type (events.feed.SPACE_TYPES)")
    Event.objects.create(space_id=space_id, type=type, actor_id=actor_id, data=data or {})


def read(*, space_id: int, after: int | None, types: list[str], task: int | None, limit: int,
         since_checked: bool = False) -> Page:
    """The space's events after ``after`` in seq order, at most ``limit``; ``410
    events_expired`` when events after ``after`` were purged. Only committed events have a
    seq, so none shows before its transaction committed. ``since_checked``: ``after`` is where
    an earlier read of this request stood, checked then (a purge takes old events only)."""
    counter = 0 if since_checked else (
        FeedCounter.objects.filter(space_id=space_id).values_list("purged_through", flat=True).first() or 0)
    if after is not None and after < counter:
        raise EventsExpired(f"Events up to seq {counter} were purged; the oldest kept is {counter + 1}.",
                            oldest_seq=counter + 1)
    start = after if after is not None else counter
    events = Event.objects.filter(space_id=space_id, seq__gt=start).select_related("actor")
    if types:
        events = events.filter(type__in=types)
    if task is not None:
        events = events.filter(task_number=task)
    found = list(events.order_by("seq")[:limit])
    return Page(found, found[-1].seq if found else start)


# --- How a reader's question is answered -------------------------------------------------

@dataclass(frozen=True)
class Question:
    """What a reader of the feed asks, read once from the query parameters."""

    after: int | None
    types: list[str]
    task: int | None
    limit: int
    wait: float


def read_waiting(space_id: int, asked: Question, wait_for: WaitForEvent | None, wait: float) -> tuple[Page, Woken]:
    """``read``; when it finds nothing, wait up to ``wait`` seconds for an event and read again
    (SPEC §17, with §15's means: no connection and no running slot held while it waits). The
    page, and how its last wait ended (EVENT when it found events, or did not wait)."""
    deadline = time.monotonic() + wait
    page = read(space_id=space_id, after=asked.after, types=asked.types, task=asked.task, limit=asked.limit)
    while not page.events and wait_for is not None and (left := deadline - time.monotonic()) > 0:
        connection.close()
        with gate.released():
            woken = wait_for(space_id, page.next, left)
        if woken is not Woken.EVENT:
            return page, woken  # nothing came, or the server is stopping: nothing new to read
        page = read(space_id=space_id, after=page.next, types=asked.types, task=asked.task, limit=asked.limit,
                    since_checked=True)
    return page, Woken.EVENT


def answer(*, space_id: int, asked: Question, wait_for: WaitForEvent | None = None) -> dict[str, Any]:
    """The feed as every front answers it: ``{"events": […], "next": SEQ}``, waited for up to
    ``asked.wait`` seconds when there is none yet."""
    page, _ = read_waiting(space_id, asked, wait_for, asked.wait)
    return {"events": [as_answer(event) for event in page.events], "next": page.next}


def follow(space_id: int, after: int, *, types: list[str], task: int | None, limit: int = DEFAULT_LIMIT,
           wait_for: WaitForEvent, seconds: float | None = None) -> Iterator[Page]:
    """The space's events after ``after`` as they commit, for ``seconds``: each page that has
    some, and an empty page when KEEPALIVE_SECONDS passed with none (a stream's keep-alive);
    ``seconds`` STREAM_SECONDS unless given.
    Over when the time is up or the process is stopping (the follower resumes from the last
    seq it got). It holds a thread, never a connection, between its reads; a timed-out wait
    reads nothing, so an idle follower sends no statement."""
    ends = time.monotonic() + (STREAM_SECONDS if seconds is None else seconds)
    page, sent = Page([], after), time.monotonic()
    while True:
        connection.close()
        left = ends - time.monotonic()
        if left <= 0:
            return
        pause = min(max(0.0, KEEPALIVE_SECONDS - (time.monotonic() - sent)), left)
        woken = wait_for(space_id, page.next, pause) if pause > 0 else Woken.TIMEOUT
        if woken is Woken.STOPPING:
            return
        if woken is Woken.EVENT:
            page = read(space_id=space_id, after=page.next, types=types, task=task, limit=limit, since_checked=True)
        else:
            page = Page([], page.next)
        if page.events or time.monotonic() - sent >= KEEPALIVE_SECONDS - 0.05:
            yield page
            sent = time.monotonic()


def as_answer(event: Event) -> dict[str, Any]:
    """An event as the feed, its stream and its webhooks send it (SPEC §17)."""
    return {
        "id": f"evt_{event.pk}", "seq": event.seq, "type": event.type, "at": event.at,
        "actor": None if event.actor is None else {"id": event.actor.pk, "name": event.actor.name},
        "task": event.task_number, "data": event.data,
    }


def wake_followers(space_id: int) -> None:
    """The feed's followers of ``space_id`` told to read (at commit), as the seal tells them."""
    with connection.cursor() as cursor:
        cursor.execute(sql.NOTIFY, [str(space_id)])


def purge(*, dry_run: bool = False) -> int:
    """Events older than their space's ``event_retention_days``, deleted (one statement); the
    counter remembers the last seq purged, so a reader behind it is told (``410``)."""
    with connection.cursor() as cursor:
        if dry_run:
            cursor.execute(sql.purge_count())
            return cursor.fetchone()[0]
        cursor.execute(sql.purge())
        return cursor.fetchone()[0]
