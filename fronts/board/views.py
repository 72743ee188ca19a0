"""The board's routes (SPEC §14): the page, its data, a task's panel and the likely duplicates,
for staff users with view_task (the actions that change tasks: ``fronts.board.actions``)."""
from __future__ import annotations

import hashlib

from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from common.problems import problem_response
from common.refusals import DomainError
from fronts.board.actions import controls
from fronts.board.data import COLUMNS, DUPLICATE_PAIRS, FILTERS, LABELS_OFFERED, board_data, task_panel, version
from spaces.models import Role, Space
from spaces.permissions import role_refusal
from tasks import similarity
from tasks.models import PRIORITIES, Routine, SpaceLabel

ROUTINES_SHOWN = 20


def int_param(request: HttpRequest, name: str) -> int | None:
    value = request.GET.get(name, "")
    return int(value) if value.isdigit() and len(value) < 19 else None


@staff_member_required
@permission_required("tasks.view_task", raise_exception=True)
def board_page(request: HttpRequest, slug: str) -> HttpResponse:
    space = get_object_or_404(Space, slug=slug)
    members = list(space.members.order_by("name").only("pk", "name", "role"))
    labels = SpaceLabel.objects.filter(space=space).order_by("label").values_list("label", flat=True)
    allowed = controls(request.user)
    return render(request, "board/board.html", {
        "space": space, "columns": COLUMNS, "members": [(m.pk, m.name) for m in members],
        "labels": labels[:LABELS_OFFERED], "priorities": list(PRIORITIES),
        "data_url": reverse("board-data", args=[space.slug]),
        "pairs_url": reverse("board-duplicates", args=[space.slug]),
        "task_url": reverse("board-task", args=[space.slug, 0]).removesuffix("0"),
        "controls": allowed, "can_act": any(allowed.values()),
        # SPEC §22: the space's routines, each with its next run (the sweep makes their tasks).
        "routines": Routine.objects.filter(space=space).order_by("next_run_at", "pk")[:ROUTINES_SHOWN],
        # who the picker offers for Assign: members with the role to attempt work (the command
        # refuses any other, SPEC §5.2)
        "member_choices": [[m.pk, m.name] for m in members if role_refusal(m, Role.WRITER) is None]})


@staff_member_required
@permission_required("tasks.view_task", raise_exception=True)
def board_data_view(request: HttpRequest, slug: str) -> HttpResponse:
    space = get_object_or_404(Space, slug=slug)
    member = int_param(request, "member")
    numbers = [int(n) for n in request.GET.get("numbers", "").split(",") if n.isdigit() and len(n) < 19][:250]
    view = sorted((k, v) for k in (*FILTERS, "member") for v in request.GET.getlist(k))
    etag = f'"{version(space)}.{hash_of(view)}"'
    if not numbers and request.headers.get("If-None-Match") == etag:
        return HttpResponseNotModified(headers={"ETag": etag})
    try:
        data = board_data(space, since=int_param(request, "since"), numbers=numbers, params=request.GET,
                          member=member)
    except DomainError as error:
        return problem_response(error)
    data["version"] = int(etag.strip('"').split(".")[0])
    response = JsonResponse(data)
    response["ETag"] = etag
    response["Cache-Control"] = "private, no-cache"
    return response


def hash_of(view: list[tuple[str, str]]) -> str:
    """The filters in an ETag: short, and only the characters an ETag may hold."""
    return hashlib.sha256(repr(view).encode()).hexdigest()[:16] if view else "all"


@staff_member_required
@permission_required("tasks.view_task", raise_exception=True)
def board_task_view(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """The task panel's data (a card opens it, no page load)."""
    space = get_object_or_404(Space, slug=slug)
    try:
        panel = task_panel(space, number)
    except DomainError as error:
        return problem_response(error)
    response = JsonResponse(panel)
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
