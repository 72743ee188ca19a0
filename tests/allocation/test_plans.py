"""The hot lookups by unique key must use their unique index even under a generic plan
made before the table has any statistics (a prepared statement keeps that plan until
ANALYZE): no other index may look cheaper then. Checked on fresh, never-analyzed copies
of the tables with all their indexes."""
import pytest
from django.db import connection

pytestmark = [pytest.mark.django_db]

LOOKUPS = [
    # table, and the columns of its unique key (operation_one_per_member_key,
    # occupancy_one_per_conflict_key, reservation_one_per_conflict_key, hold_one_per_slot)
    ("allocation_operation", [("space_id", "bigint"), ("member_id", "bigint"), ("key", "text")]),
    ("allocation_occupancy", [("space_id", "bigint"), ("kind", "text"), ("target", "text"), ("delivery_mode", "text")]),
    ("allocation_reservation",
     [("space_id", "bigint"), ("kind", "text"), ("target", "text"), ("delivery_mode", "text")]),
    ("allocation_slothold", [("space_id", "bigint"), ("work_item_id", "text")]),
]


@pytest.mark.parametrize("table, columns", LOOKUPS, ids=[t for t, _ in LOOKUPS])
def test_a_generic_plan_on_an_empty_table_uses_the_unique_index(table, columns):
    copy = f"plan_check_{table}"
    where = " AND ".join(f"{name} = ${i}" for i, (name, _) in enumerate(columns, start=1))
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TEMP TABLE {copy} (LIKE {table} INCLUDING INDEXES)")
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute(f"PREPARE lookup ({', '.join(t for _, t in columns)}) AS SELECT id FROM {copy} WHERE {where}")
        cursor.execute(f"EXPLAIN EXECUTE lookup ({', '.join('NULL' for _ in columns)})")
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("DEALLOCATE lookup")
    # The copy's indexes get generated names; only the unique index has every key column
    # in its condition (each other index has at most one of them).
    assert "Index Scan" in plan or "Index Only Scan" in plan, plan
    condition = plan.split("Index Cond: ", 1)[1].split("\n", 1)[0]
    assert all(name in condition for name, _ in columns), plan
