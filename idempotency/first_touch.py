"""Authenticate an idempotent request, take its attempt's liveness lock and touch its operation first, in one round trip.

Every request with an ``Idempotency-Key`` needs three things before its work runs: the
API key (with member and space), the lock that says its attempt is alive, and the first
touch of its operation (SPEC §7.1), which needs the key's member and binding
generation. They are one statement: the lock is a transaction-level advisory lock on
(member, Idempotency-Key), taken only when the key row has the presented secret's hash
and is live; the first touch is an ``INSERT … SELECT`` from the key row, made only when
the lock was free; and the same statement returns the key row and, when the touch found
the operation already there, that operation.

The lock is held by the attempt's open transaction and by nothing else, so it is free
the moment that transaction ends, however it ends (commit, rollback, a killed process
or a dropped connection), and it holds behind a transaction-mode pooler as well as
directly. Whether the key is valid is one condition, ``spaces.key_lookup.valid_key_sql``
(compiled from the ORM, as every key lookup uses it): the statement returns the key row only
from the keys it matched, so no row means no valid key, and nothing was locked or written.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.db import DEFAULT_DB_ALIAS, connection, connections

from idempotency.services import first_touch_row
from idempotency.models import Operation, OperationState
from common.rows import instance
from idempotency import sql
from idempotency.sql import FROM_KEY
from spaces.key_lookup import (
    forget_prefix, hash_secret, key_from_row, key_row_width, noted_use, space_of_prefix, split_key, valid_key_params,
)
from spaces.models import ApiKey

@dataclass(frozen=True)
class Touch:
    """What the first touch found: whether this attempt holds the lock, and the operation
    (``created`` when this touch stored it; None when it committed too late to be read)."""

    locked: bool
    operation: Operation | None
    created: bool


def touch_first(
    *, raw_key: str, idempotency_key: str, method: str, path: str, fingerprint: str
) -> tuple[ApiKey | None, Touch | None]:
    """``(key, touch)`` for a request presenting ``raw_key``; ``(None, None)`` when the key is not
    valid. Runs inside the attempt's transaction, which holds the lock from here on."""
    parts = split_key(raw_key.strip())
    if parts is None:
        return None, None
    prefix, secret = parts
    space_id = space_of_prefix(prefix)
    if space_id is None:
        return None, None  # no key has this prefix
    secret_hash = hash_secret(secret)
    touch = first_touch_row(space_id=None, member_id=None, binding_generation=None, idempotency_key=idempotency_key,
                            method=method, path=path, fingerprint=fingerprint)
    db = connections[DEFAULT_DB_ALIAS]  # the wrapper itself: each use of the proxy is a thread-local lookup
    values = [f.get_db_prep_save(f.pre_save(touch, add=True), db) for f in sql.touched_fields() if f.name not in FROM_KEY]
    with connection.cursor() as cursor:
        cursor.execute(sql.first_touch(), [*valid_key_params(space_id, prefix, secret_hash), idempotency_key, fingerprint,
                                     idempotency_key, *values, idempotency_key])
        row = cursor.fetchone()
    if row is None:
        forget_prefix(prefix)
        return None, None
    api_key = noted_use(key_from_row(row))
    width = key_row_width()
    locked, touched_id, found = row[width], row[width + 1], row[width + 2:]
    if not locked:  # a live attempt holds the lock, or the tuple does not match (``found``: to refuse it)
        return api_key, Touch(False, None if found[0] is None else instance(Operation, found), False)
    if touched_id is not None:
        touch.pk, touch.space_id, touch.member_id = touched_id, api_key.space_id, api_key.member_id
        touch.binding_generation = api_key.generation
        touch._state.adding, touch._state.db = False, db.alias
        return api_key, Touch(True, touch, True)
    if found[0] is None:
        return api_key, Touch(True, None, False)  # committed after the statement's snapshot: the runner reads it
    operation = instance(Operation, found)
    if operation.state != OperationState.COMPLETED:
        # The statement read the operation in the snapshot it took when it began, and took the
        # lock later: an attempt that settled it and let go of the lock in between is not in
        # that read. Under the lock nothing changes it any more, so a read now is the truth.
        operation = Operation.objects.get(pk=operation.pk)
    return api_key, Touch(True, operation, False)


def relock(operation: Operation) -> tuple[bool, Operation]:
    """In a new transaction of the same attempt: take the liveness lock again and read the
    operation as it is now. ``(False, …)`` when another attempt holds the lock.

    Two statements, the read after the lock: a statement reads in the snapshot it took when
    it began, so a read beside the lock could miss an attempt that settled the operation and
    let go of the lock while the statement ran."""
    with connection.cursor() as cursor:
        cursor.execute(sql.relock(), [operation.member_id, operation.key])
        locked = cursor.fetchone()[0]
    return locked, Operation.objects.get(pk=operation.pk)
