"""The ``tasks`` section of GET /v1/reference."""
from __future__ import annotations

from spaces.models import Space
from spaces.reference import register_section
from tasks.models import LIVE_STATUSES, TERMINAL_STATUSES, TaskStatus


def default(field: str):
    return Space._meta.get_field(field).default


@register_section("tasks")
def tasks_section() -> dict:
    return {
        "summary": "Tasks are addressed by their per-space number; create them with POST …/tasks.",
        "statuses": list(TaskStatus.values),
        "live_statuses": [s.value for s in LIVE_STATUSES],
        "terminal_statuses": [s.value for s in TERMINAL_STATUSES],
        "defaults": {
            "task_claim_hours": default("task_claim_hours"),
            "confirmations_required": default("confirmations_required"),
            "max_claims_per_task": default("max_claims_per_task"),
            "max_attempts_per_cycle": default("max_attempts_per_cycle"),
        },
        "superseded": "a superseded task takes no claim, attempt, check or note: 409 task_superseded names the survivor",
    }
