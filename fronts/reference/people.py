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
        "questions": {
            "ask": "POST …/tasks/{n}/questions {\"body\", \"to\": \"creator\"|\"stewards\"|<member id>, "
                   "\"options\"?, \"hold\"?, \"expires_at\"?, \"wait\"?: 0-60}: a holder, the creator or a steward",
            "waiting": "while a question is open the task is waiting: it occupies its key, is not ready, takes no "
                       "attempt; hold (the default for a holder) keeps the asker's claim with its lease paused, "
                       "hold: false gives it back",
            "answer": "POST …/questions/{id}/answer {\"body\"?, \"option\"?} (the addressee or a steward): the "
                      "first answer closes it, a later one is 409 question_closed naming it; the kept claim's "
                      "lease starts again",
            "withdraw": "POST …/questions/{id}/withdraw (the asker or a steward)",
            "deadline": "past expires_at, unanswered, a question is expired (by the sweep, or the first answer "
                        "that comes too late)",
            "once": "one open question an asker a task: another is 409 allocation_conflict, kind ask_question, "
                    "winner the question",
            "wait": "the answer comes back in the ask's own answer when it comes within wait seconds (the question "
                    "is asked whatever the wait); otherwise it is in the asker's notifications",
            "read": "GET …/tasks/{n}/questions: the members the task's thread includes, and stewards",
            "events": ["question.asked", "question.answered", "question.expired", "question.withdrawn"],
            "notifications": "question_asked to the addressee (or every steward); question_answered and "
                             "question_expired to the asker",
        },
        "messages": {
            "task": "POST …/tasks/{n}/messages {\"body\", \"to\"?: [member ids]}: to the task's thread (its "
                    "creator, holders, askers, checkers and whoever a message of it named)",
            "direct": "POST /v1/spaces/{slug}/messages {\"body\", \"to\": [member ids]}",
            "once": "the same sender, thread and body within 24 h is one message: 409 allocation_conflict, kind "
                    "post_message, winner the message",
            "read": "GET …/tasks/{n}/messages (the thread's members and stewards), oldest first",
            "events": ["message.posted"],
        },
        "inbox": "GET /v1/inbox: open questions addressed to you, approvals you may give, attempts you may check, "
                 "unread messages (each with its task); POST /v1/inbox/read {\"ids\"?: [message ids]} marks "
                 "messages read",
        "mcp": "create_task takes approval and approver; approve_task and refuse_task (listed to stewards, and to "
               "a member a proposal names approver); ask (with wait), answer (listed to stewards and to a member a "
               "question is addressed to), message, inbox",
        "cli": ["spaces approve N", "spaces refuse N [--reason R]"],
        "refusals": [refusal("not_approver"), refusal("task_not_proposed"), refusal("person_check_required"),
                     refusal("not_asker"), refusal("not_addressee"), refusal("question_closed"),
                     refusal("not_in_thread")],
    }
