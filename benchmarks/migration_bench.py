"""SPEC §11, §20: how long the migrations that key every table by its space take on a space of
1,000,000 tasks.

A fresh database is migrated to the schema before them (primary keys on ``id``, one-column
foreign keys), seeded as ``scale_bench`` seeds its large space (1,000,000 tasks, their
``created`` history, 2,500 dependencies) plus one feed event a task, analyzed, and then
migrated to the end, timed. (Seeding takes the server's superuser, as the embedded server
gives: triggers are off while it runs.)

    .venv/bin/python benchmarks/migration_bench.py [--tasks 1000000]

Uses a fresh database (BENCH_DATABASE_URL, by default the embedded server in .postgres/bench).
Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import bench_database_url, psycopg_dsn, recreate_database  # noqa: E402

BEFORE = [("spaces", "0010"), ("events", "0002"), ("allocation", "0012"), ("tasks", "0019"), ("exports", "0001"),
          ("webhooks", "0001")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1_000_000)
    args = parser.parse_args()
    url = bench_database_url()
    recreate_database(url)
    os.environ.update(DATABASE_URL=url, DJANGO_SETTINGS_MODULE="settings.base", DJANGO_DEBUG="1")
    import django

    django.setup()
    import psycopg
    from django.core.management import call_command
    from django.db import connection

    from benchmarks.scale_bench import seed
    from spaces import services
    from tests.factories import MemberFactory

    for app, target in BEFORE:
        call_command("migrate", app, target, verbosity=0)
    space = services.create_space(slug="large", name="Large")
    creator = MemberFactory(space=space, role="writer")
    started = time.monotonic()
    with connection.cursor() as cursor:
        # Triggers off while seeding: the history's feed trigger would number a million events one
        # by one; the feed is seeded below as it would stand, one event a task.
        cursor.execute("SET session_replication_role = replica")
    seed(space.pk, creator.pk, args.tasks)
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO events_event (space_id, seq, type, task_number, actor_id, data, at) "
                       "SELECT space_id, id, 'task.created', number, creator_id, '{}', now() FROM tasks_task")
    connection.close()
    with psycopg.connect(psycopg_dsn(url), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        sizes = conn.execute("SELECT pg_size_pretty(pg_database_size(current_database()))").fetchone()[0]
    print(f"seeded {args.tasks:,} tasks (and their history, feed) in {time.monotonic() - started:.0f} s; "
          f"database {sizes}")
    started = time.monotonic()
    call_command("migrate", verbosity=1)
    print(f"migrations to the space-keyed schema: {time.monotonic() - started:.1f} s at {args.tasks:,} tasks")


if __name__ == "__main__":
    main()
