"""Authenticate an idempotent POST and touch its operation first, in one round trip.

Every ``POST`` with an ``Idempotency-Key`` needs two things before its view runs: the API
key (with member and space) and the first touch of its operation (SPEC §7.1), which
needs the key's member and binding generation. Both are one statement:
the first touch is an ``INSERT … SELECT`` from the key row, made only when the key row
has the presented secret's hash and is live, and the same statement returns the key
row and, when the touch found the operation already there, that operation.

Whether the key is valid is still decided by ``spaces.services.verified_key``, on the
row returned; the SQL predicate mirrors that rule only to decide whether to write.
Elsewhere (SQLite) the two steps run one after the other.
"""
from __future__ import annotations

from functools import cache

from django.db import DEFAULT_DB_ALIAS, connection, connections

from allocation.idempotency import Begun, after_first_touch, first_touch_row
from allocation.models import Operation
from spaces.key_lookup import instance, key_columns, key_from_row, key_row_width, key_tables
from spaces.models import ApiKey
from spaces.services import hash_secret, split_key, verified_key

# The touch's columns that come from the key row rather than from the request.
FROM_KEY = {"space": "k.space_id", "member": "k.member_id", "binding_generation": "k.generation"}


def authenticate_and_begin(
    *, raw_key: str, idempotency_key: str, method: str, path: str, fingerprint: str
) -> tuple[ApiKey | None, Begun | None]:
    """``(key, begun)`` for a request presenting ``raw_key``; ``(None, None)`` when the key is not valid.

    Raises what ``begin_operation`` raises (a reused key, a binding mismatch, an operation
    still in progress).
    """
    parts = split_key(raw_key.strip())
    if parts is None:
        return None, None
    prefix, secret = parts
    secret_hash = hash_secret(secret)
    touch = first_touch_row(space_id=None, member_id=None, binding_generation=None, idempotency_key=idempotency_key,
                            method=method, path=path, fingerprint=fingerprint)
    db = connections[DEFAULT_DB_ALIAS]  # the wrapper itself: each use of the proxy is a thread-local lookup
    values = [f.get_db_prep_save(f.pre_save(touch, add=True), db) for f in touched_fields() if f.name not in FROM_KEY]
    with connection.cursor() as cursor:
        cursor.execute(touch_sql(),
                       [*values, prefix, secret_hash, touch.created_at, idempotency_key, secret_hash, prefix])
        row = cursor.fetchone()
    api_key = verified_key(None if row is None else key_from_row(row), secret)
    if api_key is None:
        return None, None
    width = key_row_width()
    touched_id, found = row[width], row[width + 1:]
    if touched_id is not None:
        touch.pk, touch.space_id, touch.member_id = touched_id, api_key.space_id, api_key.member_id
        touch.binding_generation = api_key.generation
        touch._state.adding, touch._state.db = False, db.alias
        return api_key, Begun(touch, replay=False)
    operation = None if found[0] is None else instance(Operation, found)
    return api_key, after_first_touch(operation, False, api_key=api_key, idempotency_key=idempotency_key,
                                      fingerprint=fingerprint)


@cache
def touched_fields() -> list:
    return [f for f in Operation._meta.concrete_fields if not f.primary_key]


@cache
def touch_sql() -> str:
    """Built once per process: the first touch, conditioned on the key, then the key row and any
    operation the touch found. Parameters: the touch's own values, then prefix, secret hash and
    now for the touch, then the Idempotency-Key, secret hash and prefix for the read."""
    quote = connection.ops.quote_name
    operations = quote(Operation._meta.db_table)
    fields = touched_fields()
    columns = ", ".join(quote(f.column) for f in fields)
    values = ", ".join(FROM_KEY.get(f.name, "%s") for f in fields)
    found = ", ".join(f"o.{quote(f.column)}" for f in Operation._meta.concrete_fields)
    return (
        "WITH touched AS ("
        f"INSERT INTO {operations} ({columns}) SELECT {values} "
        f"FROM {quote(ApiKey._meta.db_table)} k "
        "WHERE k.prefix = %s AND k.key_hash = %s AND k.revoked_at IS NULL "
        "AND (k.expires_at IS NULL OR k.expires_at > %s) "
        "ON CONFLICT (space_id, member_id, key) DO NOTHING RETURNING id) "
        f"SELECT {key_columns()}, (SELECT id FROM touched), {found} "
        f"{key_tables()} "
        f"LEFT JOIN {operations} o ON o.space_id = k.space_id AND o.member_id = k.member_id AND o.key = %s "
        "AND k.key_hash = %s AND NOT EXISTS (SELECT 1 FROM touched) "
        "WHERE k.prefix = %s"
    )
