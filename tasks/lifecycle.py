"""What every task transition shares: status from claims and attempts, occupancy on
termination, notifications. Callers hold the task's row lock (``get_task(lock=True)``)."""
from __future__ import annotations

from typing import Any, Iterable

from django.db import connection
from django.utils import timezone

from allocation import services as allocation
from allocation.conflict_keys import ConflictKey
from spaces.models import Member, Role
from tasks import errors, similarity
from tasks.models import (
    LIVE_STATUSES,
    AttemptState,
    Claim,
    ClaimOrigin,
    Notification,
    QuestionState,
    Task,
    TaskEvent,
    TaskStatus,
)
from tasks.sql import count_done_sql


def notify(*, members: Iterable[Member | int], kind: str, task: Task | None, space_id: int | None = None,
           **details: Any) -> None:
    """A notification to each of ``members``, about ``task`` (or, with none, in ``space_id``)."""
    member_ids = sorted({m if isinstance(m, int) else m.pk for m in members})
    space_id = task.space_id if task is not None else space_id
    Notification.objects.bulk_create(
        [Notification(space_id=space_id, member_id=mid, kind=kind, task=task, details=details) for mid in member_ids]
    )


def mark_read(*, member: Member, ids: list[int] | None = None) -> int:
    """The member's unread notifications (those of ``ids``, or all) marked read; how many."""
    items = Notification.objects.filter(member=member, read_at=None)
    if ids is not None:
        items = items.filter(pk__in=ids)
    return items.update(read_at=timezone.now())


def notify_stewards(*, space_id: int, kind: str, **details: Any) -> None:
    """A notification, without a task, to each steward of the space."""
    stewards = Member.objects.filter(space_id=space_id, role=Role.STEWARD).values_list("pk", flat=True)
    Notification.objects.bulk_create(
        [Notification(space_id=space_id, member_id=mid, kind=kind, details=details) for mid in stewards])


def record_event(*, task: Task, kind: str, actor: Member | None, **details: Any) -> TaskEvent:
    return TaskEvent.objects.create(space_id=task.space_id, task=task, kind=kind, actor=actor, details=details)


def count_done(task: Task) -> None:
    """One more done task for its catalog slot (the board's per-slot figures)."""
    if not task.work_item_id:
        return
    with connection.cursor() as cursor:
        cursor.execute(count_done_sql(), [task.space_id, task.work_item_id])


def live_claims(task: Task):
    """The task's claims live now (SPEC §15: one past its expiry is ended, recorded or not)."""
    return task.claims.filter(Claim.live(timezone.now()), space_id=task.space_id)


def recompute_status(task: Task) -> str:
    """A live task's status follows from its attempts and claims (terminal ones stay put).

    waiting while a question on it is open (SPEC §21: only a task asked about is stored waiting,
    so no other pays a query for it); in_review while an attempt waits; assigned or claimed
    while someone holds it; else open.
    """
    if task.status not in LIVE_STATUSES or task.status in (TaskStatus.PROPOSED, TaskStatus.PARKED):
        # A proposal waits for its decision (SPEC §21), a parked task for a steward (SPEC §22).
        return task.status
    if task.status == TaskStatus.WAITING and task.questions.filter(
            space_id=task.space_id, state=QuestionState.OPEN).exists():
        return task.status
    if task.attempts.filter(space_id=task.space_id, cycle=task.cycle, state=AttemptState.WAITING).exists():
        status = TaskStatus.IN_REVIEW
    else:
        origins = set(live_claims(task).values_list("origin", flat=True))
        if ClaimOrigin.ASSIGNED in origins:
            status = TaskStatus.ASSIGNED
        elif origins:
            status = TaskStatus.CLAIMED
        else:
            status = TaskStatus.OPEN
    if status != task.status:
        task.status = status
        task.updated_at = timezone.now()
        Task.objects.filter(space_id=task.space_id, pk=task.pk).update(status=status, updated_at=task.updated_at)
    return status


def release_occupancy(task: Task, *, to: Task | None = None) -> None:
    """SPEC §4.4: a task that stopped being live hands each key it occupies to ``to`` (a
    superseding survivor), else to the key's next live task, lowest number first; a key
    with no live task left is free again (allocation owns the occupancy rows). Its title
    leaves the similar-tasks index (SPEC §16)."""
    similarity.forget(task)
    def successor(key: ConflictKey) -> Task | None:
        if to is not None:
            return to
        return (Task.objects.filter(space_id=task.space_id, conflict_kind=key.kind, conflict_target=key.target,
                                    delivery_mode=key.delivery_mode, status__in=LIVE_STATUSES)
                .exclude(pk=task.pk).order_by("number").first())

    allocation.release_occupancy(task, successor=successor)


def check_task_usable(task: Task) -> None:
    """Superseded tasks take no claim, attempt, check or note (SPEC §5.1)."""
    if task.status == TaskStatus.SUPERSEDED:
        survivor = task.superseded_by
        raise errors.TaskSuperseded(
            f"Task {task.number} was superseded by task {survivor.number}: work on that one.",
            surviving_task={"id": survivor.number, "status": survivor.status},
        )


def check_task_live(task: Task) -> None:
    check_task_usable(task)
    if task.status not in LIVE_STATUSES:
        raise errors.TaskClosed(f"Task {task.number} is {task.status}.", task_status=task.status)


def check_task_workable(task: Task) -> None:
    """Live, and not waiting for a person (SPEC §21): nobody works on a proposal, held or not,
    nor delivers on a task while a question on it is open."""
    check_task_live(task)
    if task.status == TaskStatus.PROPOSED:
        raise errors.TaskNotOpen(f"Task {task.number} is proposed: it waits for an approval before anyone works "
                                 "on it.", task_status=task.status)
    if task.status == TaskStatus.PARKED:
        raise errors.TaskNotOpen(f"Task {task.number} is parked: it was set back {task.setbacks} times; a steward "
                                 "unparks or withdraws it.", task_status=task.status)
    if task.status == TaskStatus.WAITING:
        raise errors.TaskNotOpen(f"Task {task.number} is waiting for the answer to a question; work on it goes on "
                                 "once it is answered.", task_status=task.status)
