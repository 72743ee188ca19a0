"""Statements (and parts of statements) over the spaces app's tables, for the apps that must
change them inside a statement of their own: named, commented, names from the models."""
from __future__ import annotations

from functools import cache

from common.sql import Cte, column, quote, table
from spaces.models import Space


@cache
def next_task_number(*, only_if: Cte) -> Cte:
    """The part ``numbered`` that takes the space's next task number (SPEC §3: numbers count up
    per space and are never reused) and yields it as ``task_counter``: one row, only when the
    part ``only_if`` yields one (a create whose reservation was still its own). The space is the
    statement's ``space`` parameter. The row lock it takes on the space orders concurrent
    creates' numbers."""
    counter = column(Space, "task_counter")
    return Cte("numbered", f"UPDATE {table(Space)} SET {counter} = {counter} + 1 "
                           f"WHERE {quote(Space._meta.pk.column)} = %(space)s AND EXISTS (SELECT 1 FROM {only_if}) "
                           f"RETURNING {counter} AS task_counter", columns=("task_counter",), reads=(only_if,))
