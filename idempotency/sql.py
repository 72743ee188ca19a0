"""The idempotency app's hand-written SQL, each statement named and built from the models'
metadata: the first touch of an ``Idempotency-Key`` (the key's read, the lock and the
operation's row in one round trip; the key's parts are the spaces app's, ``spaces.sql``), the
liveness lock taken again, and a settlement with its observation."""
from __future__ import annotations

from functools import cache

from django.db import connection

from idempotency.models import Operation, OperationObservation
from spaces.models import ApiKey
from spaces.sql import key_columns, key_tables, valid_key

# The touch's columns that come from the key row rather than from the request.
FROM_KEY = {"space": "k.space_id", "member": "k.member_id", "binding_generation": "k.generation"}
# The liveness lock of an attempt at operation (member, key): the same expression in the
# first touch (over the key row) and in ``relock_sql`` (over the operation row).
LOCK_KEY = "hashtextextended({member}::text || ' ' || {key}, 0)"


@cache
def touched_fields() -> list:
    return [f for f in Operation._meta.concrete_fields if not f.primary_key]


@cache
def first_touch() -> str:
    """Built once per process: the lock and first touch, conditioned on the key, then the key
    row (only a valid key's), whether the lock was taken, and any operation the touch found.
    Parameters: the valid key's (``valid_key_params``); the Idempotency-Key and fingerprint
    for the tuple check; the Idempotency-Key for the lock; the touch's own values; the
    Idempotency-Key for the read."""
    quote = connection.ops.quote_name
    operations = quote(Operation._meta.db_table)
    fields = touched_fields()
    columns = ", ".join(quote(f.column) for f in fields)
    values = ", ".join(FROM_KEY.get(f.name, "%s") for f in fields)
    found = ", ".join(f"o.{quote(f.column)}" for f in Operation._meta.concrete_fields)
    # A request whose tuple does not match the stored operation's (another body, another key
    # generation) is refused whatever happens, so it takes no lock: it must never hold the
    # operation's lock while the operation's own attempt is between its two transactions.
    mine = f"o.space_id = k.space_id AND o.member_id = k.member_id AND o.{quote('key')} = %s"
    return (
        f"WITH valid AS MATERIALIZED (SELECT * FROM {quote(ApiKey._meta.db_table)} k "
        f"WHERE {valid_key()[0]}), "
        f"stranger AS MATERIALIZED (SELECT o.id FROM {operations} o, valid k WHERE {mine} "
        "AND (o.fingerprint <> %s OR o.binding_generation <> k.generation)), "
        f"lock AS MATERIALIZED (SELECT pg_try_advisory_xact_lock({LOCK_KEY.format(member='member_id', key='%s')}) "
        "AS held FROM valid WHERE NOT EXISTS (SELECT 1 FROM stranger)), "
        f"touched AS (INSERT INTO {operations} ({columns}) SELECT {values} "
        "FROM valid k, lock WHERE lock.held "
        "ON CONFLICT (space_id, member_id, key) DO NOTHING RETURNING id) "
        f"SELECT {key_columns()}, coalesce((SELECT held FROM lock), false), (SELECT id FROM touched), {found} "
        f"{key_tables(keys='valid')} "
        f"LEFT JOIN {operations} o ON {mine} "
        "AND ((SELECT held FROM lock) OR EXISTS (SELECT 1 FROM stranger)) AND NOT EXISTS (SELECT 1 FROM touched)"
    )


@cache
def relock() -> str:
    """Take an attempt's liveness lock again, over the operation's member and key."""
    return f"SELECT pg_try_advisory_xact_lock({LOCK_KEY.format(member='%s', key='%s')})"


OBSERVATION_COLUMNS = ("space_id", "operation_id", "kind", "key", "fingerprint", "binding_generation", "lease_epoch",
                       "response_status", "response_body", "verdict", "warned", "created_at")


@cache
def settle(changed: tuple[str, ...]) -> str:
    """The statement for one set of changed fields, built once (settle_and_record gives the
    parameters in this order: the changes, the compare-and-set, the observation)."""
    quote = connection.ops.quote_name
    op_meta, obs_meta = Operation._meta, OperationObservation._meta
    assignments = ", ".join(f"{quote(op_meta.get_field(name).column)} = %s" for name in changed)
    return (
        f"WITH settled AS (UPDATE {quote(op_meta.db_table)} SET {assignments}, "
        "revision = revision + 1, updated_at = %s "
        "WHERE space_id = %s AND id = %s AND key = %s AND fingerprint = %s AND binding_generation = %s AND revision = %s RETURNING id) "
        f"INSERT INTO {quote(obs_meta.db_table)} ({', '.join(quote(c) for c in OBSERVATION_COLUMNS)}) "
        f"SELECT {', '.join(['%s'] * len(OBSERVATION_COLUMNS))} FROM settled RETURNING id"
    )
