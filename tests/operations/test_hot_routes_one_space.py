"""SPEC §20: every statement of the hot routes names its space, so under sharding by space each
goes to one shard. The statements are the ones the routes really send (captured), each read
for a ``space_id`` equal to the space's id (or one of the global tables alone)."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from common import sharding

S = "/v1/spaces/agent-lab"
pytestmark = pytest.mark.django_db
BOOKKEEPING = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK", "BEGIN", "COMMIT", "SET ", "NOTIFY", "SELECT pg_notify",
               "LISTEN", "UNLISTEN")


def distributed_tables() -> set[str]:
    return {t.name for t in sharding.tables() if t.role == "distributed"}


def routed(sql: str, space_id: int) -> bool:
    """The statement names the space by value: ``space_id = <id>`` (any alias, quoted or not), or
    inserts rows whose space_id column is given (a VALUES list or a SELECT of constants)."""
    if re.search(rf'space_id"?\s*=\s*{space_id}\b', sql):
        return True
    inserted = re.match(r'\s*INSERT INTO "?\w+"? \(([^)]*)\) VALUES \(([^)]*)\)', sql)
    if inserted:
        columns = [c.strip().strip('"') for c in inserted.group(1).split(",")]
        values = [v.strip() for v in inserted.group(2).split(",")]
        return "space_id" in columns and values[columns.index("space_id")] == str(space_id)
    return False


def test_the_hot_routes_send_no_statement_that_spans_spaces(space, writer, steward, writer2):
    distributed = distributed_tables()
    with CaptureQueriesContext(connection) as captured:
        assert writer.api.post(f"{S}/tasks", {"title": "First of the hot routes"}).status_code == 201
        keyed = {"Idempotency-Key": "hot-1"}
        assert writer.api.post(f"{S}/tasks", {"title": "Second of the hot routes"}, headers=keyed).status_code == 201
        assert writer.api.post(f"{S}/tasks", {"title": "Second of the hot routes"}, headers=keyed).status_code == 201
        assert writer.api.post(f"{S}/tasks", {"title": "First of the hot routes"}).status_code == 409
        claimed = writer.api.post(f"{S}/next", {})
        assert claimed.status_code == 200, claimed.content
        number = claimed.json()["task"]["number"]
        assert writer.api.post(f"{S}/tasks/{number}/heartbeat").status_code == 200
        post = writer.api.post(f"{S}/posts", {"body": "Done."}).json()["id"]
        assert writer.api.post(f"{S}/tasks/{number}/done", {"post": post}).status_code == 201
    offending = []
    for query in captured.captured_queries:
        sql = query["sql"]
        if sql.lstrip().upper().startswith(BOOKKEEPING):
            continue
        touched = {t for t in distributed if re.search(rf'\b"?{t}"?\b', sql)}
        if touched and not routed(sql, space.pk):
            offending.append(sql)
    assert offending == [], "\n\n".join(offending)
