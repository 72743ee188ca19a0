"""The ``fleet`` section of GET /v1/reference: caps, priority aging, dead letters and routines
(SPEC §22), from the code that keeps them."""
from __future__ import annotations

from fronts.reference import register_section
from fronts.reference.tasks import refusal
from tasks.routines import GRACE


@register_section("fleet")
def fleet_section() -> dict:
    return {
        "summary": "Steer who gets what: caps on live claims, priority that improves with waiting, parking of work "
                   "that keeps failing, and routines that make each period's task once.",
        "settings": {
            "max_claims_per_member": {"default": None, "range": "1-1000 or null (none)",
                                      "meaning": "the most live claims one member may hold; past it next and "
                                                 "claims by number are 409 claim_cap naming its claims"},
            "label_caps": {"default": {}, "shape": "{\"label\": N}, N 1-10000, at most 50 labels",
                           "meaning": "at most N live claims on the tasks carrying the label; next skips such "
                                      "tasks while their label is full"},
            "priority_aging_minutes": {"default": None, "range": "1-43200 or null (off)",
                                       "meaning": "a ready task's effective priority improves by one for every N "
                                                  "minutes it has been ready (open and unblocked), never past 0; next, ready and "
                                                  "order=next order by it, then by number"},
            "max_cycles": {"default": None, "range": "1-100 or null (none)",
                           "meaning": "setbacks (an attempt rejected, a claim lapsed or given back) after which a "
                                      "task is parked"},
            "change": "PATCH /v1/spaces/{slug} (a steward); the space's answer shows them",
        },
        "caps": "held by the database across hosts: a trigger before every claim (next, by number, join, assign) "
                "locks the member and the task's capped labels and counts live claims",
        "parked": {
            "status": "parked: occupies its conflict key, is not ready, takes no claim",
            "told": "task.parked on the feed, task_parked notifications to the stewards",
            "unpark": "POST …/tasks/{n}/unpark (a steward): open again, its setbacks counted from 0",
            "withdraw": "POST …/tasks/{n}/withdraw as for any live task",
        },
        "routines": {
            "create": "POST /v1/spaces/{slug}/routines {\"title\", \"body\"?, \"schedule\" (cron, 5 fields), "
                      "\"timezone\"? (IANA, default UTC), \"work_item_id\"?, \"priority\"?, \"labels\"?, "
                      "\"overlap\"?: \"skip\"|\"allow\", \"catch_up\"?: \"latest\"|\"none\"} (a steward)",
            "read": "GET …/routines and …/routines/{id} (any member): each with next_run_at, last_period, last_task",
            "change": "PATCH …/routines/{id} (any field, \"enabled\"); DELETE …/routines/{id} (its tasks stay)",
            "firing": "sweep (every host may run it) makes each period's task through the create command, as the "
                      "routine's steward, once: the routine and the period's start are a unique run",
            "overlap": {"skip": "its tasks share one conflict key: while the last is live the period is skipped "
                                "(routine.skipped naming the task)",
                        "allow": "the period's start is part of the title, so of the key"},
            "catch_up": {"latest": "after downtime, one task for the latest missed period",
                         "none": f"a period not fired within {int(GRACE.total_seconds())} s of its start makes none"},
            "events": ["routine.fired", "routine.skipped"],
        },
        "refusals": [refusal("claim_cap"), refusal("task_not_parked")],
    }
