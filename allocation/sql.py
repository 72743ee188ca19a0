"""The allocation app's hand-written SQL, each statement named and built from the models'
metadata: the reserve statement (SPEC §4.5 steps 2–4 in one round trip), the occupied-key
counter, and the parts a create's mutation statement takes from this app's tables
(``reservation_taken``, ``occupancy_of``, used by ``tasks.sql``). A task's number and status in
a 409 come from the tasks app's own part (``Winner``, handed in by ``tasks.sql.task_winner``)."""
from __future__ import annotations

from functools import cache
from typing import Callable

from django.db import connection

from allocation.models import ConflictCount, Occupancy, Reservation, SlotHold
from common.sql import Cte, Statement, insert_select, table, with_query
from idempotency.sql import LOCK_KEY

NEXT_RECEIVED_SEQ = "nextval('allocation_received_seq')"  # an intent's arrival number (SPEC §4.5)


# Reserve in one round trip (SPEC §4.5 steps 2-4): insert the reservation unless the slot
# is held or the key occupied, and otherwise say which, with the winner the 409 names. An
# empty answer means another intent's reservation holds the key. The arrival number comes
# from the sequence here, so it follows the order intents reach the allocator.
#
# A transaction that commits reservations alone (a window's or a note's first phase:
# ``commits_alone``) does not wait for the disk (synchronous_commit off, for that transaction
# only): it promises nothing durable. The reservation table is UNLOGGED, and what else that
# transaction may hold (an attempt's first touch, an earlier proposal of a window) is answered
# only by a later transaction that commits an operation's answer or a task synchronously, and
# so flushes it too. A single create's reservation commits with its task and answer, so that
# transaction keeps the setting it has.


# The part that names the occupying task a 409 names, given the SQL of the occupancy's task id:
# yields that task's ``number`` and ``status``. The app that owns tasks hands it to ``reserve``
# (``tasks.sql.task_winner``); a note's key names its note, so a note's reserve names none.
Winner = Callable[[str], Cte]


def no_task_winner(task_id: str) -> Cte:
    return Cte("winner", "SELECT NULL::integer AS number, NULL::varchar AS status", columns=("number", "status"))


CONFLICT_COUNT_SHARDS = 16


@cache
def count_conflict(source: str) -> str:
    """One more occupied-key refusal for the space, in this hour's counter of the caller's shard:
    an ``INSERT … SELECT … FROM source`` (a row of ``source`` is one refusal)."""
    quote = connection.ops.quote_name
    table = quote(ConflictCount._meta.db_table)
    values = {"space": "%(space)s", "hour": "date_trunc('hour', %(now)s::timestamptz)",
              "shard": f"pg_backend_pid() %% {CONFLICT_COUNT_SHARDS}", "count": "1"}
    return (f"{insert_select(ConflictCount, values)} FROM {source} "
            f"ON CONFLICT (space_id, hour, shard) DO UPDATE SET count = {table}.count + 1")


@cache
def reserve(with_hold: bool, winner: Winner) -> Statement:
    """Built once per shape; ``winner`` names the occupying task (``Winner``)."""
    values = {"space": "%(space)s", "kind": "%(kind)s", "target": "%(target)s", "delivery_mode": "%(delivery_mode)s",
              "received_seq": NEXT_RECEIVED_SEQ, "payload_sha256": "%(payload_sha256)s", "member": "%(member)s",
              "operation": "%(operation)s", "created_at": "%(now)s", "expires_at": "%(expires_at)s"}
    named = winner("o.task_id")
    not_durable = Cte("not_durable", "SELECT set_config('synchronous_commit', CASE WHEN %(commits_alone)s "
                                     "THEN 'off' ELSE current_setting('synchronous_commit') END, true)",
                      materialized=True)
    held = Cte("held", f"SELECT 1 FROM {table(SlotHold)} WHERE space_id = %(space)s "
                       f"AND work_item_id = %(work_item_id)s AND {'true' if with_hold else 'false'}")
    occupant = Cte("occupant", f"SELECT o.task_id, o.note_id, {named.col('number')}, {named.col('status')} "
                               f"FROM {table(Occupancy)} o LEFT JOIN LATERAL ({named.body}) {named} ON true "
                               "WHERE o.space_id = %(space)s AND o.kind = %(kind)s AND o.target = %(target)s "
                               "AND o.delivery_mode = %(delivery_mode)s",
                   columns=("task_id", "note_id", "number", "status"))
    counted = Cte("counted", count_conflict(f"{occupant} WHERE NOT EXISTS (SELECT 1 FROM {held})"),
                  reads=(occupant, held))
    inserted = Cte("inserted", f"{insert_select(Reservation, values)} "
                               f"WHERE NOT EXISTS (SELECT 1 FROM {held}) AND NOT EXISTS (SELECT 1 FROM {occupant}) "
                               f"AND EXISTS (SELECT 1 FROM {not_durable}) "
                               "ON CONFLICT (space_id, kind, target, delivery_mode) DO NOTHING RETURNING id, received_seq",
                   columns=("id", "received_seq"), reads=(held, occupant, not_durable))
    return with_query(
        "reserve", [not_durable, held, occupant, counted, inserted],
        f"SELECT 'reserved', {inserted.col('id')}, {inserted.col('received_seq')}, NULL::bigint, NULL::varchar "
        f"FROM {inserted} UNION ALL SELECT 'held', NULL, NULL, NULL, NULL FROM {held} "
        f"UNION ALL SELECT 'occupied', {occupant.col('task_id')}, {occupant.col('note_id')}, "
        f"{occupant.col('number')}, {occupant.col('status')} FROM {occupant}", reads=(inserted, held, occupant))


@cache
def reservation_taken() -> Cte:
    """Allocation's first part of a create's mutation statement (SPEC §4.5.4): ``taken`` drops
    the intent's reservation and yields its ``id`` only if it was still the intent's (so
    nothing is created by an intent whose reservation lapsed and was taken over) and the key is
    not occupied. Parameters: reservation, space, kind, target, delivery_mode, and the unit's
    ``lock_params()`` (``commands.unit.UnitOfWork``)."""
    # The same statement takes the unit's liveness lock again (its new transaction's first
    # write): a unit whose operation another attempt took over in between writes nothing.
    lock = LOCK_KEY.format(member="%(lock_member)s", key="%(lock_key)s")
    dropped = Cte("dropped", f"DELETE FROM {table(Reservation)} WHERE id = %(reservation)s "
                             f"AND pg_try_advisory_xact_lock({lock}) RETURNING id", columns=("id",))
    # The reserve statement read occupancy in its snapshot but checked the reservation's unique
    # key against what committed since: an intent whose rival created the task and dropped its
    # reservation in between holds a reservation for an occupied key. This later statement
    # sees that occupancy: such an intent drops its reservation and creates nothing (a 409),
    # rather than meeting the occupancy's unique constraint inside an attempt's transaction.
    occupied_now = (f"SELECT 1 FROM {table(Occupancy)} WHERE space_id = %(space)s "
                    "AND kind = %(kind)s AND target = %(target)s AND delivery_mode = %(delivery_mode)s")
    return Cte("taken", f"SELECT {dropped.col('id')} FROM {dropped} WHERE NOT EXISTS ({occupied_now})",
               columns=("id",), reads=(dropped,))


@cache
def occupancy_of(created: Cte) -> Cte:
    """Allocation's last part of a create's mutation statement: ``occupied`` inserts the
    occupancy of the task the part ``created`` yields (its ``id``). Parameters: space, kind,
    target, delivery_mode, now. Column lists come from the models, so a new column cannot be
    missed."""
    values = {"space": "%(space)s", "kind": "%(kind)s", "target": "%(target)s", "delivery_mode": "%(delivery_mode)s",
              "task": created.col("id"), "note": "NULL", "created_at": "%(now)s"}
    return Cte("occupied", f"{insert_select(Occupancy, values)} FROM {created}", reads=(created,))
