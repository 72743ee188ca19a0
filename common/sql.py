"""SQL helpers the apps share: an insert built from a model's metadata, an insert unless a
unique constraint already holds the row, and the pieces a hand-written statement is composed of
(``Cte``, ``Statement``), so a part another app hands out is a typed value, not a string whose
names a caller must know."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from django.db import DEFAULT_DB_ALIAS, connection, connections, models


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
    fields = written_fields(instance)
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


def written_fields(model: type[models.Model] | models.Model) -> list[models.Field]:
    """The columns an insert writes: all but the key and those PostgreSQL generates."""
    return [f for f in model._meta.concrete_fields if not f.primary_key and not f.generated]


def insert_select(model: type[models.Model], values: dict[str, str]) -> str:
    """``INSERT INTO table (every column but the key) SELECT …`` with one SQL expression per
    field name, for hand-written statements: the column list comes from the model, so a new
    column without an expression fails here, in every test, rather than in production."""
    quote = connection.ops.quote_name
    fields = written_fields(model)
    missing = [f.name for f in fields if f.name not in values]
    if missing:
        raise KeyError(f"{model.__name__}: no SQL value for {', '.join(missing)}")
    return (f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
            f"SELECT {', '.join(values[f.name] for f in fields)}")


class Placeholder:
    """A value a compiled query leaves open: ``named_sql`` turns it into ``%(name)s``."""

    def __init__(self, name: str, example: object) -> None:
        self.name, self.example = name, example


def named_sql(queryset: models.QuerySet, *placeholders: Placeholder) -> str:
    """The SQL Django compiles for ``queryset``, with named parameters, to sit inside a
    hand-written statement: so a rule the ORM states (a predicate, an order) is compiled from
    it, never copied into SQL beside it.

    The queryset is built with each placeholder's ``example`` where its value goes; each
    parameter equal to an example becomes ``%(name)s``, and every other one (a constant of
    the rule, e.g. a status) is written in as a literal, so the planner sees it as it sees the
    ORM's own query (a partial index on that status matches, in a prepared statement too).
    Examples must not equal any constant of the query.
    """
    sql, params = queryset.query.sql_with_params()
    return bind(sql, params, placeholders, lambda name: f"%({name})s")[0]


def condition_sql(model: type[models.Model], condition: models.Q, alias: str,
                  *placeholders: Placeholder) -> tuple[str, list[str]]:
    """``condition`` over ``model`` as Django compiles it, for a hand-written statement that
    reads the model's table as ``alias``: the SQL with a positional ``%s`` for each
    placeholder (constants written in, as ``named_sql`` does), and the placeholders' names in
    the order their parameters go."""
    query = model.objects.filter(condition).query
    sql, params = query.get_compiler(connection=connection).compile(query.where)
    sql = sql.replace(f"{connection.ops.quote_name(model._meta.db_table)}.", f"{alias}.")
    return bind(sql, params, placeholders, lambda name: "%s")


def bind(sql: str, params, placeholders: tuple[Placeholder, ...], mark) -> tuple[str, list[str]]:
    """``sql`` with each parameter equal to a placeholder's example marked (``mark(name)``) and
    every other one written in as a literal; the names marked, in order."""
    pieces = sql.split("%s")
    assert len(pieces) == len(params) + 1 and "%%" not in sql, "unexpected placeholders in compiled SQL"
    out, names = [pieces[0]], []
    for param, piece in zip(params, pieces[1:]):
        found = [p.name for p in placeholders if p.example == param]
        if found:
            names.append(found[0])
            out.append(mark(found[0]))
        else:
            out.append(connection.ops.compose_sql("%s", [param]))
        out.append(piece)
    return "".join(out), names


# Names of the models' tables and columns, quoted, for statements written by hand.
def quote(name: str) -> str:
    return connection.ops.quote_name(name)


def column(model, name: str) -> str:
    return quote(model._meta.get_field(name).column)


def table(model) -> str:
    return quote(model._meta.db_table)


# --- Statements composed of named parts ----------------------------------------------------

PARAMETER = re.compile(r"%\((\w+)\)s")


@dataclass(frozen=True)
class Cte:
    """One part of a ``WITH`` statement: its name, its body, the columns it yields and the parts
    it reads. An app hands out a part as a ``Cte`` built by a function that takes the parts it
    reads as arguments, so the names in its body come from those values: ``f"FROM {created}"``
    writes the part's name, ``created.col("id")`` one of its columns (``KeyError`` if it yields
    no such column), and ``with_query`` refuses a part placed before one it reads. A wrong
    name fails when the statement is built (once per process, in every test that runs it)."""

    name: str
    body: str
    columns: tuple[str, ...] = ()
    reads: tuple["Cte", ...] = ()
    materialized: bool = False  # run once, whether or not anything reads it (a side effect)

    def __str__(self) -> str:
        return self.name

    def col(self, column: str) -> str:
        if column not in self.columns:
            raise KeyError(f"the part {self.name} yields no column {column!r} (it yields {', '.join(self.columns)})")
        return f"{self.name}.{column}"


class Statement:
    """A hand-written statement with named parameters, named for what it does: ``run`` refuses
    parameters that are not exactly the ones its SQL names, so a parameter renamed in one app's
    part fails in the first test that runs the statement, never by sending a wrong value."""

    __slots__ = ("name", "sql", "parameters")

    def __init__(self, name: str, sql: str) -> None:
        self.name, self.sql = name, sql
        self.parameters = frozenset(PARAMETER.findall(sql))

    def run(self, cursor: Any, parameters: Mapping[str, Any]) -> None:
        if parameters.keys() != self.parameters:
            missing = sorted(self.parameters - parameters.keys())
            unknown = sorted(parameters.keys() - self.parameters)
            raise TypeError(f"{self.name}: parameters missing {missing}, unknown {unknown}")
        cursor.execute(self.sql, parameters)


def with_query(name: str, parts: Sequence[Cte], select: str, *, reads: Sequence[Cte] = ()) -> Statement:
    """``WITH part, … select`` as a ``Statement``. Each part is placed after the parts it reads
    (a part another app hands out brings its own), then ``select``, which reads ``reads``. Two
    different parts of one name are a ``ValueError``."""
    placed: dict[str, Cte] = {}

    def place(part: Cte) -> None:
        if part.name in placed:
            if placed[part.name] != part:
                raise ValueError(f"{name}: two different parts are named {part.name}")
            return
        for read in part.reads:
            place(read)
        placed[part.name] = part

    for part in [*parts, *reads]:
        place(part)
    return Statement(name, "WITH " + ", ".join(
        f"{part.name} AS {'MATERIALIZED ' if part.materialized else ''}({part.body})" for part in placed.values())
        + " " + select)


# --- Advisory locks ---------------------------------------------------------------------------

# A transaction's lock on (class, id): ``class`` names what is locked (each app keeps its classes
# beside its statements, one number each), ``id`` the row whose space or queue it is, folded
# into PostgreSQL's 32-bit second key. Params: class, id.
ADVISORY_XACT_LOCK = "SELECT pg_advisory_xact_lock(%s, (%s %% 2147483647)::int)"


# --- Triggers by name ------------------------------------------------------------------------


@dataclass(frozen=True)
class Trigger:
    """A rule the database keeps as a trigger, defined where a reader finds it (its app's
    ``triggers`` module) and applied by a migration from there: a PL/pgSQL function named
    ``name`` whose body is ``body``, run ``timing`` each row of ``on``. ``deferred``: a
    constraint trigger that runs as its transaction commits."""

    name: str
    on: str
    timing: str
    body: str
    deferred: bool = False

    def install_sql(self) -> str:
        """The function (replaced in place), then the trigger (made again): idempotent."""
        kind = "CONSTRAINT TRIGGER" if self.deferred else "TRIGGER"
        defer = " DEFERRABLE INITIALLY DEFERRED" if self.deferred else ""
        return (f"CREATE OR REPLACE FUNCTION {self.name}() RETURNS trigger LANGUAGE plpgsql AS $${self.body}$$; "
                f"DROP TRIGGER IF EXISTS {self.name} ON {self.on}; "
                f"CREATE {kind} {self.name} {self.timing} ON {self.on}{defer} "
                f"FOR EACH ROW EXECUTE FUNCTION {self.name}();")

    def installed(self, cursor) -> tuple[str | None, bool]:
        """The body the database runs under this name, and whether the trigger is on its table."""
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = %s", [self.name])
        row = cursor.fetchone()
        cursor.execute("SELECT count(*) FROM pg_trigger WHERE tgname = %s AND tgrelid = %s::regclass "
                       "AND tgdeferrable = %s", [self.name, self.on, self.deferred])
        return (row[0] if row else None), cursor.fetchone()[0] == 1


@dataclass(frozen=True)
class SqlFunction:
    """A rule the database keeps as an SQL function, defined beside its app's statements and
    applied by a migration from there, like a ``Trigger``: ``name(arguments) RETURNS returns``,
    written in ``language``, ``body`` its source."""

    name: str
    arguments: str
    returns: str
    body: str
    language: str = "sql"
    volatility: str = "STABLE"

    def install_sql(self) -> str:
        return (f"CREATE OR REPLACE FUNCTION {self.name}({self.arguments}) RETURNS {self.returns} "
                f"LANGUAGE {self.language} {self.volatility} AS $${self.body}$$;")

    def installed(self, cursor) -> str | None:
        """The body the database runs under this name."""
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = %s", [self.name])
        row = cursor.fetchone()
        return row[0] if row else None
