"""Each MCP tool's output schema (SPEC §23): the fields of its answer, named.

The answers are what the REST twins answer, built by the commands' serializers, so the names
of a serialized object come from its serializer (one source); the rest are the few keys a
command writes itself. A schema names the top-level fields and no more (``{}``: any value):
``tools/list`` is read into an agent's context on every connection, and a field's own shape
is in the reference (``GET /v1/reference``). ``tests/test_every_command_alike.py`` and
``tests/test_mcp.py`` hold every answer to its tool's names."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers

from fronts.reference import SECTIONS
from spaces.serializers import PostSerializer
from tasks.serializers import (
    MessageSerializer, NoteSerializer, QuestionSerializer, RoutineSerializer, TaskDetailSerializer, TaskSerializer,
)


def named(serializer: type[serializers.Serializer]) -> list[str]:
    return list(serializer().fields)


TASK = named(TaskSerializer)
TASK_AND = ["task", "claim", "attempt", "reopened"]  # tasks.commands.task_and and its parts
QUESTION = named(QuestionSerializer)
ROUTINE = named(RoutineSerializer)

OUTPUTS: dict[str, list[str]] = {
    "space_info": ["slug", "name", "task_claim_hours", "claim_lease_seconds", "similar_threshold",
                   "confirmations_required", "max_claims_per_task", "max_attempts_per_cycle"],
    "reference": sorted(SECTIONS),
    "bind_title": ["work_item_id", "conflict_key", "scores", "similar"],
    "similar_tasks": ["similar"],
    "likely_duplicates": ["pairs"],
    "mark_not_duplicate": ["tasks", "distinct"],
    "create_task": [*TASK, "similar"],
    "create_tasks": ["results"],
    "list_tasks": ["tasks"],
    "events": ["events", "next"],
    "update_task": TASK, "add_blocker": TASK, "remove_blocker": TASK,
    "get_task": named(TaskDetailSerializer) + ["claims", "attempts", "cost"],
    "next_task": TASK_AND, "give_back": TASK_AND, "mark_done": TASK_AND, "confirm_attempt": TASK_AND,
    "reject_attempt": TASK_AND, "assign_task": TASK_AND,
    "heartbeat": ["claim"],
    "create_post": named(PostSerializer),
    "space_costs": ["since", "until", "group_by", "usd", "input_tokens", "output_tokens", "seconds", "accepted",
                    "per_accepted_usd", "budget_usd", "groups"],
    "add_note": named(NoteSerializer),
    "notifications": ["notifications"],
    "supersede_task": TASK, "withdraw_task": TASK, "reject_task": TASK, "approve_task": TASK, "refuse_task": TASK,
    "unpark_task": TASK,
    "ask": QUESTION, "answer": QUESTION,
    "message": named(MessageSerializer),
    "inbox": ["questions", "approvals", "checks", "messages"],
    "hold_slot": ["work_item_id", "reason", "held_by", "created_at"],
    "release_slot": ["work_item_id", "released"],
    "create_routine": ROUTINE, "update_routine": ROUTINE,
    "delete_routine": ["id", "deleted"],
}


def output_schema(tool: str) -> dict[str, Any]:
    """The tool's output schema: an object whose fields are named (each ``{}``: any JSON value)."""
    return {"type": "object", "properties": {name: {} for name in dict.fromkeys(OUTPUTS[tool])}}
