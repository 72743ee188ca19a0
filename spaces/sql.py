"""The spaces app's hand-written SQL, each statement named and built from the models' metadata:
the API key's read (``spaces.key_lookup``, and the parts of it the first touch of an
``Idempotency-Key`` takes), the rate counters' statements (``spaces.throttles``), the catalog's
next version (``spaces.services``), and the parts other apps' statements take from this app's
tables (``next_task_number``, for the create statement)."""
from __future__ import annotations

from datetime import datetime, timezone
from functools import cache

from django.db import connection
from django.db.models import Q

from common.sql import Cte, Placeholder, column, condition_sql, quote, table
from spaces.models import ApiKey, Member, RateCounter, Space


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


# The space's catalog version moved on by one (a catalog change), answering the new version.
NEXT_CATALOG_VERSION = (f"UPDATE {table(Space)} SET {column(Space, 'catalog_version')} = "
                        f"{column(Space, 'catalog_version')} + 1 WHERE {quote(Space._meta.pk.column)} = %s "
                        f"RETURNING {column(Space, 'catalog_version')}")


# --- Rate counters (spaces.throttles, SPEC §3 Abuse) -----------------------------------------

_counters = table(RateCounter)
_window = "date_trunc('minute', now())"  # a counter's window: the database's clock minute


@cache
def count_hit() -> str:
    """One more request of (scope, subject) in this minute's window; answers the window's count
    and the seconds left in it. Params: scope, subject."""
    return (f"INSERT INTO {_counters} (scope, subject, window_start, count) VALUES (%s, %s, {_window}, 1) "
            f"ON CONFLICT (scope, subject, window_start) DO UPDATE SET count = EXCLUDED.count + {_counters}.count "
            "RETURNING count, 60 - extract(second FROM now())::integer")


# (scope, subject)'s count in this minute's window, without counting. Params: scope, subject.
COUNT_THIS_MINUTE = f"SELECT count FROM {_counters} WHERE scope = %s AND subject = %s AND window_start = {_window}"


def past_counters(*, dry_run: bool) -> str:
    """The counters of minutes past: how many (``dry_run``), or deleted."""
    verb = "SELECT count(*) FROM" if dry_run else "DELETE FROM"
    return f"{verb} {_counters} WHERE window_start < {_window}"

# --- An API key's read (spaces.key_lookup, SPEC §2) -------------------------------------------
# It runs on every request, so it is built once from the models' metadata instead of being
# compiled by the ORM each time, and the unchanging text lets psycopg keep it prepared.

JOINED = ((ApiKey, "k"), (Member, "m"), (Space, "s"))


@cache
def key_columns() -> str:
    """The columns of the key, its member and its space, in that order (``key_from_row`` reads them)."""
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(f.column)}" for model, alias in JOINED for f in model._meta.concrete_fields)


@cache
def key_tables(keys: str | None = None) -> str:
    """``FROM`` the key (alias ``k``; from ``keys``, a CTE of key rows, when given) joined to its
    member (``m``) and space (``s``)."""
    quote = connection.ops.quote_name
    return (
        f"FROM {keys or quote(ApiKey._meta.db_table)} k "
        f"JOIN {quote(Member._meta.db_table)} m ON m.id = k.member_id "
        f"JOIN {quote(Space._meta.db_table)} s ON s.id = k.space_id"
    )


SPACE = Placeholder("space", -1)
PREFIX = Placeholder("prefix", "\x00prefix")
KEY_HASH = Placeholder("key_hash", "\x00hash")
NOW = Placeholder("now", datetime(1901, 1, 1, tzinfo=timezone.utc))


@cache
def valid_key() -> tuple[str, list[str]]:
    """A valid key (SPEC §2), over the key table as ``k``: in the prefix's space, this prefix,
    this secret's hash, and live (``ApiKey.live``), compiled by the ORM; and the order of its
    parameters' names (``space``, ``prefix``, ``key_hash``, ``now``). Every statement that
    authenticates uses it."""
    valid = Q(space_id=SPACE.example, prefix=PREFIX.example, key_hash=KEY_HASH.example) & ApiKey.live(NOW.example)
    return condition_sql(ApiKey, valid, "k", SPACE, PREFIX, KEY_HASH, NOW)


@cache
def lookup_key() -> str:
    """The valid key (``valid_key``) with its member and space, in ``key_columns`` order."""
    return f"SELECT {key_columns()} {key_tables()} WHERE {valid_key()[0]}"
