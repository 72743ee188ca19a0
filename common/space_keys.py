"""Keys within a space (SPEC §11): the schema that a database sharded by space can carry.

Every table that belongs to a space has ``space_id`` in its primary key and in every unique
constraint, and each foreign key between two such tables is ``(space_id, x_id) → (space_id,
id)``, so Citus can distribute them by ``space_id``, co-located, and every join between them
stays on one shard.

Django 5.2 cannot point a ``ForeignKey`` at a composite primary key, so the models keep ``id``
as Django's ``pk`` (the primary key is ``(id, space_id)``; ``id`` is drawn from one sequence,
so it names one row everywhere in practice) and the database states the composite keys:

- ``SpaceForeignKey`` is a ``ForeignKey`` between two tables of a space that tells Django
  not to make its one-column constraint (``db_constraint=False``); Django still indexes the
  column and emulates ``on_delete`` as it always does;
- the migrations state the composite primary keys and foreign keys with the two functions
  below (``docs/architecture.md``, *A schema ready to shard*).

A test (``tests/operations/test_shard_schema.py``) reads the live catalog and holds the rule.
"""
from __future__ import annotations

from django.db import migrations, models


class SpaceForeignKey(models.ForeignKey):
    """A foreign key to a row of the same space; its constraint is the migration's composite one."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs["db_constraint"] = False
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        kwargs.pop("db_constraint", None)
        return name, path, args, kwargs


def composite_primary_keys(*tables: str) -> migrations.RunSQL:
    """Each table's primary key becomes ``(id, space_id)``: ``id`` first, so a lookup by Django's
    ``pk`` alone keeps its index; a composite foreign key's ``(space_id, x_id)`` matches it
    as a set, which is all PostgreSQL and Citus ask."""
    forward = [f"ALTER TABLE {t} DROP CONSTRAINT {t}_pkey, ADD CONSTRAINT {t}_pkey PRIMARY KEY (id, space_id)"
               for t in tables]
    backward = [f"ALTER TABLE {t} DROP CONSTRAINT {t}_pkey, ADD CONSTRAINT {t}_pkey PRIMARY KEY (id)"
                for t in tables]
    return migrations.RunSQL(forward, backward)


def composite_foreign_keys(*keys: tuple[str, str, str]) -> migrations.RunSQL:
    """``(table, column, referenced table)``: ``(space_id, column) → referenced (space_id, id)``,
    deferred to the commit as Django's own are. Added ``NOT VALID`` and validated next, so a large
    table is read once under a lock that lets writes go on (``SHARE UPDATE EXCLUSIVE``)."""
    forward, backward = [], []
    for table, column, referenced in keys:
        name = f"{table}_{column}_same_space"
        forward.append(f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY (space_id, {column}) "
                       f"REFERENCES {referenced} (space_id, id) DEFERRABLE INITIALLY DEFERRED NOT VALID")
        forward.append(f"ALTER TABLE {table} VALIDATE CONSTRAINT {name}")
        backward.append(f"ALTER TABLE {table} DROP CONSTRAINT {name}")
    return migrations.RunSQL(forward, backward[::-1])
