"""Binding, reservations, occupancy and holds (SPEC §4.3–§4.5, §5.2).

A create reserves (``reserve``), then runs the mutation statement (``reservation_taken``,
``occupancy_of``; a note: ``occupy``, and ``release_reservation`` if that fails): a single
create in one transaction (``tasks.commands.create_once``), a window or a note in two, the
reservations committed first.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable

from django.db import connection, transaction
from django.utils import timezone

from allocation import errors, sql
from allocation.binding import (
    SlotScore,
    decide,
    normalize_title,
    tokens,
)
from allocation.catalog_index import catalog_index
from allocation.conflict_keys import ConflictKey, task_target
from allocation.models import (
    TASK_DELIVERY_MODES,
    ConflictCount,
    ConflictKind,
    Occupancy,
    Reservation,
    SlotHold,
)
from idempotency.models import Operation
from common.refusals import InvalidRequest
from events import feed
from common.sql import insert_unless_conflict
from common.text import has_control_characters
from spaces.catalog import normalize_work_item_id
from spaces.models import CharterItem, Member, Space


MAX_LISTED_IDS = 50


@dataclass(frozen=True)
class BindResult:
    work_item_id: str | None
    scores: tuple[SlotScore, ...]
    conflict_key: ConflictKey

    def as_dict(self) -> dict:
        return {
            "work_item_id": self.work_item_id,
            "scores": [s.as_dict() for s in self.scores],
            "conflict_key": self.conflict_key.as_dict(),
        }


def valid_work_item_ids(space: Space) -> tuple[list[str], int]:
    items = CharterItem.objects.filter(space=space).order_by("position")
    return list(items.values_list("work_item_id", flat=True)[:MAX_LISTED_IDS]), items.count()


def check_work_item_id(*, space: Space, raw: object) -> str:
    """SPEC §4.3.1: normalize an explicit ``work_item_id`` and check it is in the catalog."""
    work_item_id = normalize_work_item_id(raw) if isinstance(raw, str) else None
    if work_item_id is None:
        ids, total = valid_work_item_ids(space)
        raise errors.InvalidWorkItemId(
            f"{raw!r} is not a work item id: use T followed by digits, such as T1.",
            valid_work_item_ids=ids,
            catalog_size=total,
        )
    if not CharterItem.objects.filter(space=space, work_item_id=work_item_id).exists():
        ids, total = valid_work_item_ids(space)
        raise errors.UnknownWorkItem(
            f"{work_item_id} is not in this space's catalog.", valid_work_item_ids=ids, catalog_size=total
        )
    return work_item_id


def bind_title(
    *,
    space: Space,
    title: str,
    work_item_id: object = None,
    delivery_mode: str = "result",
    catalog_version: int | None = None,
) -> BindResult:
    """The bind decision and conflict key for a create intent; writes nothing."""
    if delivery_mode not in TASK_DELIVERY_MODES:
        raise InvalidRequest(
            f"Unknown delivery mode {delivery_mode!r}.",
            fields={"delivery_mode": [f"One of: {', '.join(TASK_DELIVERY_MODES)}."]},
        )
    if has_control_characters(title):
        raise InvalidRequest(
            "The title holds control characters (only tab and newline may appear).",
            fields={"title": ["No control characters other than tab and newline."]},
        )
    explicit = check_work_item_id(space=space, raw=work_item_id) if work_item_id is not None else None
    index = catalog_index(space, version=catalog_version)
    scores = tuple(index.scores(tokens(title)))
    bound = explicit or decide(scores)
    if not normalize_title(title):
        raise InvalidRequest(
            "The title has nothing visible once white space and invisible characters are removed.",
            fields={"title": ["Must contain something visible."]},
        )
    target = task_target(space.slug, work_item_id=bound, title=title)
    return BindResult(bound, scores, ConflictKey(ConflictKind.CREATE_TASK, target, delivery_mode))


# --- Arrival order ---------------------------------------------------------------------------


# The arrival number is taken by the reserve statement itself (``sql.NEXT_RECEIVED_SEQ``), so
# intents get their numbers in the order they reach the allocator, with no round trip of its own.


# --- Reserve, occupy, release ----------------------------------------------------------------


def occupied_error(occupancy: Occupancy, key: ConflictKey) -> errors.ConflictKeyOccupied:
    """The refusal for a key found occupied after reserving (the reserve statement counts its own)."""
    count_conflict(occupancy.space_id)
    if occupancy.task_id is not None:
        return occupant_error(key, task_number=occupancy.task.number, task_status=occupancy.task.status)
    return occupant_error(key, note_id=occupancy.note_id)


def occupant_error(
    key: ConflictKey, *, task_number: int | None = None, task_status: str = "", note_id: int | None = None
) -> errors.ConflictKeyOccupied:
    if task_number is not None:
        winner = {"type": "task", "id": task_number, "status": task_status}
        detail = f"Task {task_number} already holds this work ({task_status}): claim or join it instead of creating it again."
    else:
        winner = {"type": "note", "id": note_id}
        detail = f"You already left this note (note {note_id}); nothing was written."
    return errors.ConflictKeyOccupied(
        detail, conflict_key=key.as_dict(), outcome="redirect", winner=winner, write_occurred=False
    )


def reserved_error(reservation: Reservation, key: ConflictKey) -> errors.ConflictKeyReserved:
    return errors.ConflictKeyReserved(
        f"Another request is creating this work right now; retry in {errors.RESERVED_RETRY_AFTER_MS} ms to see the winner.",
        conflict_key=key.as_dict(),
        outcome="idle",
        winner={"type": "reserved_intent", "id": reservation.pk},
        write_occurred=False,
        retry_after_ms=errors.RESERVED_RETRY_AFTER_MS,
        headers={"Retry-After": "1"},
    )


def held_error(work_item_id: str, key: ConflictKey) -> errors.ConflictKeyHeld:
    return errors.ConflictKeyHeld(
        f"A steward holds slot {work_item_id}; no new task may take it until the hold is released.",
        conflict_key=key.as_dict(),
        outcome="idle",
        winner={"type": "steward_hold", "work_item_id": work_item_id},
        write_occurred=False,
    )


RESERVATION_KEY_FIELDS = ["space", "kind", "target", "delivery_mode"]


def key_filter(space: Space, key: ConflictKey) -> dict:
    return {"space": space, "kind": key.kind, "target": key.target, "delivery_mode": key.delivery_mode}


def find_occupancy(space: Space, key: ConflictKey) -> Occupancy | None:
    return Occupancy.objects.select_related("task").filter(**key_filter(space, key)).first()


def reserved_for(space: Space, key: ConflictKey, operation: Operation | None) -> bool:
    """Whether the key's reservation is now one of ``operation``'s: another attempt at the
    same operation replaced this one's (SPEC §7.1)."""
    return operation is not None and Reservation.objects.filter(**key_filter(space, key), operation=operation).exists()


def reservation_fields(*, space: Space, member: Member, payload_sha256: str,
                       operation: Operation | None, now: datetime) -> dict:
    return dict(received_seq=None, payload_sha256=payload_sha256, member=member, operation=operation,
                created_at=now, expires_at=now + timedelta(seconds=space.allocation_window_seconds))


def reserve_over_reservation(
    *, space: Space, key: ConflictKey, fields: dict, operation: Operation | None, now: datetime
) -> Reservation:
    """Someone holds a reservation on the key: decide under its row lock whether it is live."""
    sql_values = {"received_seq": sql.NEXT_RECEIVED_SEQ}
    with transaction.atomic():
        for _ in range(3):
            existing = Reservation.objects.select_for_update().filter(**key_filter(space, key)).first()
            if existing is not None:
                same_operation = operation is not None and existing.operation_id == operation.pk
                if existing.expires_at > now and not same_operation:
                    raise reserved_error(existing, key)
                existing.delete()  # lazily expired (or our own earlier attempt's): replace it
            # Read after the lock: an intent whose reservation this was may have finished its
            # mutation while we waited, and then its task occupies the key.
            occupancy = find_occupancy(space, key)
            if occupancy is not None:
                raise occupied_error(occupancy, key)
            reservation = Reservation(**key_filter(space, key), **fields)
            if insert_unless_conflict(reservation, RESERVATION_KEY_FIELDS, sql_values=sql_values):
                return reservation
        # Three rounds lost to concurrent churn: report the key as busy rather than spin.
        raise reserved_error(Reservation(pk=0), key)


def count_conflict(space_id: int) -> None:
    """Count a ``409 conflict_key_occupied`` answered outside the reserve statement (which counts
    its own): a create whose reservation was taken over, a window's repeated key."""
    with connection.cursor() as cursor:
        cursor.execute(sql.count_conflict("(SELECT 1) AS one"), {"space": space_id, "now": timezone.now()})


def purge_conflict_counts(*, dry_run: bool = False) -> int:
    """Hourly counters older than two days: the board reads the last 24 hours."""
    old = ConflictCount.objects.filter(hour__lt=timezone.now() - timedelta(days=2))
    return old.count() if dry_run else old.delete()[0]


def reserve(
    *, space: Space, key: ConflictKey, member: Member, payload_sha256: str, operation: Operation | None,
    commits_alone: bool, work_item_id: str | None = None, winner: sql.Winner = sql.no_task_winner,
) -> Reservation:
    """Steps 2–4 of SPEC §4.5 in one statement (``allocation.sql.reserve``); raises the 409 that applies.

    Only when another intent's reservation holds the key does it take that reservation's
    row lock: a stale reservation (past ``expires_at``) is taken over, so a crashed
    process never blocks a key longer than the window, with or without the operator
    command; so is one left by the same idempotent operation (a retry does not lose to
    itself). The arrival number (SPEC §4.5) is ``reservation.received_seq``. A single create's
    reservation commits with its task; a window's and a note's, next (``UnitOfWork.commit_phase``):
    ``commits_alone``, and that commit need not wait for the disk (``sql.reserve``)."""
    now = timezone.now()
    fields = reservation_fields(space=space, member=member, payload_sha256=payload_sha256,
                                operation=operation, now=now)
    with connection.cursor() as cursor:
        sql.reserve(work_item_id is not None, winner).run(cursor, {
            "space": space.pk, "kind": key.kind, "target": key.target, "delivery_mode": key.delivery_mode,
            "work_item_id": work_item_id or "", "payload_sha256": payload_sha256, "member": member.pk,
            "operation": operation.pk if operation else None, "now": now, "expires_at": fields["expires_at"],
            "commits_alone": commits_alone,
        })
        rows = {row[0]: row[1:] for row in cursor.fetchall()}
    if "held" in rows:
        raise held_error(work_item_id, key)
    if "occupied" in rows:
        task_id, note_id, number, status = rows["occupied"]
        if task_id is not None:
            raise occupant_error(key, task_number=number, task_status=status)
        raise occupant_error(key, note_id=note_id)
    if "reserved" not in rows:
        return reserve_over_reservation(space=space, key=key, fields=fields, operation=operation, now=now)
    pk, received_seq = rows["reserved"][:2]
    reservation = Reservation(pk=pk, **key_filter(space, key), **{**fields, "received_seq": received_seq})
    reservation._state.adding = False
    reservation._state.db = connection.alias
    return reservation


def occupy(*, reservation: Reservation, space: Space, key: ConflictKey, task=None, note=None) -> Occupancy:
    """Inside the mutation transaction: take the key durably and drop the reservation.

    The occupancy unique constraint decides if another intent slipped in after our
    reservation expired; the IntegrityError then rolls the whole mutation back.
    """
    occupancy = Occupancy.objects.create(**key_filter(space, key), task=task, note=note)
    Reservation.objects.filter(pk=reservation.pk).delete()
    return occupancy


def release_occupancy(task, *, successor: Callable[[ConflictKey], object | None]) -> None:
    """SPEC §4.4: ``task`` stopped being live, so each key it occupies passes to
    ``successor(key)`` (the app that owns tasks knows which task is next), or is free again
    when that is None. Under the occupancy rows' locks, in id order."""
    for occupancy in Occupancy.objects.select_for_update().filter(task=task).order_by("pk"):
        heir = successor(ConflictKey(occupancy.kind, occupancy.target, occupancy.delivery_mode))
        if heir is None:
            occupancy.delete()
        else:
            occupancy.task = heir
            occupancy.save(update_fields=["task"])


def release_reservation(reservation: Reservation) -> None:
    Reservation.objects.filter(pk=reservation.pk, received_seq=reservation.received_seq).delete()


def expire_reservations(*, now: datetime | None = None, dry_run: bool = False, ids: list[int] | None = None) -> int:
    """Delete reservations past their window (crashed processes'); returns how many.

    With ``ids`` (the admin's *Expire now*), those reservations go whatever their expiry.
    """
    stale = Reservation.objects.filter(expires_at__lte=now or timezone.now()) if ids is None else (
        Reservation.objects.filter(pk__in=ids))
    if dry_run:
        return stale.count()
    return stale.delete()[0]


# --- Holds (SPEC §5.2) -----------------------------------------------------------------------


def hold_slot(*, space: Space, work_item_id: object, actor: Member, reason: str = "") -> tuple[SlotHold, bool]:
    """The hold on the slot, and whether this call made it (a slot held already stays as it was)."""
    slot = check_work_item_id(space=space, raw=work_item_id)
    with transaction.atomic():
        hold, created = SlotHold.objects.get_or_create(space=space, work_item_id=slot,
                                                       defaults={"held_by": actor, "reason": reason})
        if created:
            feed.record(space_id=space.pk, type="hold.added", actor_id=actor.pk,
                        data={"work_item_id": slot, "reason": reason})
    return hold, created


def release_slot(*, space: Space, work_item_id: object) -> int:
    slot = normalize_work_item_id(work_item_id) if isinstance(work_item_id, str) else None
    if not slot:
        return 0
    with transaction.atomic():
        released = SlotHold.objects.filter(space=space, work_item_id=slot).delete()[0]
        if released:
            feed.record(space_id=space.pk, type="hold.released", data={"work_item_id": slot})
    return released
