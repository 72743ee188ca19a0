"""A task's history in plain words, members by name (SPEC §8): the admin's history rows and the
board's task panel read it from here, so both say the same thing about the same event."""
from __future__ import annotations

from typing import Any, Iterable

from events.feed import SPACE_TYPES
from spaces.models import Member
from tasks.models import EventKind, TaskEvent
from tasks.serializers import iso

# What the actor did, by event kind; {names} come from the event's details.
SENTENCES = {
    "created": "created the task",
    "claimed": "claimed it",
    "joined": "joined the work on it",
    "given_back": "gave it back",
    "claim_lapsed": "{member}'s claim lapsed",
    "assigned": "assigned it to {member}",
    "attempt": "delivered attempt {attempt}",
    "check": "{verdict} attempt {attempt}",
    "accepted": "attempt {attempt} was accepted",
    "reopened": "reopened it",
    "superseded": "superseded it by #{surviving_task}",
    "withdrawn": "withdrew it",
    "rejected": "rejected it",
    "held": "held its slot {work_item_id}",
    "note": "added a note",
    "priority_changed": "changed the priority from P{before} to P{after}",
    "labels_changed": "set the labels to {after}",
    "blocker_added": "made it wait on {after}",
    "blocker_removed": "made it wait on {after}",
    "unblocked": "its last blocker ended",
    "approved": "approved it",
    "refused": "refused it",
    "asked": "asked question {question}",
    "answered": "answered question {question}",
    "question_expired": "question {question} expired unanswered",
    "unasked": "withdrew question {question}",
    "parked": "parked it after {setbacks} setbacks",
    "unparked": "put it back in the queue",
}
VERDICTS = {"confirm": "confirmed", "reject": "rejected"}
MEMBER_FIELDS = ("member", "held_by")


class Words(dict):
    """An event's details as they read in a sentence; a detail the event lacks reads "?"."""

    def __missing__(self, key: str) -> str:
        return "?"


def member_names(events: Iterable[TaskEvent]) -> dict[int, str]:
    """The names of every member the events name, as actor or in their details: one query."""
    ids = set()
    for event in events:
        if event.actor_id:
            ids.add(event.actor_id)
        ids.update(v for k, v in (event.details or {}).items() if k in MEMBER_FIELDS and isinstance(v, int))
    return dict(Member.objects.filter(pk__in=ids).values_list("pk", "name")) if ids else {}


def in_words(value: Any, key: str, names: dict[int, str]) -> str:
    if key in MEMBER_FIELDS and isinstance(value, int):
        return names.get(value, f"member {value}")
    if key in ("before", "after") and isinstance(value, list):
        if all(isinstance(v, int) for v in value):
            return ", ".join(f"#{v}" for v in value) or "nothing"
        return ", ".join(map(str, value)) or "no labels"
    if key == "verdict":
        return VERDICTS.get(value, str(value))
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)


def sentence(event: TaskEvent, names: dict[int, str]) -> str:
    """What happened, in words: "changed the priority from P2 to P0 (reason)"."""
    details = event.details or {}
    words = Words({key: in_words(value, key, names) for key, value in details.items()})
    text = SENTENCES.get(event.kind, event.kind.replace("_", " ")).format_map(words)
    reason = details.get("reason")
    return f"{text} ({reason})" if reason and isinstance(reason, str) else text


def actor_name(event: TaskEvent, names: dict[int, str]) -> str:
    return names.get(event.actor_id, f"member {event.actor_id}") if event.actor_id else "the service"


def lines(events: list[TaskEvent]) -> list[dict[str, Any]]:
    """The events as the board's panel shows them, oldest first."""
    names = member_names(events)
    return [{"at": iso(e.created_at), "kind": e.kind, "actor": actor_name(e, names), "text": sentence(e, names)}
            for e in events]


def feed_types() -> list[str]:
    """Every type of event a space's feed holds (SPEC §17): a task's history kinds as
    ``task.<kind>`` (the trigger that copies history into the feed names them so), then the
    changes of the space itself."""
    return [f"task.{kind}" for kind in EventKind.values] + list(SPACE_TYPES)
