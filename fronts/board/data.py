"""The board's read model (SPEC §14): its columns, cards, version and a task's panel; the routes
that serve them are ``fronts.board.views``, the actions ``fronts.board.actions``.

The page polls ``data`` with a conditional request. The answer's version is the space's
latest history event and its duplicates count, so an unchanged board costs two index
lookups and a ``304``. Otherwise the answer lists each column's card numbers in order,
with the full card only for tasks whose history moved since the version the page has
(``since``), or that it asks for by number (``numbers``) because it has never seen them.
"""
from __future__ import annotations

from typing import Any

from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import QueryDict
from django.urls import reverse
from django.utils import timezone

from allocation import selectors as allocation
from allocation.models import SlotHold
from costs import selectors as cost_selectors
from costs.selectors import month_spend
from spaces.models import ChecksBy, Space
from tasks import graph, history, lapses, selectors
from fronts.task_filters import checked_filter
from tasks.filters import blocked, next_order, ready_condition
from tasks.status import HELD, shown_as, shown_in, with_shown_status
from tasks.models import Attempt, Check, Claim, ClaimEnd, Message, Question, Task, TaskEvent, TaskStatus
from tasks.serializers import iso
from tasks.summary import DUPLICATES_WINDOW, RECENT_DONE, done_per_hour, space_summary

CARDS_PER_COLUMN = 50
DUPLICATE_PAIRS = 5  # the likely duplicates strip (SPEC §16)
COLUMNS = [
    ("people", "Waiting on people"),  # SPEC §21: proposals a person decides; SPEC §22: parked work
    ("ready", "Ready"),
    ("blocked", "Blocked"),
    ("claimed", "Claimed and assigned"),
    ("in_review", "In review"),
    ("done", "Done, last 7 days"),
]


FILTERS = ("q", "priority", "label")  # read by the API's task filter, as GET …/tasks reads them
LABELS_OFFERED = 200  # the label filter's suggestions, from the space's label index


def board_tasks(space: Space, params: QueryDict, now) -> QuerySet:
    """The space's tasks as the board's search and filters ask: ``q`` (SPEC §13's full-text
    search), ``priority`` and ``label`` (each repeatable), read by the API's own filter so each
    means on the board what it means in ``GET …/tasks``; a bad one is the same ``422``."""
    wanted = QueryDict(mutable=True)
    for name in FILTERS:
        wanted.setlist(name, params.getlist(name))
    return checked_filter(wanted, space=space, queryset=Task.objects.filter(space=space), now=now).qs


def column_queries(tasks: QuerySet, now, *, person_checks: bool = False, aging_minutes: int | None = None
                   ) -> dict[str, QuerySet]:
    """Each column's tasks, by the status a read at ``now`` shows (``tasks.status``). Waiting on
    people: proposals, tasks with an open question, parked tasks (SPEC §22: a steward unparks or
    withdraws them) and, where a person's check accepts an attempt (SPEC §21 ``checks_by:
    people``), the tasks in review. Ready: in the order ``next`` takes them (aging included)."""
    people = (TaskStatus.PROPOSED, TaskStatus.WAITING, TaskStatus.PARKED,
              *((TaskStatus.IN_REVIEW,) if person_checks else ()))
    return {
        "people": tasks.filter(status__in=people).order_by("priority", "number"),
        "ready": tasks.filter(ready_condition(now)).order_by(*next_order(aging_minutes)),
        "blocked": tasks.filter(shown_as(TaskStatus.OPEN, now)).filter(blocked()).order_by("priority", "number"),
        "claimed": tasks.filter(shown_in(HELD, now)).order_by("priority", "number"),
        "in_review": tasks.filter(status=TaskStatus.IN_REVIEW).exclude(status__in=people).order_by(
            "priority", "number"),
        "done": tasks.filter(status=TaskStatus.DONE, updated_at__gte=now - RECENT_DONE).order_by("-updated_at"),
    }


def held_by(tasks: QuerySet, member: int | None, now) -> QuerySet:
    """The member filter: tasks they hold or created."""
    if member:
        holds = Claim.objects.filter(Claim.live(now), task=OuterRef("pk"), member_id=member)
        tasks = tasks.filter(Q(creator_id=member) | Exists(holds))
    return tasks


def version(space: Space) -> str:
    """Changes when anything on the board may have: a history event, a duplicate prevented, a
    claim entering the last fifth of its lease, a claim past its expiry (shown lapsed before
    its lapse is recorded: a read writes nothing, SPEC §15)."""
    now = timezone.now()
    latest = TaskEvent.objects.filter(space=space).aggregate(latest=Max("id"))["latest"] or 0
    duplicates = allocation.conflicts_since(space.pk, now - DUPLICATES_WINDOW)
    warned = lapses.lapsing(Claim.objects.filter(space=space), now).count()
    due = lapses.due_claims(now=now, space_id=space.pk).count()
    spent = month_spend(space.pk, now)  # a report changes a card's spend with no history event
    return f"{latest}.{duplicates}.{warned}.{due}.{spent}"


def cards(space: Space, numbers: list[int]) -> dict[int, dict[str, Any]]:
    """The cards of these tasks, in a fixed number of queries however many there are."""
    now = timezone.now()
    tasks = list(with_shown_status(Task.objects.filter(space=space, number__in=numbers), now).select_related("creator"))
    graph.attach(tasks)
    ids = [t.pk for t in tasks]
    holders: dict[int, list[tuple[str, str]]] = {}
    live = Claim.objects.filter(Claim.live(now), task_id__in=ids)
    for task_id, name, since in live.order_by("created_at").values_list("task_id", "member__name", "created_at"):
        holders.setdefault(task_id, []).append((name, iso(since)))
    about_to_lapse = set(lapses.lapsing(live, now).values_list("task_id", flat=True))
    last_ended = (Claim.objects.filter(task_id__in=ids, ended_at__isnull=False).order_by("task_id", "-ended_at")
                  .distinct("task_id").values_list("task_id", "end_reason", "ended_at"))
    lapsed = {task_id: ended for task_id, reason, ended in last_ended if reason == ClaimEnd.LAPSED}
    # A lapse not recorded yet ended at its expiry, as its record will say.
    for task_id, expired in lapses.due_claims(now=now, space_id=space.pk).filter(task_id__in=ids).values_list(
            "task_id", "expires_at"):
        lapsed[task_id] = max(expired, lapsed.get(task_id, expired))
    attempts: dict[int, dict[str, Any]] = {}
    # Counted in a subquery: grouping by the attempt's id would not say which row it is, as the
    # primary key is (id, space_id) (docs/architecture.md, A schema ready to shard).
    confirmed = (Check.objects.filter(space_id=space.pk, attempt=OuterRef("pk"), verdict="confirm")
                 .values("attempt").annotate(n=Count("pk")).values("n")[:1])
    latest = (Attempt.objects.filter(space_id=space.pk, task_id__in=ids).order_by("task_id", "-number")
              .annotate(confirms=Coalesce(Subquery(confirmed), 0)))
    for attempt in latest.values("task_id", "number", "state", "created_at", "decided_at", "confirms"):
        attempts.setdefault(attempt["task_id"], attempt)  # the latest attempt of each task
    spends = cost_selectors.tasks_spend(space.pk, ids)
    out = {}
    for task in tasks:
        blocked_by, blocks = task.graph
        held = holders.get(task.pk, [])
        attempt = attempts.get(task.pk)
        if task.shown_status == TaskStatus.DONE:
            since, verb = task.updated_at, "done"
        elif task.shown_status == TaskStatus.IN_REVIEW and attempt:
            since, verb = attempt["created_at"], "in review"
        elif held:
            since, verb = None, "claimed"
        else:
            since, verb = task.created_at, "created"
        out[task.number] = {
            "number": task.number, "title": task.title, "status": task.shown_status, "slot": task.work_item_id,
            "priority": task.priority, "labels": list(task.labels), "setbacks": task.setbacks,
            "holders": [name for name, _ in held], "lapsing": task.pk in about_to_lapse,
            # the last claim lapsed and nobody holds it since (SPEC §15)
            "lapsed": iso(lapsed[task.pk]) if task.pk in lapsed and not held else None,
            "blocked_by": blocked_by, "blocks": blocks, "spend_usd": spends.get(task.pk, 0),
            "attempt": None if attempt is None else {
                "number": attempt["number"], "state": attempt["state"], "confirmations": attempt["confirms"],
                "needed": space.confirmations_required},
            "age_verb": verb, "since": held[0][1] if since is None else iso(since),
            "url": reverse("admin:tasks_task_change", args=[task.pk]),
        }
    return out


def board_data(space: Space, *, since: int | None, numbers: list[int], params: QueryDict,
               member: int | None) -> dict[str, Any]:
    now = timezone.now()
    columns = {}
    listed: list[int] = []
    person_checks = space.checks_by == ChecksBy.PEOPLE
    for name, tasks in column_queries(held_by(board_tasks(space, params, now), member, now), now,
                                      person_checks=person_checks,
                                      aging_minutes=space.priority_aging_minutes).items():
        shown = list(tasks.values_list("number", flat=True)[:CARDS_PER_COLUMN])
        total = len(shown) if len(shown) < CARDS_PER_COLUMN else tasks.count()
        columns[name] = {"total": total, "cards": shown}
        listed += shown
    if since is None:
        wanted = set(listed)
    else:
        changed = (TaskEvent.objects.filter(space=space, id__gt=since, task__number__in=listed)
                   .values_list("task__number", flat=True).distinct())
        # A claim past its expiry changes its card with no event yet (its lapse is not recorded).
        expired = lapses.due_claims(now=now, space_id=space.pk).filter(task__number__in=listed).values_list(
            "task__number", flat=True)
        wanted = set(changed) | set(expired) | (set(numbers) & set(listed))
    return {"summary": space_summary(space), "throughput": done_per_hour(space, now), "columns": columns,
            "cards": cards(space, sorted(wanted))}


RESULT_SHOWN = 2000  # characters of an attempt's post the panel shows: what a person checks


def task_panel(space: Space, number: object) -> dict[str, Any]:
    """Everything the board's panel shows of one task: its card, body, blockers and what it
    blocks (with titles), claims with their expiry, attempts with their checks, and its history
    in words with members by name."""
    task = selectors.task_with_work(space=space, number=number)
    blocked_by, blocks = graph.graph_of(task)
    related = {n: (title, status) for n, title, status in with_shown_status(Task.objects.filter(
        space=space, number__in=blocked_by + blocks), timezone.now()).values_list("number", "title", "shown_status")}

    def linked(numbers: list[int]) -> list[dict[str, Any]]:
        return [{"number": n, "title": related[n][0], "status": related[n][1]} for n in numbers if n in related]

    events = list(TaskEvent.objects.filter(task=task).order_by("id"))
    return {
        "card": cards(space, [task.number])[task.number],
        "body": task.body, "delivery_mode": task.delivery_mode, "created_at": iso(task.created_at),
        "creator": task.creator.name if task.creator else None,
        "superseded_by": task.superseded_by.number if task.superseded_by else None,
        "blocked_by": linked(blocked_by), "blocks": linked(blocks),
        "claims": [{"member": c.member.name, "origin": c.origin, "created_at": iso(c.created_at),
                    "expires_at": iso(c.expires_at), "ended_at": iso(c.shown_end[0]) if c.shown_end[0] else None,
                    "end_reason": c.shown_end[1]} for c in sorted(task.claims.all(), key=lambda c: c.created_at)],
        "attempts": [{"number": a.number, "post": a.post_id, "result": a.post.body[:RESULT_SHOWN], "member": a.member.name, "state": a.state, "created_at": iso(a.created_at),
                      "checks": [{"member": c.member.name, "verdict": c.verdict, "reason": c.reason,
                                  "created_at": iso(c.created_at)} for c in a.checks.all()]}
                     for a in sorted(task.attempts.all(), key=lambda a: a.number)],
        "history": history.lines(events),
        # SPEC §21: its questions with their answers, and its thread, oldest first.
        "questions": [{"id": q.pk, "asker": q.asker.name, "to": q.addressee.name if q.addressee else q.to,
                       "body": q.body, "options": q.options, "state": q.state, "answer": q.answer,
                       "option": q.option or None, "answered_by": q.answered_by.name if q.answered_by else None,
                       "created_at": iso(q.created_at), "expires_at": iso(q.expires_at)}
                      for q in Question.objects.filter(space=space, task=task).select_related(
                          "asker", "addressee", "answered_by").order_by("pk")],
        "messages": [{"id": m.pk, "sender": m.sender.name, "body": m.body, "created_at": iso(m.created_at)}
                     for m in Message.objects.filter(space=space, task=task).select_related("sender").order_by("pk")],
        "slot_held": bool(task.work_item_id) and SlotHold.objects.filter(
            space=space, work_item_id=task.work_item_id).exists(),
        "admin_url": reverse("admin:tasks_task_change", args=[task.pk]),
    }
