"""The one read every authenticated request makes: an API key with its member and space.

It runs on every request, so its SQL is built once from the models' metadata instead of
being compiled by the ORM each time (the compilation cost more than the query), and the
unchanging text lets psycopg keep it as a prepared statement.
"""
from __future__ import annotations

from functools import cache

from django.db import connection

from common.rows import instance
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
