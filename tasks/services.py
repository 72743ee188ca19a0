"""Creating tasks and notes: reserve, then mutate (SPEC §4.5–§4.8).

``create_task`` is the one path every front uses to create work. Reserve runs in its
own committed transaction (so racing intents see it at once); the mutation inserts the
task and its occupancy and drops the reservation in a second one. The occupancy unique
constraint is the last word: one live task per conflict key, whatever the timing.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from allocation import services as allocation
from allocation.catalog_index import current_catalog_version
from allocation.conflict_keys import ConflictKey, note_target, payload_sha256
from allocation.models import ConflictKind, DeliveryMode
from allocation.runner import Attempt
from spaces.errors import DomainError
from spaces.models import Member, Space
from tasks.lifecycle import check_task_usable
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
    attempt: Attempt | None = None,
    catalog_version: int | None = None,
) -> Task:
    """Create a task unless its conflict key is taken; raises the 409/422 of SPEC §4.6.

    Two transactions (SPEC §4.5): the reservation commits before the mutation. Under an
    idempotent ``attempt`` the runner holds the transaction, and the mutation commits
    with the operation's answer; otherwise each step commits on its own.
    ``catalog_version`` is the space's catalog version as this request read it (the key
    lookup loads the space with it); without it the version is read here.
    """
    if catalog_version is None:
        catalog_version = current_catalog_version(space.pk)
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
        payload_sha256=digest,
        work_item_id=bound.work_item_id,
        operation=attempt.operation if attempt else None,
    )
    if attempt is not None:
        attempt.commit_reservation()
    task = Task(
        space=space,
        title=title,
        body=body,
        delivery_mode=delivery_mode,
        work_item_id=bound.work_item_id,
        conflict_kind=key.kind,
        conflict_target=key.target,
        status=TaskStatus.OPEN,
        creator=actor,
        received_seq=reservation.received_seq,
        payload_sha256=digest,
    )
    try:
        # Its own transaction, or a savepoint in the attempt's: a lost occupancy race rolls
        # back only the mutation, and the reservation can still be released.
        with transaction.atomic():
            insert_task_with_occupancy(task=task, reservation=reservation, key=key)
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


# The mutation of SPEC §4.5.4 as one statement: number the task, insert it and
# its occupancy, drop the reservation and record the event. A single statement is its
# own transaction, so all of it commits or none does (a unique violation on the
# occupancy rolls back the task and the number too), in one round trip instead of seven.
INSERT_TASK_SQL = """
WITH numbered AS (
    UPDATE spaces_space SET task_counter = task_counter + 1 WHERE id = %(space)s RETURNING task_counter
), task AS (
    INSERT INTO tasks_task (space_id, number, title, body, delivery_mode, work_item_id, conflict_kind,
                            conflict_target, status, cycle, creator_id, received_seq, payload_sha256,
                            superseded_by_id, closed_by_id, closed_at, close_reason, created_at, updated_at)
    SELECT %(space)s, task_counter, %(title)s, %(body)s, %(delivery_mode)s, %(work_item_id)s, %(kind)s,
           %(target)s, %(status)s, %(cycle)s, %(creator)s, %(received_seq)s, %(payload_sha256)s,
           NULL, NULL, NULL, '', %(now)s, %(now)s
    FROM numbered
    RETURNING id, number
), occupancy AS (
    INSERT INTO allocation_occupancy (space_id, kind, target, delivery_mode, task_id, note_id, created_at)
    SELECT %(space)s, %(kind)s, %(target)s, %(delivery_mode)s, id, NULL, %(now)s FROM task
), dropped AS (
    DELETE FROM allocation_reservation WHERE id = %(reservation)s
), event AS (
    INSERT INTO tasks_taskevent (space_id, task_id, kind, actor_id, details, created_at)
    SELECT %(space)s, id, 'created', %(creator)s, %(details)s::jsonb, %(now)s FROM task
)
SELECT id, number FROM task
"""


def insert_task_with_occupancy(*, task: Task, reservation, key: ConflictKey) -> None:
    """Insert ``task`` (numbering it) with its occupancy, and drop ``reservation``, atomically."""
    details = {"work_item_id": task.work_item_id, "conflict_key": key.as_dict()}
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(INSERT_TASK_SQL, {
            "space": task.space_id, "title": task.title, "body": task.body,
            "delivery_mode": task.delivery_mode, "work_item_id": task.work_item_id, "kind": key.kind,
            "target": key.target, "status": task.status, "cycle": task.cycle, "creator": task.creator_id,
            "received_seq": task.received_seq, "payload_sha256": task.payload_sha256, "now": now,
            "reservation": reservation.pk, "details": json.dumps(details),
        })
        task.pk, task.number = cursor.fetchone()
    task.created_at = task.updated_at = now
    task._state.adding = False
    task._state.db = connection.alias


@dataclass(frozen=True)
class WindowResult:
    index: int
    status: int
    task: Task | None
    error: DomainError | None


def create_tasks_window(
    *, space: Space, actor: Member, proposals: list[dict], attempt: Attempt | None = None,
    catalog_version: int | None = None,
) -> list[WindowResult]:
    """SPEC §4.7: each proposal in array order, each answered as a single create would be."""
    results = []
    for index, proposal in enumerate(proposals):
        try:
            task = create_task(space=space, actor=actor, attempt=attempt, catalog_version=catalog_version,
                               **proposal)
        except DomainError as error:
            results.append(WindowResult(index, error.http_status, None, error))
        else:
            results.append(WindowResult(index, 201, task, None))
    return results


def add_note(*, task: Task, actor: Member, body: str, criterion: int | None = None,
             attempt: Attempt | None = None) -> Note:
    """A review note; the same member, criterion and body again is a 409 (SPEC §4.8)."""
    check_task_usable(task)
    space = task.space
    target = note_target(space.slug, task_number=task.number, criterion=criterion, member_id=actor.pk, body=body)
    key = ConflictKey(ConflictKind.POST_REVIEW_NOTE, target, DeliveryMode.MESSAGE)
    reservation = allocation.reserve(
        space=space,
        key=key,
        member=actor,
        payload_sha256=payload_sha256({"criterion": criterion, "body": body}),
        operation=attempt.operation if attempt else None,
    )
    if attempt is not None:
        attempt.commit_reservation()
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
