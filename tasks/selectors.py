"""Reads of tasks, scoped to one space."""
from __future__ import annotations

from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from common import refusals as errors
from spaces.models import Space
from spaces.selectors import as_int
from tasks.models import Claim, Task, TaskStatus


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
        from tasks.lapses import lapse_due  # lapses records through lifecycle, which reads tasks here

        lapse_due(task=task, now=now, locked=True)
    return task


def list_tasks(*, space: Space, include_superseded: bool) -> QuerySet[Task]:
    tasks = Task.objects.filter(space=space).select_related("creator", "superseded_by")
    if not include_superseded:
        tasks = tasks.exclude(status=TaskStatus.SUPERSEDED)
    return tasks


def task_with_work(*, space: Space, number: object) -> Task:
    """One task with its claims, and its attempts with their checks, loaded for its detail."""
    from django.db.models import Prefetch

    from tasks.models import Attempt

    task = get_task(space=space, number=number)
    attempts = Attempt.objects.select_related("member").prefetch_related("checks__member")
    task = (
        Task.objects.select_related("creator", "superseded_by")
        .prefetch_related("claims__member", Prefetch("attempts", queryset=attempts))
        .get(pk=task.pk)
    )
    now = timezone.now()
    if any(claim.ended_at is None and claim.expires_at <= now for claim in task.claims.all()):
        from tasks.lapses import lapse_due  # see get_task

        lapse_due(task=task, now=now)  # a read meets the lapse too (SPEC §15): recorded, then shown
        return task_with_work(space=space, number=number)
    return task
