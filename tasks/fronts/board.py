"""The board (SPEC §14): a live page for people at /board/{slug}/, for staff users with view_task.

The page polls ``data`` with a conditional request. The answer's version is the space's
latest history event and its duplicates count, so an unchanged board costs two index
lookups and a ``304``. Otherwise the answer lists each column's card numbers in order,
with the full card only for tasks whose history moved since the version the page has
(``since``), or that it asks for by number (``numbers``) because it has never seen them.
"""
from __future__ import annotations

from typing import Any

from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import permission_required
from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone

from allocation import services as allocation
from spaces.models import Space
from tasks import graph, lapses, similarity
from tasks.filters import LABEL, blocked, ready_condition
from tasks.models import Attempt, Claim, Task, TaskEvent, TaskStatus
from tasks.serializers import iso
from tasks.summary import DUPLICATES_WINDOW, RECENT_DONE, space_summary

CARDS_PER_COLUMN = 50
DUPLICATE_PAIRS = 5  # the likely duplicates strip (SPEC §16)
COLUMNS = [
    ("ready", "Ready"),
    ("blocked", "Blocked"),
    ("claimed", "Claimed and assigned"),
    ("in_review", "In review"),
    ("done", "Done, last 7 days"),
]


def column_queries(space: Space, now) -> dict[str, QuerySet]:
    tasks = Task.objects.filter(space=space)
    return {
        "ready": tasks.filter(ready_condition()).order_by("priority", "number"),
        "blocked": tasks.filter(status=TaskStatus.OPEN).filter(blocked()).order_by("priority", "number"),
        "claimed": tasks.filter(status__in=[TaskStatus.CLAIMED, TaskStatus.ASSIGNED]).order_by("priority", "number"),
        "in_review": tasks.filter(status=TaskStatus.IN_REVIEW).order_by("priority", "number"),
        "done": tasks.filter(status=TaskStatus.DONE, updated_at__gte=now - RECENT_DONE).order_by("-updated_at"),
    }


def filtered(tasks: QuerySet, *, label: str | None, member: int | None) -> QuerySet:
    if label:
        tasks = tasks.filter(labels__contains=[label])
    if member:
        holds = Claim.objects.filter(task=OuterRef("pk"), member_id=member, ended_at=None)
        tasks = tasks.filter(Q(creator_id=member) | Exists(holds))
    return tasks


def version(space: Space) -> str:
    """Changes when anything on the board may have: a history event, a duplicate prevented, a
    claim entering the last fifth of its lease."""
    now = timezone.now()
    lapses.lapse_due(space_id=space.pk, now=now)  # a lapse nobody met yet: recorded, so shown ready
    latest = TaskEvent.objects.filter(space=space).aggregate(latest=Max("id"))["latest"] or 0
    duplicates = allocation.conflicts_since(space.pk, now - DUPLICATES_WINDOW)
    warned = lapses.lapsing(Claim.objects.filter(space=space), now).count()
    return f"{latest}.{duplicates}.{warned}"


def cards(space: Space, numbers: list[int]) -> dict[int, dict[str, Any]]:
    """The cards of these tasks, in a fixed number of queries however many there are."""
    tasks = list(Task.objects.filter(space=space, number__in=numbers).select_related("creator"))
    graph.attach(tasks)
    ids = [t.pk for t in tasks]
    holders: dict[int, list[tuple[str, str]]] = {}
    now = timezone.now()
    live = Claim.objects.filter(Claim.live(now), task_id__in=ids)
    for task_id, name, since in live.order_by("created_at").values_list("task_id", "member__name", "created_at"):
        holders.setdefault(task_id, []).append((name, iso(since)))
    about_to_lapse = set(lapses.lapsing(live, now).values_list("task_id", flat=True))
    attempts: dict[int, dict[str, Any]] = {}
    latest = (Attempt.objects.filter(task_id__in=ids).order_by("task_id", "-number")
              .annotate(confirms=Count("checks", filter=Q(checks__verdict="confirm"))))
    for attempt in latest.values("task_id", "number", "state", "created_at", "decided_at", "confirms"):
        attempts.setdefault(attempt["task_id"], attempt)  # the latest attempt of each task
    out = {}
    for task in tasks:
        blocked_by, blocks = task.graph
        held = holders.get(task.pk, [])
        attempt = attempts.get(task.pk)
        if task.status == TaskStatus.DONE:
            since, verb = task.updated_at, "done"
        elif task.status == TaskStatus.IN_REVIEW and attempt:
            since, verb = attempt["created_at"], "in review"
        elif held:
            since, verb = None, "claimed"
        else:
            since, verb = task.created_at, "created"
        out[task.number] = {
            "number": task.number, "title": task.title, "status": task.status, "slot": task.work_item_id,
            "priority": task.priority, "labels": list(task.labels),
            "holders": [name for name, _ in held], "lapsing": task.pk in about_to_lapse,
            "blocked_by": blocked_by, "blocks": blocks,
            "attempt": None if attempt is None else {
                "number": attempt["number"], "state": attempt["state"], "confirmations": attempt["confirms"],
                "needed": space.confirmations_required},
            "age_verb": verb, "since": held[0][1] if since is None else iso(since),
            "url": reverse("admin:tasks_task_change", args=[task.pk]),
        }
    return out


def board_data(space: Space, *, since: int | None, numbers: list[int], label: str | None,
               member: int | None) -> dict[str, Any]:
    now = timezone.now()
    columns = {}
    listed: list[int] = []
    for name, tasks in column_queries(space, now).items():
        tasks = filtered(tasks, label=label, member=member)
        shown = list(tasks.values_list("number", flat=True)[:CARDS_PER_COLUMN])
        total = len(shown) if len(shown) < CARDS_PER_COLUMN else tasks.count()
        columns[name] = {"total": total, "cards": shown}
        listed += shown
    if since is None:
        wanted = set(listed)
    else:
        changed = (TaskEvent.objects.filter(space=space, id__gt=since, task__number__in=listed)
                   .values_list("task__number", flat=True).distinct())
        wanted = set(changed) | (set(numbers) & set(listed))
    return {"summary": space_summary(space), "columns": columns, "cards": cards(space, sorted(wanted))}


def int_param(request: HttpRequest, name: str) -> int | None:
    value = request.GET.get(name, "")
    return int(value) if value.isdigit() and len(value) < 19 else None


@staff_member_required
@permission_required("tasks.view_task", raise_exception=True)
def board_page(request: HttpRequest, slug: str) -> HttpResponse:
    space = get_object_or_404(Space, slug=slug)
    members = space.members.order_by("name").values_list("pk", "name")
    return render(request, "board/board.html", {
        "space": space, "columns": COLUMNS, "members": members, "data_url": reverse("board-data", args=[space.slug]),
        "pairs_url": reverse("board-duplicates", args=[space.slug]),
        # the strip's Keep and Not a duplicate post to the admin's page for them, for those who may change tasks
        "duplicates_url": reverse("admin:tasks_task_duplicates", args=[space.pk]),
        "can_change": request.user.has_perm("tasks.change_task")})


@staff_member_required
@permission_required("tasks.view_task", raise_exception=True)
def board_data_view(request: HttpRequest, slug: str) -> HttpResponse:
    space = get_object_or_404(Space, slug=slug)
    label = request.GET.get("label", "").lower() or None
    if label and not LABEL.fullmatch(label):
        return JsonResponse({"error": "invalid_request", "detail": "Bad label."}, status=422)
    member = int_param(request, "member")
    numbers = [int(n) for n in request.GET.get("numbers", "").split(",") if n.isdigit() and len(n) < 19][:250]
    etag = f'"{version(space)}.{label or ""}.{member or ""}"'
    if not numbers and request.headers.get("If-None-Match") == etag:
        return HttpResponseNotModified(headers={"ETag": etag})
    data = board_data(space, since=int_param(request, "since"), numbers=numbers, label=label, member=member)
    data["version"] = int(etag.strip('"').split(".")[0])
    response = JsonResponse(data)
    response["ETag"] = etag
    response["Cache-Control"] = "private, no-cache"
    return response


@staff_member_required
@permission_required("tasks.view_task", raise_exception=True)
def board_duplicates_view(request: HttpRequest, slug: str) -> HttpResponse:
    """The likely duplicates strip (SPEC §16), apart from the cards: finding the pairs reads every
    live title of the space (0.3-0.4 s at 5,000 live tasks, docs/benchmarks.md), so the page
    asks for them on load, after an action and every half minute, not at each card change."""
    space = get_object_or_404(Space, slug=slug)
    pairs = similarity.likely_duplicates(space, limit=DUPLICATE_PAIRS)
    response = JsonResponse({"duplicates": [similarity.pair_answer(p) for p in pairs]})
    response["Cache-Control"] = "private, no-cache"
    return response
