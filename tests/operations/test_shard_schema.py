"""SPEC §11, §20: a schema ready to shard by space. Read from the live catalog after every
migration: each table of a space has space_id in its primary key and its unique constraints,
each foreign key between two such tables pairs space_id on both sides, and the tables that
belong to no space are named, each with how it is served."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from common import sharding
from common.sharding import Table


@pytest.mark.django_db
def test_the_live_schema_keeps_every_key_within_its_space():
    schema = sharding.tables()
    assert sharding.problems(schema) == []
    by_name = {t.name: t for t in schema}
    # What the rule rests on, read back: the composite keys the migrations state.
    assert by_name["tasks_task"].primary_key == ("id", "space_id")
    assert ("tasks_claim_task_id_same_space", ("space_id", "task_id"), "tasks_task", ("space_id", "id")) \
        in by_name["tasks_claim"].foreign_keys
    distributed = [t for t in schema if t.role == "distributed"]
    assert len(distributed) >= 30 and all(t.in_a_space for t in distributed)
    assert {t.name for t in schema if t.role == sharding.REFERENCE} == {
        "spaces_space", "spaces_keyprefix", "exports_sharetoken"}


@pytest.mark.django_db
def test_a_composite_foreign_key_refuses_a_row_of_another_space():
    from django.db import IntegrityError, transaction

    from spaces import services
    from tests.factories import create_task, member_with_key

    space = services.create_space(slug="first", name="First")
    writer, _ = member_with_key(space, "writer")
    first = create_task(space=space, actor=writer, title="One task")
    other = services.create_space(slug="second", name="Second")
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("INSERT INTO tasks_dependency (space_id, task_id, blocker_id, created_at) "
                       "VALUES (%s, %s, %s, now())", [other.pk, first.pk, first.pk])
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def table(name, columns=("id", "space_id"), primary_key=("space_id", "id"), uniques=(), foreign_keys=()):
    return Table(name, frozenset(columns), primary_key, tuple(uniques), tuple(foreign_keys))


def test_the_rule_names_each_way_a_table_breaks_it():
    parent = table("tasks_task")
    schema = [
        parent,
        table("spaces_space", columns=("id",), primary_key=("id",)),
        table("tasks_bare", columns=("id",), primary_key=("id",)),
        table("tasks_by_id", primary_key=("id",)),
        table("tasks_unique", uniques=[("tasks_unique_token", ("token",))]),
        table("tasks_child", columns=("id", "space_id", "task_id"),
              foreign_keys=[("tasks_child_task", ("task_id",), "tasks_task", ("id",))]),
        table("tasks_swapped", columns=("id", "space_id", "task_id"),
              foreign_keys=[("tasks_swapped_task", ("task_id", "space_id"), "tasks_task", ("space_id", "id"))]),
        table("tasks_to_space", columns=("id", "space_id"),
              foreign_keys=[("tasks_to_space_space", ("space_id",), "spaces_space", ("id",))]),
        table("spaces_keyprefix", columns=("prefix", "space_id"), primary_key=("prefix",),
              foreign_keys=[("spaces_keyprefix_task", ("task_id",), "tasks_task", ("id",))]),
    ]
    found = "\n".join(sharding.problems(schema))
    assert "tasks_bare: no space_id" in found
    assert "tasks_by_id: primary key" in found
    assert "tasks_unique: unique tasks_unique_token" in found
    assert "tasks_child.tasks_child_task" in found
    assert "tasks_swapped.tasks_swapped_task" in found
    assert "spaces_keyprefix.spaces_keyprefix_task: a global table refers" in found
    assert "tasks_to_space" not in found and "tasks_task" not in found.split(":")[0]
    assert len(sharding.problems(schema)) == 6


@pytest.mark.django_db
def test_citus_commands_distribute_referenced_tables_first():
    out = StringIO()
    call_command("citus_commands", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("SELECT create_reference_table(")
    order = [line.split("'")[1] for line in lines]
    assert order.index("spaces_member") < order.index("tasks_task") < order.index("tasks_claim")
    assert order.index("tasks_task") < order.index("allocation_occupancy")
    assert order.index("tasks_attempt") < order.index("tasks_check")
    assert len(order) == len(set(order)) == len(sharding.tables()) - sum(
        1 for t in sharding.tables() if t.role == sharding.LOCAL)
    assert all("colocate_with => 'spaces_member'" in line for line in lines if "create_distributed_table" in line
               and "'spaces_member'," not in line)
