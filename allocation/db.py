"""One SQL helper the hot paths share: insert a row unless a unique constraint already holds it."""
from __future__ import annotations

from functools import cache

from django.db import DEFAULT_DB_ALIAS, connection, connections, models

from spaces.key_lookup import instance as model_from_row


def insert_unless_conflict(
    instance: models.Model,
    conflict_fields: list[str],
    *,
    unless_exists: list[tuple[str, list]] = (),
    sql_values: dict[str, str] | None = None,
) -> bool:
    """``INSERT … ON CONFLICT (…) DO NOTHING RETURNING id`` for ``instance``.

    True (and ``instance.pk`` set) when the row went in; False when the constraint
    already held another row, or when one of the ``unless_exists`` subqueries (SQL and
    params) found a row. One statement, no savepoint and no IntegrityError, so it costs
    a single round trip and never breaks the caller's transaction.

    ``sql_values`` gives some fields an SQL expression instead of the instance's value
    (e.g. ``nextval(…)``); the values the row got are set on the instance.
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
    where = " AND ".join(f"NOT EXISTS ({sql})" for sql, _ in unless_exists) or "true"
    for _, subquery_params in unless_exists:
        params.extend(subquery_params)
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({columns}) SELECT {values} WHERE {where} "
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


def insert_or_fetch(instance: models.Model, conflict_fields: list[str]) -> tuple[models.Model | None, bool]:
    """Insert ``instance`` or read the row that holds its unique key, in one round trip.

    Returns ``(row, created)``; when created, ``row`` is ``instance`` with its new primary
    key (only the key comes back: the row holds exactly the instance's values, and
    loading them again cost more client time than the round trip). One statement whose INSERT … ON CONFLICT DO NOTHING either inserts or lets the second
    half return the existing row. When the existing row committed after the statement
    began it is not visible to that statement: the caller gets ``(None, False)`` and
    reads it again.
    """
    meta = instance._meta
    db = connections[DEFAULT_DB_ALIAS]  # the wrapper itself: each use of the proxy is a thread-local lookup
    params = [f.get_db_prep_save(f.pre_save(instance, add=True), db) for f in meta.concrete_fields if not f.primary_key]
    match_params = [getattr(instance, meta.get_field(name).attname) for name in conflict_fields]
    sql = insert_or_fetch_sql(type(instance), tuple(conflict_fields))
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
def insert_or_fetch_sql(model: type[models.Model], conflict_fields: tuple[str, ...]) -> str:
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
        f"WITH inserted AS (INSERT INTO {table} ({', '.join(quote(f.column) for f in insert_fields)}) "
        f"SELECT {', '.join(['%s'] * len(insert_fields))} "
        f"ON CONFLICT ({', '.join(conflict_columns)}) DO NOTHING "
        f"RETURNING {quote(meta.pk.column)}) "
        f"SELECT {pk_only}, true FROM inserted "
        f"UNION ALL SELECT {all_columns}, false FROM {table} WHERE {match} AND NOT EXISTS (SELECT 1 FROM inserted)"
    )
