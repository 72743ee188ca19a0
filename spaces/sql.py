"""Statements (and parts of statements) over the spaces app's tables, for the apps that must
change them inside a statement of their own: named, commented, names from the models."""
from __future__ import annotations

from functools import cache

from django.db import connection

from spaces.models import Space


@cache
def next_task_number_cte(*, name: str, space: str, only_if: str) -> str:
    """A CTE ``name`` that takes the space's next task number (SPEC §3: numbers count up per
    space and are never reused) and yields it as ``task_counter``: one row, only when the CTE
    ``only_if`` yields one (a create whose reservation was still its own). ``space`` is the
    statement's parameter naming the space, e.g. ``%(space)s``. The row lock it takes on the
    space orders concurrent creates' numbers."""
    quote = connection.ops.quote_name
    counter = quote(Space._meta.get_field("task_counter").column)
    return (f"{name} AS (UPDATE {quote(Space._meta.db_table)} SET {counter} = {counter} + 1 "
            f"WHERE {quote(Space._meta.pk.column)} = {space} AND EXISTS (SELECT 1 FROM {only_if}) "
            f"RETURNING {counter} AS task_counter)")
