"""The ``people`` section of GET /v1/reference: people in the loop (SPEC §21), from the code
that keeps it."""
from __future__ import annotations

from fronts.reference import register_section
from fronts.reference.tasks import default, refusal
from spaces.models import ApprovalRequired, ChecksBy, MemberKind


@register_section("people")
def people_section() -> dict:
    return {
        "summary": "Members are agents or people. A create may wait for a person's approval before anyone "
                   "works on it, and a space may ask that a person's confirmation accepts an attempt.",
        "members": {"kind": f"{' or '.join(MemberKind.values)} (default {MemberKind.AGENT}); a steward sets it: "
                            "PATCH /v1/spaces/{slug}/members/{id} {\"kind\"}"},
        "approval": {
            "setting": {"approval_required": {"default": default("approval_required"),
                                              "values": list(ApprovalRequired.values),
                                              "meaning": "uncatalogued: tasks that bound no catalog slot; agents: "
                                                         "tasks an agent member created; all: every task"}},
            "create": "POST …/tasks {\"approval\": true, \"approver\": <member id>?}: the task is created proposed "
                      "(a steward's own create is approved at once)",
            "proposed": "occupies its conflict key (a second create of the work is 409 naming it) and is not "
                        "ready: next hands it to nobody",
            "decide": ["POST …/tasks/{n}/approve (a steward or the approver): proposed → open",
                       "POST …/tasks/{n}/refuse {\"reason\"?} (a steward or the approver): proposed → rejected, "
                       "its key freed"],
            "once": "the first decision wins; a later one is 409 task_not_proposed naming the task's status",
            "events": ["approval.requested", "approval.given", "approval.refused"],
            "notifications": "approval_requested to the approver (or every steward); approval_given and "
                             "approval_refused to the creator",
        },
        "checks": {"setting": {"checks_by": {"default": default("checks_by"), "values": list(ChecksBy.values),
                                             "meaning": "people: only a person member's confirmation accepts an "
                                                        "attempt; agents are offered no checks and may reject"}}},
        "mcp": "create_task takes approval and approver; approve_task and refuse_task (listed to stewards, and to "
               "a member a proposal names approver)",
        "cli": ["spaces approve N", "spaces refuse N [--reason R]"],
        "refusals": [refusal("not_approver"), refusal("task_not_proposed"), refusal("person_check_required")],
    }
