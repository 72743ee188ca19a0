"""Reads of tasks, scoped to one space."""
from __future__ import annotations

from django.db.models import QuerySet

from common import refusals as errors
from spaces.models import Space
from spaces.selectors import as_int
from tasks.models import Task, TaskStatus


def get_task(*, space: Space, number: object, lock: bool = False) -> Task:
    tasks = Task.objects.select_related("superseded_by", "creator", "space")
    if lock:
        tasks = tasks.select_for_update(of=("self",), no_key=True)
    task = tasks.filter(space=space, number=as_int(number)).first()
    if task is None:
        raise errors.NotFound(f"No task {number} in this space.")
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
    return (
        Task.objects.select_related("creator", "superseded_by")
        .prefetch_related("claims__member", Prefetch("attempts", queryset=attempts))
        .get(pk=task.pk)
    )
