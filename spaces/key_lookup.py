"""The one read every authenticated request makes: an API key with its member and space.

It runs on every request, so its SQL is built once from the models' metadata instead of
being compiled by the ORM each time (the compilation cost more than the query), and the
unchanging text lets psycopg keep it as a prepared statement.
"""
from __future__ import annotations

from functools import cache

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model

from spaces.models import ApiKey, Member, Space

JOINED = ((ApiKey, "k"), (Member, "m"), (Space, "s"))


@cache
def key_columns() -> str:
    """The columns of the key, its member and its space, in that order (``key_from_row`` reads them)."""
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(f.column)}" for model, alias in JOINED for f in model._meta.concrete_fields)


@cache
def key_tables() -> str:
    """``FROM`` the key (alias ``k``) joined to its member (``m``) and space (``s``)."""
    quote = connection.ops.quote_name
    return (
        f"FROM {quote(ApiKey._meta.db_table)} k "
        f"JOIN {quote(Member._meta.db_table)} m ON m.id = k.member_id "
        f"JOIN {quote(Space._meta.db_table)} s ON s.id = k.space_id"
    )


@cache
def lookup_sql() -> str:
    return f"SELECT {key_columns()} {key_tables()} WHERE k.prefix = %s"


@cache
def key_row_width() -> int:
    return sum(len(model._meta.concrete_fields) for model, _ in JOINED)


@cache
def converters(model: type[Model]) -> list[tuple]:
    """Per column, the converters the ORM's compiler would apply (the backend's, then the
    field's own, e.g. a JSON field's decoding), with the column expression they expect."""
    out = []
    for field in model._meta.concrete_fields:
        column = field.get_col(model._meta.db_table)
        out.append((column, connection.ops.get_db_converters(column) + column.get_db_converters(connection)))
    return out


@cache
def attnames(model: type[Model]) -> list[str]:
    return [f.attname for f in model._meta.concrete_fields]


def instance(model: type[Model], values: tuple) -> Model:
    """``model`` from a row of all its concrete columns in field order, converted as the ORM
    would (also used by ``allocation.db`` and ``allocation.first_touch`` for their rows)."""
    db = connections[DEFAULT_DB_ALIAS]  # the wrapper itself: each use of the proxy is a thread-local lookup
    converted = []
    for (column, functions), value in zip(converters(model), values):
        for convert in functions:
            value = convert(value, column, db)
        converted.append(value)
    return model.from_db(db.alias, attnames(model), converted)


def key_by_prefix(prefix: str) -> ApiKey | None:
    """The key with this prefix (unique), its ``member`` and ``space`` loaded; None if absent."""
    with connection.cursor() as cursor:
        cursor.execute(lookup_sql(), [prefix])
        row = cursor.fetchone()
    return None if row is None else key_from_row(row)


def key_from_row(row: tuple) -> ApiKey:
    """The key, member and space from the first ``key_row_width()`` values of ``row``."""
    objects, start = [], 0
    for model, _ in JOINED:
        width = len(model._meta.concrete_fields)
        objects.append(instance(model, row[start:start + width]))
        start += width
    key, member, space = objects
    member.space = space
    key.member, key.space = member, space
    return key
