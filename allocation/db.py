"""One SQL helper the hot paths share: insert a row unless a unique constraint already holds it."""
from __future__ import annotations

from django.db import connection, models


def insert_unless_conflict(
    instance: models.Model, conflict_fields: list[str], *, unless_exists: list[tuple[str, list]] = ()
) -> bool:
    """``INSERT … ON CONFLICT (…) DO NOTHING RETURNING id`` for ``instance``.

    True (and ``instance.pk`` set) when the row went in; False when the constraint
    already held another row, or when one of the ``unless_exists`` subqueries (SQL and
    params) found a row. One statement, no savepoint and no IntegrityError, so it costs
    a single round trip and never breaks the caller's transaction (PostgreSQL and
    SQLite ≥ 3.35 both speak this).
    """
    meta = instance._meta
    quote = connection.ops.quote_name
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    columns = ", ".join(quote(f.column) for f in fields)
    params = [f.get_db_prep_save(f.pre_save(instance, add=True), connection) for f in fields]
    conflict = ", ".join(quote(meta.get_field(name).column) for name in conflict_fields)
    # INSERT … SELECT with a WHERE clause (SQLite needs the WHERE to parse ON CONFLICT after a SELECT).
    where = " AND ".join(f"NOT EXISTS ({sql})" for sql, _ in unless_exists) or "1 = 1"
    for _, subquery_params in unless_exists:
        params.extend(subquery_params)
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({columns}) SELECT {', '.join(['%s'] * len(fields))} WHERE {where} "
        f"ON CONFLICT ({conflict}) DO NOTHING RETURNING {quote(meta.pk.column)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return False
    instance.pk = row[0]
    instance._state.adding = False
    instance._state.db = connection.alias
    return True
