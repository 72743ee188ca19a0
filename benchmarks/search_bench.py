"""Does `q` in one space cost the same beside 100 other spaces holding the same words? (SPEC §13)

One space of 20,000 tasks, 200 of them saying "zebrafish"; the first page of `?q=zebrafish`
(the list route's query, built by fronts.task_filters.filter_tasks) is timed in this process,
median of 30, then again after 100 other spaces of 2,000 tasks each, every one saying
"zebrafish", are added (200,000 matches that are not this space's). Prints both medians, the
ratio and the plan of the second (docs/benchmarks.md, "Search in one space beside many"). Seeded by INSERT … SELECT over generate_series, then
ANALYZE. Uses a fresh database (BENCH_DATABASE_URL, by default the embedded server in
.postgres/bench); asserts nothing.

    .venv/bin/python benchmarks/search_bench.py
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import fresh_database  # noqa: E402

OTHERS, OTHER_SIZE, SIZE, MATCHES = 100, 2_000, 20_000, 200


def seed(space_id: int, total: int, every: int) -> None:
    """``total`` open tasks; every ``every``-th one's title says zebrafish."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO tasks_task (space_id, number, title, body, delivery_mode, work_item_id, conflict_kind,
                                    conflict_target, status, cycle, creator_id, received_seq, payload_sha256,
                                    superseded_by_id, closed_by_id, closed_at, close_reason, created_at,
                                    updated_at, priority, labels, title_terms)
            SELECT %(space)s, g, 'survey ' || g || CASE WHEN g %% %(every)s = 0 THEN ' zebrafish' ELSE ' coral' END,
                   '', 'result', NULL, 'create_task', 'task:s:' || g, 'open', 1, NULL, 0, '', NULL, NULL, NULL, '',
                   now(), now(), 2, '{}', '{}'
            FROM generate_series(1, %(total)s) AS g
            """, {"space": space_id, "total": total, "every": every})


def timed(space) -> tuple[float, int]:
    from django.http import QueryDict

    from fronts.task_filters import filter_tasks

    times, found = [], 0
    for _ in range(30):
        started = time.perf_counter()
        tasks, _ = filter_tasks(space, QueryDict("q=zebrafish"))
        found = len(list(tasks[:50]))
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), found


def analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE tasks_task")


def plan(space) -> str:
    from django.db import connection
    from django.http import QueryDict

    from fronts.task_filters import filter_tasks

    tasks, _ = filter_tasks(space, QueryDict("q=zebrafish"))
    sql, params = tasks[:50].query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def main() -> None:
    fresh_database()
    from spaces import services

    space = services.create_space(slug="mine", name="mine")
    seed(space.pk, SIZE, SIZE // MATCHES)
    analyze()
    alone, found = timed(space)
    started = time.monotonic()
    for n in range(OTHERS):
        seed(services.create_space(slug=f"other-{n}", name="other").pk, OTHER_SIZE, 1)
    analyze()
    print(f"== seeded {OTHERS} other spaces of {OTHER_SIZE:,} matching tasks in {time.monotonic() - started:.1f} s")
    beside, found_beside = timed(space)
    print(f"   first page of ?q=zebrafish in a space of {SIZE:,} tasks ({MATCHES} matching, {found} shown), "
          f"median of 30, in process:")
    print(f"   alone {alone:6.2f} ms   beside {OTHERS} spaces holding the word {beside:6.2f} ms   "
          f"ratio {beside / alone:4.2f}   ({found_beside} shown)")
    print("\n== its plan beside them\n" + plan(space))


if __name__ == "__main__":
    main()
