"""Stewards recover duplicates and close work (SPEC §5): supersede, withdraw, reject; and put
parked work back in the queue (SPEC §22).

Each locks the task rows it changes (in pk order when there are two, so two supersedes
crossing each other cannot deadlock), records an attributed history event, ends live
claims and moves occupancy as SPEC §4.4 says.
"""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from allocation import services as allocation
from spaces.models import Member, Role
from tasks import errors, graph, questions, wakeups
from tasks.claims import end_claims
from tasks.lifecycle import check_task_live, live_claims, notify, record_event, release_occupancy
from tasks.models import (
    LIVE_STATUSES,
    ClaimEnd,
    EventKind,
    NotificationKind,
    Task,
    TaskStatus,
)


def hold_slot(*, space, work_item_id: object, actor: Member, reason: str = ""):
    """A steward holds a catalog slot (SPEC §5.2): new tasks binding to it are refused, and each
    live task bound to it records ``held`` in its history (SPEC §8) when the hold is new."""
    with transaction.atomic():
        hold, created = allocation.hold_slot(space=space, work_item_id=work_item_id, actor=actor, reason=reason)
        if created:
            bound = Task.objects.filter(space=space, work_item_id=hold.work_item_id, status__in=LIVE_STATUSES)
            for task in bound.order_by("number"):
                record_event(task=task, kind=EventKind.HELD, actor=actor, work_item_id=hold.work_item_id,
                             reason=reason)
    return hold


def lock_tasks(*tasks: Task) -> list[Task]:
    ids = sorted({t.pk for t in tasks})
    # of=self, no key: the joined space row stays unlocked, and inserts that check a foreign key
    # to these rows (history, claims, blockers) are not blocked by the lock (FOR UPDATE would,
    # and deadlock with them).
    locked = {t.pk: t for t in Task.objects.select_for_update(of=("self",), no_key=True).select_related("space")
              .filter(pk__in=ids).order_by("pk")}
    return [locked[t.pk] for t in tasks]


def close_task(task: Task, *, status: str, actor: Member | None, reason: str, survivor: Task | None = None) -> None:
    questions.close_with_task(task)
    holders = list(live_claims(task).values_list("member_id", flat=True))
    end_claims(live_claims(task), ClaimEnd.SUPERSEDED if survivor else ClaimEnd.CLOSED)
    task.status = status
    task.superseded_by = survivor
    task.closed_by = actor
    task.closed_at = task.updated_at = timezone.now()
    task.close_reason = reason
    task.save(update_fields=["status", "superseded_by", "closed_by", "closed_at", "close_reason", "updated_at"])
    release_occupancy(task, to=survivor)
    if survivor is not None:
        graph.task_superseded(task, survivor, actor=actor)
    else:
        graph.task_ended(task, actor=actor)
    if survivor is not None and holders:
        notify(members=holders, kind=NotificationKind.TASK_SUPERSEDED, task=task, surviving_task=survivor.number)


def supersede_task(*, task: Task, survivor: Task, actor: Member | None, reason: str) -> Task:
    """Mark ``task`` a leftover duplicate of ``survivor`` (SPEC §5.1). Nothing is deleted."""
    if survivor.space_id != task.space_id or survivor.pk == task.pk:
        raise errors.SurvivorInvalid("The surviving task must be another task of this space.")
    with transaction.atomic():
        graph.lock_graph(task.space_id)  # edges move to the survivor: the graph's order first
        task, survivor = lock_tasks(task, survivor)
        if task.status == TaskStatus.SUPERSEDED:
            raise errors.AlreadySuperseded(
                f"Task {task.number} was already superseded by task {task.superseded_by.number}.",
                surviving_task={"id": task.superseded_by.number, "status": task.superseded_by.status},
            )
        check_task_live(task)
        if survivor.status not in LIVE_STATUSES:
            raise errors.SurvivorInvalid(f"Task {survivor.number} is {survivor.status}; the survivor must be live.")
        close_task(task, status=TaskStatus.SUPERSEDED, actor=actor, reason=reason, survivor=survivor)
        record_event(task=task, kind=EventKind.SUPERSEDED, actor=actor, surviving_task=survivor.number, reason=reason)
    return task


def withdraw_task(*, task: Task, actor: Member, reason: str = "") -> Task:
    """The creator or a steward takes the task back: it will not be done."""
    if actor.role != Role.STEWARD and task.creator_id != actor.pk:
        raise errors.NotTaskCreator()
    with transaction.atomic():
        (task,) = lock_tasks(task)
        check_task_live(task)
        close_task(task, status=TaskStatus.WITHDRAWN, actor=actor, reason=reason)
        record_event(task=task, kind=EventKind.WITHDRAWN, actor=actor, reason=reason)
    return task


def reject_task(*, task: Task, actor: Member | None, reason: str = "") -> Task:
    """A steward rejects the task as not to be done."""
    with transaction.atomic():
        (task,) = lock_tasks(task)
        check_task_live(task)
        close_task(task, status=TaskStatus.REJECTED, actor=actor, reason=reason)
        record_event(task=task, kind=EventKind.REJECTED, actor=actor, reason=reason)
    return task


def unpark(*, task: Task, actor: Member) -> Task:
    """A steward puts a parked task back in the queue (SPEC §22): open, its setbacks counted from 0."""
    with transaction.atomic():
        (task,) = lock_tasks(task)
        if task.status != TaskStatus.PARKED:
            raise errors.TaskNotParked(f"Task {task.number} is {task.status}: only a parked task is unparked.",
                                       task_status=task.status)
        task.status, task.setbacks, task.updated_at = TaskStatus.OPEN, 0, timezone.now()
        task.save(update_fields=["status", "setbacks", "updated_at"])
        record_event(task=task, kind=EventKind.UNPARKED, actor=actor)
        wakeups.work_ready(task.space_id)
    return task
