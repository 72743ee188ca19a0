"""The one read every authenticated request makes: an API key with its member and space.

It runs on every request, so its SQL is built once from the models' metadata instead of
being compiled by the ORM each time (the compilation cost more than the query), and the
unchanging text lets psycopg keep it as a prepared statement.
"""
from __future__ import annotations

from functools import cache

from django.db import connection
from django.db.models import Model

from spaces.models import ApiKey, Member, Space

JOINED = ((ApiKey, "k"), (Member, "m"), (Space, "s"))


@cache
def lookup_sql(vendor: str) -> str:
    quote = connection.ops.quote_name
    columns = ", ".join(f"{alias}.{quote(f.column)}" for model, alias in JOINED for f in model._meta.concrete_fields)
    return (
        f"SELECT {columns} FROM {quote(ApiKey._meta.db_table)} k "
        f"JOIN {quote(Member._meta.db_table)} m ON m.id = k.member_id "
        f"JOIN {quote(Space._meta.db_table)} s ON s.id = k.space_id "
        "WHERE k.prefix = %s"
    )


def instance(model: type[Model], values: tuple) -> Model:
    fields = model._meta.concrete_fields
    converted = [f.from_db_value(v, None, connection) if hasattr(f, "from_db_value") else v
                 for f, v in zip(fields, values)]
    return model.from_db(connection.alias, [f.attname for f in fields], converted)


def key_by_prefix(prefix: str) -> ApiKey | None:
    """The key with this prefix (unique), its ``member`` and ``space`` loaded; None if absent."""
    with connection.cursor() as cursor:
        cursor.execute(lookup_sql(connection.vendor), [prefix])
        row = cursor.fetchone()
    if row is None:
        return None
    objects, start = [], 0
    for model, _ in JOINED:
        width = len(model._meta.concrete_fields)
        objects.append(instance(model, row[start:start + width]))
        start += width
    key, member, space = objects
    member.space = space
    key.member, key.space = member, space
    return key
