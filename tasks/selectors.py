"""Reads of tasks, scoped to one space."""
from __future__ import annotations

from django.db.models import Exists, OuterRef, Prefetch, QuerySet
from django.utils import timezone

from common import refusals as errors
from spaces.models import Space
from spaces.selectors import as_int
from tasks.lapses import lapse_due
from tasks.models import Attempt, Claim, Task, TaskStatus
from tasks.status import with_shown_status


def get_task(*, space: Space, number: object, lock: bool = False) -> Task:
    """The space's task ``number``. With ``lock``, its row lock, which every change of the task
    takes first; and a claim of it past its expiry has its lapse recorded before the change
    goes on (``tasks.lapses``), found by the same query."""
    tasks = Task.objects.select_related("superseded_by", "creator", "space")
    now = timezone.now()
    if lock:
        tasks = tasks.select_for_update(of=("self",), no_key=True).annotate(
            claim_due=Exists(Claim.objects.filter(Claim.due(now), task_id=OuterRef("pk"))))
    task = tasks.filter(space=space, number=as_int(number)).first()
    if task is None:
        raise errors.NotFound(f"No task {number} in this space.")
    if lock and task.claim_due:
        lapse_due(task=task, now=now, locked=True)
    return task


def list_tasks(*, space: Space, include_superseded: bool) -> QuerySet[Task]:
    tasks = Task.objects.filter(space=space).select_related("creator", "superseded_by")
    if not include_superseded:
        tasks = tasks.exclude(status=TaskStatus.SUPERSEDED)
    return tasks


def task_with_work(*, space: Space, number: object) -> Task:
    """One task with its claims, and its attempts with their checks, loaded for its detail, with
    the status a read shows (``tasks.status``: a claim past its expiry is shown ended, and its
    lapse left for the next change to record)."""
    attempts = Attempt.objects.select_related("member").prefetch_related("checks__member")
    tasks = (Task.objects.filter(space=space, number=as_int(number)).select_related("creator", "superseded_by")
             .prefetch_related("claims__member", Prefetch("attempts", queryset=attempts)))
    task = with_shown_status(tasks, timezone.now()).first()
    if task is None:
        raise errors.NotFound(f"No task {number} in this space.")
    return task
