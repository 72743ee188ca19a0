"""Creating tasks and notes: reserve, then mutate (SPEC §4.5–§4.8).

``create_task`` is the one path every front uses to create work. Reserve runs in its
own committed transaction (so racing intents see it at once); the mutation inserts the
task and its occupancy and drops the reservation in a second one. The occupancy unique
constraint is the last word: one live task per conflict key, whatever the timing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction

from allocation import services as allocation
from allocation.conflict_keys import ConflictKey, note_target, payload_sha256
from allocation.models import ConflictKind, DeliveryMode, Operation
from spaces.errors import DomainError
from spaces.models import Member, Space
from tasks import errors
from tasks.models import EventKind, Note, Task, TaskEvent, TaskStatus


def record_event(*, task: Task, kind: str, actor: Member | None, **details: Any) -> TaskEvent:
    return TaskEvent.objects.create(space_id=task.space_id, task=task, kind=kind, actor=actor, details=details)


def allocate_task_number(space: Space) -> int:
    """The next per-space number, inside the caller's transaction.

    The UPDATE row-locks the space until commit, so numbers are handed out one at a time
    and a rolled-back creation gives its number back.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE spaces_space SET task_counter = task_counter + 1 WHERE id = %s RETURNING task_counter", [space.pk]
        )
        return cursor.fetchone()[0]


def create_task(
    *,
    space: Space,
    actor: Member,
    title: str,
    body: str = "",
    delivery_mode: str = DeliveryMode.RESULT,
    work_item_id: str | None = None,
    operation: Operation | None = None,
) -> Task:
    """Create a task unless its conflict key is taken; raises the 409/422 of SPEC §4.6."""
    received_seq, catalog_version = allocation.arrive(space)  # taken at arrival, before binding
    bound = allocation.bind_title(
        space=space, title=title, work_item_id=work_item_id, delivery_mode=delivery_mode,
        catalog_version=catalog_version,
    )
    key = bound.conflict_key
    digest = payload_sha256(
        {"title": title, "body": body, "delivery_mode": delivery_mode, "work_item_id": work_item_id}
    )
    reservation = allocation.reserve(
        space=space,
        key=key,
        member=actor,
        received_seq=received_seq,
        payload_sha256=digest,
        work_item_id=bound.work_item_id,
        operation=operation,
    )
    try:
        with transaction.atomic():
            task = Task.objects.create(
                space=space,
                number=allocate_task_number(space),
                title=title,
                body=body,
                delivery_mode=delivery_mode,
                work_item_id=bound.work_item_id,
                conflict_kind=key.kind,
                conflict_target=key.target,
                status=TaskStatus.OPEN,
                creator=actor,
                received_seq=received_seq,
                payload_sha256=digest,
            )
            allocation.occupy(reservation=reservation, space=space, key=key, task=task)
            record_event(
                task=task, kind=EventKind.CREATED, actor=actor, work_item_id=bound.work_item_id,
                conflict_key=key.as_dict(),
            )
    except IntegrityError:
        allocation.release_reservation(reservation)
        # Our reservation lapsed and another intent took the key meanwhile: it won.
        occupancy = allocation.find_occupancy(space, key)
        if occupancy is not None:
            raise allocation.occupied_error(occupancy, key) from None
        raise
    except BaseException:
        allocation.release_reservation(reservation)  # no phantom reservation
        raise
    return task


@dataclass(frozen=True)
class WindowResult:
    index: int
    status: int
    task: Task | None
    error: DomainError | None


def create_tasks_window(*, space: Space, actor: Member, proposals: list[dict], operation: Operation | None = None) -> list[WindowResult]:
    """SPEC §4.7: each proposal in array order, each answered as a single create would be."""
    results = []
    for index, proposal in enumerate(proposals):
        try:
            task = create_task(space=space, actor=actor, operation=operation, **proposal)
        except DomainError as error:
            results.append(WindowResult(index, error.http_status, None, error))
        else:
            results.append(WindowResult(index, 201, task, None))
    return results


def check_task_usable(task: Task) -> None:
    """Superseded tasks take no claim, attempt, check or note (SPEC §5.1)."""
    if task.status == TaskStatus.SUPERSEDED:
        survivor = task.superseded_by
        raise errors.TaskSuperseded(
            f"Task {task.number} was superseded by task {survivor.number}: work on that one.",
            surviving_task={"id": survivor.number, "status": survivor.status},
        )


def add_note(*, task: Task, actor: Member, body: str, criterion: int | None = None, operation: Operation | None = None) -> Note:
    """A review note; the same member, criterion and body again is a 409 (SPEC §4.8)."""
    check_task_usable(task)
    space = task.space
    target = note_target(space.slug, task_number=task.number, criterion=criterion, member_id=actor.pk, body=body)
    key = ConflictKey(ConflictKind.POST_REVIEW_NOTE, target, DeliveryMode.MESSAGE)
    reservation = allocation.reserve(
        space=space,
        key=key,
        member=actor,
        received_seq=allocation.next_received_seq(),
        payload_sha256=payload_sha256({"criterion": criterion, "body": body}),
        operation=operation,
    )
    try:
        with transaction.atomic():
            note = Note.objects.create(space=space, task=task, author=actor, criterion=criterion, body=body, target=target)
            allocation.occupy(reservation=reservation, space=space, key=key, note=note)
            record_event(task=task, kind=EventKind.NOTE, actor=actor, note=note.pk, criterion=criterion)
    except IntegrityError:
        allocation.release_reservation(reservation)
        occupancy = allocation.find_occupancy(space, key)
        if occupancy is not None:
            raise allocation.occupied_error(occupancy, key) from None
        raise
    except BaseException:
        allocation.release_reservation(reservation)
        raise
    return note
