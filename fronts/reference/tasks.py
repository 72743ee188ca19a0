"""The ``tasks`` section of GET /v1/reference, built from the settings and refusals the code uses."""
from __future__ import annotations

from common.refusals import REFUSALS
from spaces.models import Space
from fronts.reference import register_section
from tasks.models import (
    DEFAULT_PRIORITY,
    LABEL_PATTERN,
    LIVE_STATUSES,
    MAX_BLOCKERS,
    MAX_LABELS,
    PRIORITIES,
    EventKind,
    TERMINAL_STATUSES,
    AttemptState,
    NotificationKind,
    TaskStatus,
)


def default(field: str):
    return Space._meta.get_field(field).default


def refusal(code: str) -> dict:
    r = REFUSALS[code]
    return {"code": code, "status": r.http_status, "meaning": r.meaning}


@register_section("tasks")
def tasks_section() -> dict:
    return {
        "summary": "Tasks are addressed by their per-space number. Claim one with POST …/next, deliver a result "
        "post with POST …/tasks/{n}/done, and check other keys' attempts.",
        "statuses": list(TaskStatus.values),
        "live_statuses": [s.value for s in LIVE_STATUSES],
        "terminal_statuses": [s.value for s in TERMINAL_STATUSES],
        "attempt_states": list(AttemptState.values),
        "settings": {
            "task_claim_hours": {"default": default("task_claim_hours"), "range": "1-24"},
            "confirmations_required": {"default": default("confirmations_required"), "range": ">= 0"},
            "max_claims_per_task": {"default": default("max_claims_per_task")},
            "max_attempts_per_cycle": {"default": default("max_attempts_per_cycle")},
            "note": "GET /v1/spaces/{slug} shows your space's values.",
        },
        "claims": [
            "POST …/next {} claims the most urgent ready task (see section graph) for task_claim_hours; "
            "{\"task\": null} when none",
            "POST …/next {\"number\": N} claims task N if open; if other keys hold it, add \"join\": true to hold "
            "it beside them (at most max_claims_per_task live claims)",
            "POST …/next {\"kind\": \"check\"} offers a waiting attempt you may check",
            "POST …/tasks/{n}/give-back ends your own claim; others keep theirs",
            "claims lapse at their expiry (claim_lapsed notification)",
        ],
        "attempts": [
            "POST …/tasks/{n}/done {\"post\": id} records a numbered attempt (1, 2, 3… across cycles) citing a "
            "visible post, yours or another key's; any writer may, holder or not",
            "at most max_attempts_per_cycle attempts a cycle, one per key a cycle; refused attempts take no number",
            "the first attempt of a cycle ends every claim; holders and the post's author are notified",
            "a post once rejected as a task's result cannot be cited for it again",
        ],
        "checks": [
            "POST …/attempts/{n}/confirm and …/reject {\"reason\"}; a key checks an attempt once",
            "the first waiting attempt to reach confirmations_required confirmations is accepted: the task is done "
            "and the other waiting attempts pass",
            "a reject sets that attempt aside; when no attempt waits, the task reopens (cycle + 1) naming the "
            "rejected attempt, its post and the confirmations cleared",
            "doer or checker, never both, in one cycle; a post's author does not check the attempt citing it",
            "a check counts for its own cycle and attempt only",
            "confirmations_required = 0: the first attempt is accepted at once unless, in that cycle, another key "
            "held the task live, gave it back, or a reject came first; then one confirmation decides, and a doer "
            "may give it to a rival attempt",
        ],
        "notifications": {"kinds": list(NotificationKind.values),
                          "routes": "GET /v1/notifications[?unread=true], POST /v1/notifications/read {\"ids\"?}"},
        "refusals": [refusal(code) for code in [
            "task_not_open", "claim_limit", "not_holding", "attempt_limit", "attempt_exists", "task_post_not_found",
            "post_rejected_for_task", "doer_cannot_check", "checker_cannot_attempt", "author_cannot_check",
            "attempt_not_waiting", "check_exists", "task_superseded", "task_closed",
        ]],
        "superseded": "a superseded task takes no claim, attempt, check or note: 409 task_superseded names the "
        "surviving task",
    }


@register_section("graph")
def graph_section() -> dict:
    """SPEC §13, from the limits and names the code enforces."""
    return {
        "summary": "Tasks carry a priority, labels and blockers. `next` hands out ready tasks only: open, with no "
        "live task blocking them, the lowest priority first, then the lowest number.",
        "fields": {
            "priority": {"range": f"{min(PRIORITIES)}-{max(PRIORITIES)}", "default": DEFAULT_PRIORITY,
                         "meaning": "0 is the most urgent"},
            "labels": {"max": MAX_LABELS, "pattern": LABEL_PATTERN, "note": "lower-cased on input"},
            "blocked_by": {"max_live": MAX_BLOCKERS, "note": "numbers of tasks of the same space; none of these "
                           "fields is part of the conflict key"},
            "answers": "every task answers with priority, labels, blocked_by (live blockers), blocks (live tasks "
                       "it blocks) and ready",
        },
        "routes": [
            "POST …/tasks {\"title\", \"priority\"?, \"labels\"?, \"blocked_by\"?} (and in a window); an "
            "unknown blocker is a 422 field error, a finished one is accepted and does not block, a superseded "
            "one is replaced by its survivor",
            "PATCH …/tasks/{n} {\"priority\"?, \"labels\"?}: the creator or a steward",
            "POST …/tasks/{n}/blockers {\"task\": m}: 201 added, 200 when already there (or m has ended)",
            "DELETE …/tasks/{n}/blockers/{m}: 204, or 404 when m does not block n",
            "POST …/next {\"labels\": [...]}: only ready tasks carrying all those labels",
            "GET …/tasks?ready=true|false&blocked=true|false&priority=P&label=L (repeatable: all)&q=words: "
            "q is PostgreSQL full-text search over title and body, best match first, paged by offset "
            "(limit, offset); other lists page by cursor",
        ],
        "readiness": [
            "a blocker stops blocking when it is done, withdrawn or rejected; when it is superseded its survivor "
            "blocks instead (an edge that would then close a cycle is dropped, in both histories)",
            "when a task's last blocker ends or is removed and it is open, its history records unblocked and "
            "its creator gets a task_unblocked notification",
            "no cycle is ever stored, also when writers race",
        ],
        "history": [EventKind.PRIORITY_CHANGED, EventKind.LABELS_CHANGED, EventKind.BLOCKER_ADDED,
                    EventKind.BLOCKER_REMOVED, EventKind.UNBLOCKED],
        "refusals": [refusal(code) for code in ["task_blocked", "dependency_cycle", "not_task_creator"]],
    }


@register_section("live")
def live_section() -> dict:
    """SPEC §15: waiting for work, leases and heartbeats, lapse."""
    return {
        "summary": "Wait for work instead of polling, keep a claim alive with heartbeats, and dropped work goes "
        "back to the team when its lease ends.",
        "waiting": [
            "POST …/next {\"wait\": S} (0-60 seconds; also with labels or kind: check): when nothing is ready for "
            "you, waits up to S seconds and claims work the moment it is made ready (created, unblocked, given "
            "back, reopened, relabelled, a claim lapsed, an attempt to check), answering what next answers; "
            "{\"task\": null} when the time is up",
            "each task goes to exactly one caller; callers waiting in one server process are served longest "
            "waiting first",
            "a waiting request holds no transaction, lock or connection; wait with number is a 422",
            "with an Idempotency-Key, a retry after a dropped connection answers the claim made for it",
            "a caller that hangs up while it waits claims nothing: the work goes to the next waiter",
            "capacity: one key waits at most max_waits_per_key times at once (429 rate_limited with Retry-After "
            "and max_waits_per_key); a server process that holds all the waits it may answers a new one 503 "
            "service_unavailable at once; a next without wait is refused for neither",
        ],
        "leases": [
            "space setting claim_lease_seconds (null, or 10-3600; default null): a claim lasts that long from when "
            "it was made or last renewed, else task_claim_hours",
            "POST …/tasks/{n}/heartbeat renews your live claim: 200 {\"claim\": {…, \"expires_at\", "
            "\"last_heartbeat_at\"}}; heartbeat every third of the lease",
            "409 claim_lapsed: your claim lapsed (claim the task again; a done is still an attempt); "
            "409 not_holder: you hold no claim on it",
        ],
        "lapse": [
            "a claim past its expires_at is ended at that moment for every rule: next hands its task out again "
            "at once and waiters are woken; reads and the board show it lapsed (its task open) and write nothing",
            "the lapse is recorded once, by whichever change meets it first (next, a heartbeat, a done, a give-back, "
            "any change of the task, expire_claims): history claim_lapsed, a claim_lapsed notification to the "
            "holder, the claim ended at its expires_at",
        ],
        "settings": {"claim_lease_seconds": {"default": None, "range": "null or 10-3600"},
                     "max_waits_per_key": {"default": 8, "range": "1-100"}},
        "cli": ["spaces next --wait S", "spaces heartbeat N",
                "spaces work [--wait S] [--label L]... [--loop] -- COMMAND...: claims a task, runs COMMAND with "
                "SPACES_TASK, SPACES_TASK_TITLE, SPACES_TASK_BODY, SPACES_URL and SPACES_KEY in its environment "
                "while heartbeating, posts its standard output and marks the task done on exit 0, else gives the "
                "claim back"],
        "mcp": "next_task takes wait; the heartbeat tool renews a claim",
        "history": [EventKind.LAPSED],
        "refusals": [refusal(code) for code in ["claim_lapsed", "not_holder"]],
    }


@register_section("similar")
def similar_section() -> dict:
    """SPEC §16: similar live tasks, a hint that never refuses by default."""
    return {
        "summary": "Two titles that bind no catalog slot get keys of their own wording, so the same uncatalogued "
        "work phrased twice is two tasks. Look first: similar lists the live tasks whose titles look alike.",
        "where": [
            "GET …/tasks/similar?title=… and POST …/bind answer {\"similar\": [{\"id\", \"title\", \"status\", "
            "\"score\"}]}: best first, at most 5, each score (0-1) at least the space's similar_threshold",
            "a 201 whose title bound no slot carries similar (possibly []); a title bound to a slot has none",
        ],
        "never": [
            "similar never refuses a create by default and never changes a conflict key",
            "a create with \"if_similar\": \"refuse\" that finds a similar live task is refused with 409 "
            "allocation_conflict, code similar_task_exists, outcome redirect, winner the most alike task, similar, "
            "write_occurred false",
        ],
        "how": "titles compare on their words (section allocation's tokens, English function words dropped, "
        "stemmed); a word counts more the fewer live titles of the space have it; words only one title has pull "
        "the score down, and one on each side much more (the same sentence about another object)",
        "pairs": [
            "GET …/tasks/duplicates: likely duplicate pairs among live tasks, best first (any member)",
            "POST …/tasks/{n}/not-duplicate {\"task\": m} (steward): n and m are distinct work, the pair is not "
            "listed again; supersede one of a pair with POST …/tasks/{n}/supersede",
        ],
        "settings": {"similar_threshold": {"default": default("similar_threshold"), "range": "0.05-1"}},
        "cli": ["spaces similar TITLE", "spaces create TITLE --if-similar refuse"],
        "mcp": "the similar_tasks and likely_duplicates tools, mark_not_duplicate for stewards; bind_title answers "
        "similar; create_task takes if_similar",
        "refusals": [refusal("similar_task_exists")],
    }
