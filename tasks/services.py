"""Creating tasks and notes: reserve, then mutate (SPEC §4.5–§4.8).

Each create is two steps, and the services here are each step's work, given their inputs
(the operation a reservation is for, the unit's lock as the mutation statement takes it): the
reservation (``reserve_task``, ``reserve_window``, ``reserve_note``), then the mutation
(``mutate_task``, ``insert_note``), which inserts the task and its occupancy and drops the
reservation. The command layer runs a single create's in one transaction
(``tasks.commands.create_once``: a racing intent waits on the reservation's index entry), and a
window's or a note's as a two-phase command (the reservations commit between them). The
occupancy unique constraint is the last word: one live task per conflict key, whatever the timing.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from allocation import services as allocation
from allocation.catalog_index import current_catalog_version
from allocation.conflict_keys import ConflictKey, note_target, payload_sha256
from allocation.models import ConflictKind, DeliveryMode
from idempotency.models import Operation
from common.refusals import DomainError
from telemetry import tracing
from spaces.models import Member, Role, Space
from tasks.errors import NotTaskCreator
from tasks.lifecycle import check_task_live, check_task_usable, record_event
from tasks import approvals, graph, similarity, wakeups
from tasks.errors import SimilarTaskExists
from tasks.models import DEFAULT_PRIORITY, EventKind, Note, Task, TaskStatus
from tasks.selectors import get_task
from tasks.sql import create_task_statement, remember_labels_sql, task_winner


@dataclass
class CreateIntent:
    """A create intent between its reservation and its mutation (SPEC §4.5): bound, keyed and reserved."""

    task: Task
    key: ConflictKey
    reservation: object
    blocked_by: list[Task] = field(default_factory=list)  # as named; resolved to live blockers on insert


def bind_task(*, space: Space, title: str, body: str, delivery_mode: str, work_item_id: str | None,
              catalog_version: int | None, priority: int = DEFAULT_PRIORITY,
              labels: list[str] | None = None, budget_usd: Decimal | None = None) -> tuple[Task, ConflictKey]:
    """The task a create intent would insert, bound and keyed (SPEC §4.2–§4.3); writes nothing.
    Priority and labels ride along: they are no part of the key (SPEC §13)."""
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
    task = Task(
        space=space, title=title, body=body, delivery_mode=delivery_mode, work_item_id=bound.work_item_id,
        conflict_kind=key.kind, conflict_target=key.target, status=TaskStatus.OPEN, payload_sha256=digest,
        priority=priority, labels=list(labels or []), title_terms=similarity.terms(title), budget_usd=budget_usd,
    )
    return task, key


def look_for_similar(task: Task, *, refuse: bool = False) -> None:
    """SPEC §16 at create: a title that bound no slot is answered with the similar live tasks
    (``task.similar``), once; with ``refuse`` any of them refuses the create. It never changes
    the conflict key; a title bound to a slot has its key's guarantee instead.

    A refusing create looks before it reserves, so a refusal leaves nothing behind; any other
    looks once its reservation is in, so a create refused for its key pays nothing for it."""
    if task.work_item_id is not None or hasattr(task, "similar"):
        return
    found = similarity.similar_to(task.space, task.title)
    task.similar = similarity.as_answer(found)
    if found and refuse:
        best, _ = found[0]
        raise SimilarTaskExists(
            f"Task {best.number} looks like the same work ({best.title!r}): work on it, or create without "
            "if_similar=refuse.", conflict_key={"kind": task.conflict_kind, "target": task.conflict_target,
                                                "delivery_mode": task.delivery_mode},
            outcome="redirect", winner={"type": "task", "id": best.number, "status": best.status},
            similar=task.similar, write_occurred=False)


def reserve_task(*, space: Space, actor: Member, title: str, body: str = "",
                 delivery_mode: str = DeliveryMode.RESULT, work_item_id: str | None = None,
                 priority: int = DEFAULT_PRIORITY, labels: list[str] | None = None,
                 blocked_by: list[int] | None = None, if_similar: str = "allow", budget_usd: Decimal | None = None,
                 approval: bool = False, approver: int | None = None,
                 operation: Operation | None = None, catalog_version: int | None = None) -> CreateIntent:
    """The first phase of a create (SPEC §4.5 steps 1–4): bind, key, reserve for ``operation``
    (a create that refuses similar tasks first looks for them, SPEC §16). Blockers are looked up
    first: an unknown one is a 422 before anything is reserved. ``catalog_version`` is the
    space's catalog version as this request read it (the key lookup loads the space with it);
    without it the version is read here."""
    blockers = graph.resolve_blockers(space, blocked_by) if blocked_by else []
    named_approver = approvals.approver_in(space, approver)
    task, key = bind_task(space=space, title=title, body=body, delivery_mode=delivery_mode,
                          work_item_id=work_item_id, catalog_version=catalog_version, priority=priority,
                          labels=labels, budget_usd=budget_usd)
    if if_similar == "refuse":
        look_for_similar(task, refuse=True)
    return reserve_bound(task, key, actor=actor, operation=operation, blocked_by=blockers, approval=approval,
                         approver=named_approver, commits_alone=False)


def reserve_bound(task: Task, key: ConflictKey, *, actor: Member, operation: Operation | None,
                  blocked_by: list[Task] = (), approval: bool = False, approver: Member | None = None,
                  commits_alone: bool) -> CreateIntent:
    """``commits_alone``: the reservation commits before the task is inserted (a window's)."""
    space = task.space
    task.creator = actor
    task.approver = approver
    if approvals.needs_approval(space, actor, asked=approval, work_item_id=task.work_item_id):
        task.status = TaskStatus.PROPOSED  # SPEC §21: occupies its key, not ready until approved
    reservation = allocation.reserve(
        space=space, key=key, member=actor, payload_sha256=task.payload_sha256, work_item_id=task.work_item_id,
        operation=operation, winner=task_winner, commits_alone=commits_alone,
    )
    task.received_seq = reservation.received_seq
    return CreateIntent(task, key, reservation, list(blocked_by))


class NotInserted(Exception):
    """The mutation statement wrote nothing: the reservation is no longer this intent's, or
    another attempt of the unit's operation holds its lock (``tasks.commands.mutate``)."""


def mutate_task(intent: CreateIntent, *, lock: dict[str, Any]) -> Task:
    """The second phase of a create: the task and its occupancy, or ``NotInserted``.

    It runs in the unit's transaction, so the task, its edges and the answer commit together;
    its statement takes the unit's lock again first (``lock``: ``UnitOfWork.lock_params``).
    The occupancy constraint stays the last word: should it say no although the reservation
    was ours (a row written around the allocator, see allocation.services.reservation_taken),
    the statement's failure ends the unit with nothing written, and its reservation lapses."""
    task = intent.task
    look_for_similar(task)
    # A task created with blockers, or proposed (SPEC §21), wakes nobody yet.
    ready = not intent.blocked_by and task.status == TaskStatus.OPEN
    if not insert_task_with_occupancy(task=task, reservation=intent.reservation, key=intent.key, lock=lock,
                                      wake=ready):
        raise NotInserted()
    if intent.blocked_by:
        graph.add_on_create(task, intent.blocked_by, task.creator)
    if task.status == TaskStatus.PROPOSED:
        approvals.announce(task)
    return task


def lost_reservation_refusal(intent: CreateIntent, operation: Operation | None) -> DomainError | None:
    """Why a create whose mutation wrote nothing under the unit's lock is refused: its
    reservation lapsed and another intent took it over (the key is its, or still being taken),
    or a rival occupied the key as it reserved. None: a retry of this very request (its
    ``operation``) holds the key now, so this attempt yields to it."""
    space, key = intent.task.space, intent.key
    occupancy = allocation.find_occupancy(space, key)
    if occupancy is not None:
        return allocation.occupied_error(occupancy, key)
    if allocation.reserved_for(space, key, operation):
        return None
    return allocation.reserved_error(intent.reservation, key)


def insert_task_with_occupancy(*, task: Task, reservation, key: ConflictKey, lock: dict[str, Any],
                               wake: bool = True) -> bool:
    """Insert ``task`` (numbering it) with its occupancy, and drop ``reservation``, atomically;
    False (nothing written) when the reservation was no longer this intent's, or another
    attempt of the unit's operation holds its lock. ``wake``: the task is ready, so agents
    waiting for work hear of it when this commits (``tasks.wakeups``)."""
    details = {"work_item_id": task.work_item_id, "conflict_key": key.as_dict()}
    now = timezone.now()
    with connection.cursor() as cursor:
        create_task_statement().run(cursor, {
            "space": task.space_id, "title": task.title, "body": task.body,
            "delivery_mode": task.delivery_mode, "work_item_id": task.work_item_id, "kind": key.kind,
            "target": key.target, "status": task.status, "cycle": task.cycle, "creator": task.creator_id,
            "approver": task.approver_id,
            "received_seq": task.received_seq, "payload_sha256": task.payload_sha256, "now": now,
            "reservation": reservation.pk, "details": json.dumps(details),
            "priority": task.priority, "labels": task.labels, "terms": task.title_terms, "wake": wake,
            "budget_usd": task.budget_usd,
            "wake_context": tracing.wake_context(), **lock,
        })
        row = cursor.fetchone()
    if row is None:
        return False
    task.pk, task.number = row[:2]
    task.created_at = task.updated_at = now
    task.graph = ([], [])  # a new task blocks nothing; add_on_create sets what blocks it
    task._state.adding = False
    task._state.db = connection.alias
    return True


@dataclass(frozen=True)
class WindowResult:
    index: int
    status: int
    task: Task | None
    error: DomainError | None


Window = list["CreateIntent | DomainError | int"]  # each proposal's first phase; an int: the proposal it follows


def reserve_window(*, space: Space, actor: Member, proposals: list[dict], operation: Operation | None,
                   catalog_version: int | None = None) -> Window:
    """The first phase of a window (SPEC §4.7): every proposal reserved, in array order (their
    reservations commit together), or refused; a proposal whose key an earlier proposal of the
    window takes follows that one (its index)."""
    outcomes: Window = []
    first_with_key: dict[ConflictKey, int] = {}
    for index, proposal in enumerate(proposals):
        try:
            fields = {"body": "", "delivery_mode": DeliveryMode.RESULT, "work_item_id": None, **proposal}
            blocked_by = fields.pop("blocked_by", None)
            if_similar = fields.pop("if_similar", "allow")
            approval, approver = fields.pop("approval", False), fields.pop("approver", None)
            blockers = graph.resolve_blockers(space, blocked_by) if blocked_by else []
            named_approver = approvals.approver_in(space, approver)
            task, key = bind_task(space=space, catalog_version=catalog_version, **fields)
            if key in first_with_key:
                outcomes.append(first_with_key[key])
                continue
            if if_similar == "refuse":
                look_for_similar(task, refuse=True)
            first_with_key[key] = index
            outcomes.append(reserve_bound(task, key, actor=actor, operation=operation, blocked_by=blockers,
                                          approval=approval, approver=named_approver, commits_alone=True))
        except DomainError as error:
            outcomes.append(error)
    return outcomes


def window_results(space: Space, outcomes: Window, mutate: Callable[[CreateIntent], Task]) -> list[WindowResult]:
    """The second phase of a window: the tasks inserted in order (``mutate``: a create's
    mutation) in the unit's transaction, the one that commits the window's answer (under an
    Idempotency-Key), so a crash never leaves some of a window's tasks without it. Each proposal
    is answered as a single create would be; one that follows an earlier proposal as a single
    create after that one would be: the earlier one's task, or its refusal."""
    results: list[WindowResult] = []
    for index, outcome in enumerate(outcomes):
        if isinstance(outcome, CreateIntent):
            try:
                results.append(WindowResult(index, 201, mutate(outcome), None))
            except DomainError as error:
                results.append(WindowResult(index, error.http_status, None, error))
        elif isinstance(outcome, int):
            leader = results[outcome]
            if leader.task is not None:
                allocation.count_conflict(space.pk)
            error = leader.error if leader.task is None else allocation.occupant_error(
                outcomes[outcome].key, task_number=leader.task.number, task_status=leader.task.status)
            results.append(WindowResult(index, error.http_status, None, error))
        else:
            results.append(WindowResult(index, outcome.http_status, None, outcome))
    return results


@dataclass
class NoteIntent:
    """A review note between its two phases (SPEC §4.8): keyed and reserved."""

    task: Task
    actor: Member
    body: str
    criterion: int | None
    key: ConflictKey
    reservation: object


def reserve_note(*, task: Task, actor: Member, body: str, criterion: int | None = None,
                 operation: Operation | None = None) -> NoteIntent:
    """The first phase of a review note: its key (the same member, criterion and body again is a
    409, SPEC §4.8), reserved for ``operation``."""
    check_task_usable(task)
    space = task.space
    target = note_target(space.slug, task_number=task.number, criterion=criterion, member_id=actor.pk, body=body)
    key = ConflictKey(ConflictKind.POST_REVIEW_NOTE, target, DeliveryMode.MESSAGE)
    reservation = allocation.reserve(space=space, key=key, member=actor, operation=operation, commits_alone=True,
                                     payload_sha256=payload_sha256({"criterion": criterion, "body": body}))
    return NoteIntent(task, actor, body, criterion, key, reservation)


def insert_note(intent: NoteIntent) -> Note:
    """The second phase of a review note, under the unit's lock taken again: the note, its
    occupancy and its event; its reservation dropped whatever happens."""
    task, space, key, reservation = intent.task, intent.task.space, intent.key, intent.reservation
    try:
        with transaction.atomic():
            note = Note.objects.create(space=space, task=task, author=intent.actor, criterion=intent.criterion,
                                       body=intent.body, target=key.target)
            allocation.occupy(reservation=reservation, space=space, key=key, note=note)
            record_event(task=task, kind=EventKind.NOTE, actor=intent.actor, note=note.pk, criterion=intent.criterion)
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


UNSET: Any = object()  # a PATCH that does not name the budget (None clears it)


def update_task(*, task: Task, actor: Member, priority: int | None = None, labels: list[str] | None = None,
                budget_usd: Decimal | None = UNSET) -> Task:
    """``PATCH …/tasks/{n}`` (SPEC §13, §19): the creator or a steward changes priority, labels and
    budget; each change is a history event with before and after. Finished tasks keep theirs."""
    if actor.role != Role.STEWARD and task.creator_id != actor.pk:
        raise NotTaskCreator("Only the task's creator or a steward may change it.")
    with transaction.atomic():
        task = get_task(space=task.space, number=task.number, lock=True)
        check_task_live(task)
        changed = []
        if priority is not None and priority != task.priority:
            record_event(task=task, kind=EventKind.PRIORITY_CHANGED, actor=actor, before=task.priority, after=priority)
            task.priority = priority
            changed.append("priority")
        if labels is not None and labels != list(task.labels):
            record_event(task=task, kind=EventKind.LABELS_CHANGED, actor=actor, before=list(task.labels), after=labels)
            task.labels = labels
            changed.append("labels")
        if budget_usd is not UNSET and budget_usd != task.budget_usd:
            record_event(task=task, kind=EventKind.BUDGET_CHANGED, actor=actor, before=as_number(task.budget_usd),
                         after=as_number(budget_usd))
            task.budget_usd = budget_usd
            changed.append("budget_usd")
        if changed:
            task.updated_at = timezone.now()
            task.save(update_fields=[*changed, "updated_at"])
            if "labels" in changed:
                with connection.cursor() as cursor:
                    cursor.execute(remember_labels_sql(), {"space": task.space_id, "labels": labels})
                wakeups.work_ready(task.space_id)  # now for agents waiting on these labels (SPEC §15)
            if "budget_usd" in changed:
                wakeups.work_ready(task.space_id)  # a raised budget hands the task out again (SPEC §19)
    return task


def as_number(value: Decimal | None) -> float | None:
    return None if value is None else float(value)
