"""The schema as a database sharded by space sees it (SPEC §11, §20), read from the live catalog.

Every table either belongs to a space (it has ``space_id``: distributed by it under Citus,
co-located with ``spaces_member``) or is one of the global tables named here. ``problems()``
lists where the live schema breaks the rule (the suite holds it empty), and
``citus_statements()`` the statements that distribute it, in an order Citus accepts
(``python manage.py citus_commands``; docs/deploying.md).
"""
from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

# The tables that belong to no space, and how each is served under sharding by space.
REFERENCE = "reference"  # copied to every node: joins and foreign keys from any shard reach it
LOCAL = "local"  # stays on the coordinator: read and written there only
GLOBAL_TABLES = {
    "spaces_space": REFERENCE,  # every space-scoped table's foreign key to its space
    "spaces_keyprefix": REFERENCE,  # an API key's prefix → its space, read before the key (spaces.key_lookup)
    "exports_sharetoken": REFERENCE,  # a share token's hash → its space and export (exports.services)
    "spaces_ratecounter": LOCAL,  # per key and address counters (spaces.throttles), one statement each
}
# Django's own tables (admin users, sessions, content types, migrations): the coordinator's.
DJANGO_PREFIXES = ("auth_", "django_")
COLOCATE_WITH = "spaces_member"


@dataclass(frozen=True)
class Table:
    name: str
    columns: frozenset[str]
    primary_key: tuple[str, ...]
    uniques: tuple[tuple[str, tuple[str, ...]], ...]  # (name, columns), constraints and unique indexes
    foreign_keys: tuple[tuple[str, tuple[str, ...], str, tuple[str, ...]], ...]  # (name, columns, table, columns)

    @property
    def in_a_space(self) -> bool:
        return "space_id" in self.columns

    @property
    def role(self) -> str:
        if self.name in GLOBAL_TABLES:
            return GLOBAL_TABLES[self.name]
        if self.name.startswith(DJANGO_PREFIXES):
            return LOCAL
        return "distributed"


CATALOG = """
SELECT c.relname,
  (SELECT array_agg(a.attname::text) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
  (SELECT array_agg(a.attname::text ORDER BY k.n) FROM pg_constraint p, unnest(p.conkey) WITH ORDINALITY k(num, n)
     JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.num WHERE p.conrelid = c.oid AND p.contype = 'p'),
  (SELECT array_agg(i.indexrelid::regclass::text || ':' || (SELECT string_agg(a.attname, ',' ORDER BY k.n)
     FROM unnest(i.indkey) WITH ORDINALITY k(num, n) JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.num))
     FROM pg_index i WHERE i.indrelid = c.oid AND i.indisunique AND NOT i.indisprimary),
  (SELECT array_agg(f.conname || ':' || (SELECT string_agg(a.attname, ',' ORDER BY k.n)
       FROM unnest(f.conkey) WITH ORDINALITY k(num, n) JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.num)
     || ':' || f.confrelid::regclass::text || ':' || (SELECT string_agg(a.attname, ',' ORDER BY k.n)
       FROM unnest(f.confkey) WITH ORDINALITY k(num, n) JOIN pg_attribute a ON a.attrelid = f.confrelid AND a.attnum = k.num))
     FROM pg_constraint f WHERE f.conrelid = c.oid AND f.contype = 'f')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
ORDER BY c.relname
"""


def tables() -> list[Table]:
    """The schema's tables as the catalog has them now."""
    with connection.cursor() as cursor:
        cursor.execute(CATALOG)
        rows = cursor.fetchall()
    result = []
    for name, columns, primary_key, uniques, foreign_keys in rows:
        unique = tuple((u.split(":")[0], tuple(u.split(":")[1].split(","))) for u in uniques or ())
        keys = []
        for f in foreign_keys or ():
            key, own, other, theirs = f.split(":")
            keys.append((key, tuple(own.split(",")), other, tuple(theirs.split(","))))
        result.append(Table(name, frozenset(columns), tuple(primary_key or ()), unique, tuple(keys)))
    return result


def problems(schema: list[Table] | None = None) -> list[str]:
    """Where the schema breaks SPEC §11's rule; empty when Citus can distribute it by space."""
    schema = schema if schema is not None else tables()
    roles = {table.name: table.role for table in schema}
    found = []
    for table in schema:
        if table.role != "distributed":
            if table.in_a_space and table.name in GLOBAL_TABLES and table.role == LOCAL:
                found.append(f"{table.name}: a local table with a space")
            for key, _, other, _ in table.foreign_keys:
                if roles.get(other) == "distributed":
                    found.append(f"{table.name}.{key}: a global table refers to a space's table {other}")
            continue
        if not table.in_a_space:
            found.append(f"{table.name}: no space_id, and not named a global table")
            continue
        if "space_id" not in table.primary_key:
            found.append(f"{table.name}: primary key {table.primary_key} without space_id")
        for name, columns in table.uniques:
            if "space_id" not in columns:
                found.append(f"{table.name}: unique {name} {columns} without space_id")
        for key, own, other, theirs in table.foreign_keys:
            role = roles.get(other)
            if role == REFERENCE:
                continue
            if role != "distributed":
                found.append(f"{table.name}.{key}: refers to {other}, a {role} table")
            elif ("space_id" not in own or "space_id" not in theirs
                  or own.index("space_id") != theirs.index("space_id")):
                found.append(f"{table.name}.{key}: {own} → {other} {theirs} does not pair space_id")
    return found


def citus_statements(schema: list[Table] | None = None) -> list[str]:
    """The statements that distribute the schema: reference tables, then the space's tables by
    ``space_id``, co-located, each after the tables its foreign keys name."""
    schema = schema if schema is not None else tables()
    statements = [f"SELECT create_reference_table('{t.name}');" for t in schema if t.role == REFERENCE]
    distributed = {t.name: t for t in schema if t.role == "distributed"}
    done: list[str] = []

    def visit(name: str, seen: tuple[str, ...] = ()) -> None:
        if name in done or name in seen:
            return
        for _, _, other, _ in distributed[name].foreign_keys:
            if other in distributed and other != name:
                visit(other, seen + (name,))
        done.append(name)

    visit(COLOCATE_WITH)
    for name in sorted(distributed):
        visit(name)
    for name in done:
        colocate = "" if name == COLOCATE_WITH else f", colocate_with => '{COLOCATE_WITH}'"
        statements.append(f"SELECT create_distributed_table('{name}', 'space_id'{colocate});")
    return statements
