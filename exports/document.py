"""What an export document holds (SPEC §7.3): its lists, each a model's rows in key order, as
the fields shown. The writer (``exports.services``) fills it section by section; the reader
(``exports.selectors.stream_document``) streams it back in the same order."""
from __future__ import annotations

from dataclasses import dataclass

from tasks.models import Attempt, Check, Claim, Note, TaskEvent, Task


@dataclass(frozen=True)
class Section:
    """One list of the exported document: its rows in ``key`` order, as ``fields``."""

    name: str
    model: type
    key: str
    fields: tuple[str, ...]


SECTIONS = (
    Section("tasks", Task, "number", ("number", "title", "body", "status", "delivery_mode", "work_item_id",
                                      "conflict_target", "cycle", "creator_id", "superseded_by__number",
                                      "priority", "labels", "created_at")),
    Section("claims", Claim, "id", ("id", "task__number", "member_id", "cycle", "origin", "created_at", "expires_at",
                                    "ended_at", "end_reason")),
    Section("attempts", Attempt, "id", ("task__number", "number", "cycle", "member_id", "post_id", "state",
                                        "created_at", "decided_at")),
    Section("checks", Check, "id", ("task__number", "attempt__number", "member_id", "cycle", "verdict", "reason",
                                    "created_at")),
    Section("notes", Note, "id", ("id", "task__number", "author_id", "criterion", "body", "created_at")),
    Section("history", TaskEvent, "id", ("task__number", "kind", "actor_id", "details", "created_at")),
)
