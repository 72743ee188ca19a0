"""One SQL helper the hot paths share: insert a row unless a unique constraint already holds it."""
from __future__ import annotations

from functools import cache

from django.db import DEFAULT_DB_ALIAS, connection, connections, models

from spaces.key_lookup import instance as model_from_row


def async_commit_cte(flush_on_commit: bool) -> tuple[str, str]:
    """``(common table expression, FROM clause)`` that let one statement commit without waiting for
    the WAL to reach disk: ``synchronous_commit`` off for that statement's own
    transaction only (``set_config(…, true)`` ends with it). Only for rows whose loss in a
    database crash is harmless: any later synchronous commit on the server flushes them
    too, so they are lost only together with everything after them. PostgreSQL only, and
    only when the statement is its own transaction: inside a caller's transaction the
    setting would last until the caller's commit. Otherwise both parts are empty.
    """
    if flush_on_commit or connection.vendor != "postgresql" or connection.in_atomic_block:
        return "", ""
    return "async_commit AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true))", " FROM async_commit"


def insert_unless_conflict(
    instance: models.Model,
    conflict_fields: list[str],
    *,
    unless_exists: list[tuple[str, list]] = (),
    sql_values: dict[str, str] | None = None,
    flush_on_commit: bool = True,
) -> bool:
    """``INSERT … ON CONFLICT (…) DO NOTHING RETURNING id`` for ``instance``.

    True (and ``instance.pk`` set) when the row went in; False when the constraint
    already held another row, or when one of the ``unless_exists`` subqueries (SQL and
    params) found a row. One statement, no savepoint and no IntegrityError, so it costs
    a single round trip and never breaks the caller's transaction (PostgreSQL and
    SQLite ≥ 3.35 both speak this).

    ``sql_values`` gives some fields an SQL expression instead of the instance's value
    (e.g. ``nextval(…)``); the values the row got are set on the instance.
    ``flush_on_commit=False``: see ``async_commit_cte``.
    """
    meta = instance._meta
    quote = connection.ops.quote_name
    sql_values = sql_values or {}
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    columns = ", ".join(quote(f.column) for f in fields)
    db = connections[DEFAULT_DB_ALIAS]  # the wrapper itself: each use of the proxy is a thread-local lookup
    params = [f.get_db_prep_save(f.pre_save(instance, add=True), db) for f in fields if f.name not in sql_values]
    values = ", ".join(sql_values.get(f.name, "%s") for f in fields)
    returning = ", ".join([quote(meta.pk.column), *(quote(meta.get_field(name).column) for name in sql_values)])
    conflict = ", ".join(quote(meta.get_field(name).column) for name in conflict_fields)
    # INSERT … SELECT with a WHERE clause (SQLite needs the WHERE to parse ON CONFLICT after a SELECT).
    where = " AND ".join(f"NOT EXISTS ({sql})" for sql, _ in unless_exists) or "1 = 1"
    for _, subquery_params in unless_exists:
        params.extend(subquery_params)
    async_commit, source = async_commit_cte(flush_on_commit)
    sql = (
        f"{f'WITH {async_commit} ' if async_commit else ''}INSERT INTO {quote(meta.db_table)} ({columns}) SELECT {values}{source} WHERE {where} "
        f"ON CONFLICT ({conflict}) DO NOTHING RETURNING {returning}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return False
    instance.pk = row[0]
    for name, value in zip(sql_values, row[1:]):
        setattr(instance, meta.get_field(name).attname, value)
    instance._state.adding = False
    instance._state.db = connection.alias
    return True


def insert_or_fetch(
    instance: models.Model, conflict_fields: list[str], *, flush_on_commit: bool = True
) -> tuple[models.Model | None, bool]:
    """Insert ``instance`` or read the row that holds its unique key, in one round trip.

    Returns ``(row, created)``; when created, ``row`` is ``instance`` with its new primary
    key (only the key comes back: the row holds exactly the instance's values, and
    loading them again cost more client time than the round trip). PostgreSQL only: one
    statement whose INSERT … ON CONFLICT DO NOTHING either inserts or lets the second
    half return the existing row. When the existing row committed after the statement
    began it is not visible to that statement: the caller gets ``(None, False)`` and
    reads it again.

    ``flush_on_commit=False``: see ``async_commit_cte``.
    """
    meta = instance._meta
    db = connections[DEFAULT_DB_ALIAS]  # the wrapper itself: each use of the proxy is a thread-local lookup
    params = [f.get_db_prep_save(f.pre_save(instance, add=True), db) for f in meta.concrete_fields if not f.primary_key]
    match_params = [getattr(instance, meta.get_field(name).attname) for name in conflict_fields]
    sql = insert_or_fetch_sql(type(instance), tuple(conflict_fields), *async_commit_cte(flush_on_commit))
    with connection.cursor() as cursor:
        cursor.execute(sql, params + match_params)
        row = cursor.fetchone()
    if row is None:
        return None, False
    if row[-1]:
        instance.pk = row[meta.concrete_fields.index(meta.pk)]
        instance._state.adding = False
        instance._state.db = db.alias
        return instance, True
    return model_from_row(type(instance), row[:-1]), False


@cache
def insert_or_fetch_sql(model: type[models.Model], conflict_fields: tuple[str, ...], async_commit: str,
                        source: str) -> str:
    """The statement depends only on these, so it is built once (building it, column types
    and quoting included, cost more client time than running it)."""
    meta = model._meta
    quote = connection.ops.quote_name
    table = quote(meta.db_table)
    insert_fields = [f for f in meta.concrete_fields if not f.primary_key]
    all_columns = ", ".join(quote(f.column) for f in meta.concrete_fields)
    # The inserted branch fills the other columns with NULL (typed like the table's own).
    pk_only = ", ".join(quote(f.column) if f.primary_key else f"NULL::{f.db_type(connection)}"
                        for f in meta.concrete_fields)
    conflict_columns = [quote(meta.get_field(name).column) for name in conflict_fields]
    match = " AND ".join(f"{column} = %s" for column in conflict_columns)
    return (
        f"WITH {f'{async_commit}, ' if async_commit else ''}inserted AS (INSERT INTO {table} ({', '.join(quote(f.column) for f in insert_fields)}) "
        f"SELECT {', '.join(['%s'] * len(insert_fields))}{source} "
        f"ON CONFLICT ({', '.join(conflict_columns)}) DO NOTHING "
        f"RETURNING {quote(meta.pk.column)}) "
        f"SELECT {pk_only}, true FROM inserted "
        f"UNION ALL SELECT {all_columns}, false FROM {table} WHERE {match} AND NOT EXISTS (SELECT 1 FROM inserted)"
    )
