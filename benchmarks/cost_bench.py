"""SPEC §19 at scale: what reading a space's spend costs when it has 1,000,000 tasks.

A fresh database with one space of ``--tasks`` tasks, every one done with an accepted attempt
and a claim that reported its spend (most months ago, ``--recent`` of them this month), the
month's running total as the reports would have left it. Timed, median of ``--repeats`` in
this process: the month's spend (``costs.selectors.month_spend``: one row), the summary's cost
figures (the month's spend and its cost per accepted outcome), a task's cost, and the month's
``GET …/costs`` grouped by member.

    .venv/bin/python benchmarks/cost_bench.py [--tasks 1000000] [--recent 2000] [--repeats 20]

Uses a fresh database (BENCH_DATABASE_URL, by default the embedded server in .postgres/bench).
Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import fresh_database, psycopg_dsn  # noqa: E402


def seed(space_id: int, member_id: int, total: int, recent: int) -> None:
    """Tasks, their claims, accepted attempts and spends, by INSERT … SELECT in the server."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")  # no history triggers while seeding
        script = """
            INSERT INTO spaces_post (space_id, author_id, title, body, created_at) VALUES (%(space)s, %(member)s, '', 'r', now());
            INSERT INTO tasks_task (space_id, number, title, body, delivery_mode, work_item_id, conflict_kind,
                conflict_target, status, cycle, creator_id, received_seq, payload_sha256, close_reason, created_at,
                updated_at, priority, labels, title_terms)
            SELECT %(space)s, g, 'bench task ' || g, '', 'result', NULL, 'create_task', 'task:bench:' || g, 'done', 1,
                   %(member)s, 0, '', '', now(), now(), 2, ARRAY[(ARRAY['api','db','ui'])[g %% 3 + 1]]::varchar[], '{}'
            FROM generate_series(1, %(total)s) AS g;
            UPDATE spaces_space SET task_counter = %(total)s WHERE id = %(space)s;
            INSERT INTO tasks_claim (space_id, task_id, member_id, cycle, origin, created_at, expires_at, ended_at,
                                     end_reason)
            SELECT space_id, id, %(member)s, 1, 'next', now(), now(), now(), 'attempt' FROM tasks_task
            WHERE space_id = %(space)s;
            INSERT INTO tasks_attempt (space_id, task_id, number, cycle, member_id, post_id, state, created_at, decided_at)
            SELECT t.space_id, t.id, 1, 1, %(member)s, (SELECT max(id) FROM spaces_post), 'accepted', now(),
                   CASE WHEN t.number > %(total)s - %(recent)s THEN now() - interval '1 hour'
                        ELSE now() - interval '400 days' END
            FROM tasks_task t WHERE t.space_id = %(space)s;
            INSERT INTO costs_spend (space_id, task_id, claim_id, member_id, model, usd, input_tokens, output_tokens,
                                     seconds, reported_at)
            SELECT c.space_id, c.task_id, c.id, c.member_id, 'm', 0.012345, 1000, 100, 5,
                   CASE WHEN t.number > %(total)s - %(recent)s THEN now() - interval '1 hour'
                        ELSE now() - interval '400 days' END
            FROM tasks_claim c JOIN tasks_task t ON t.space_id = c.space_id AND t.id = c.task_id
            WHERE c.space_id = %(space)s;
            INSERT INTO costs_monthspend (space_id, month, usd, input_tokens, output_tokens, seconds)
            SELECT %(space)s, date_trunc('month', now() AT TIME ZONE 'UTC')::date, sum(usd), sum(input_tokens),
                   sum(output_tokens), sum(seconds)
            FROM costs_spend WHERE space_id = %(space)s AND reported_at >= date_trunc('month', now() AT TIME ZONE 'UTC');
            """
        values = {"space": space_id, "member": member_id, "total": total, "recent": recent}
        for statement in filter(str.strip, script.split(";")):  # one statement at a time (prepared)
            cursor.execute(statement, values)


def timed(action, repeats: int) -> float:
    action()  # warm
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--recent", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    url = fresh_database()
    import psycopg
    from django.test import Client
    from django.utils import timezone

    from costs import selectors
    from costs.selectors import month_spend
    from spaces import services
    from tasks.summary import month_cost

    space = services.create_space(slug="large", name="Large")
    member = services.add_member(space=space, role="writer", name="agent")
    _, key = services.issue_key(member=member)
    started = time.monotonic()
    seed(space.pk, member.pk, args.tasks, args.recent)
    with psycopg.connect(psycopg_dsn(url), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    print(f"seeded {args.tasks:,} tasks with their claims, accepted attempts and spends in "
          f"{time.monotonic() - started:.0f} s ({args.recent:,} this month)")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    figures = {
        "the month's spend (one row)": lambda: month_spend(space.pk),
        "the summary's cost figures": lambda: month_cost(space, timezone.now()),
        "one task's cost": lambda: selectors.task_cost(space.pk, 1),
        "GET …/costs (this month, by member)": lambda: client.get("/v1/spaces/large/costs"),
    }
    for label, action in figures.items():
        print(f"{label:<40} {timed(action, args.repeats):8.2f} ms (median of {args.repeats})")
    print(client.get("/v1/spaces/large/costs").json())


if __name__ == "__main__":
    main()
