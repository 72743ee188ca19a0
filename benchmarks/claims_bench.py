"""Claims per second through POST …/next, side by side with (a) a trivial DRF view doing one
bare SKIP LOCKED claim and (b) the same claim over psycopg without HTTP, at 1, 8 and 32
agents; then `next` with 1,000,000 finished tasks in the table against 10,000.

    .venv/bin/python benchmarks/claims_bench.py [--seconds 3] [--repeats 3]
    .venv/bin/python benchmarks/claims_bench.py --agents 8 --skip-million   # one quick comparison
    BENCH_WORKERS=5 .venv/bin/python benchmarks/claims_bench.py   # another gunicorn worker count

Uses a fresh PostgreSQL database (BENCH_DATABASE_URL, by default the embedded server in
.postgres/bench). Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (  # noqa: E402
    autovacuum_note,
    fresh_database,
    gunicorn,
    psycopg_dsn,
    refresh_statistics,
)
from benchmarks.load import Scenario, ensure_wrk, fmt, median_of, run_load  # noqa: E402

AGENTS = (1, 8, 32)
WORKERS = int(os.environ.get("BENCH_WORKERS", "2"))  # gunicorn sync workers serving both HTTP paths
OPEN_TASKS = 20_000


def add_tasks(space_id: int, creator_id: int, count: int, status: str) -> None:
    """Bulk rows straight in SQL: fixtures for a benchmark, not a way the service creates work."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT task_counter FROM spaces_space WHERE id = %s", [space_id])
        start = cursor.fetchone()[0]
        cursor.execute(
            """
            INSERT INTO tasks_task (space_id, number, title, body, delivery_mode, work_item_id, conflict_kind,
                                    conflict_target, status, cycle, creator_id, received_seq, payload_sha256,
                                    superseded_by_id, closed_by_id, closed_at, close_reason, created_at, updated_at,
                                    priority, labels, title_terms)
            SELECT %(space)s, %(start)s + g, 'bench ' || (%(start)s + g), '', 'result', NULL, 'create_task',
                   'task:bench:' || (%(start)s + g), %(status)s, 1, %(creator)s, 0, '', NULL, NULL, NULL, '',
                   now(), now(), 2, '{}', '{}'
            FROM generate_series(1, %(count)s) AS g
            """,
            {"space": space_id, "start": start, "count": count, "status": status, "creator": creator_id},
        )
        cursor.execute("UPDATE spaces_space SET task_counter = task_counter + %s WHERE id = %s", [count, space_id])
        cursor.execute("ANALYZE tasks_task")


def reopen_all(space_id: int) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM tasks_taskevent WHERE space_id = %s AND kind = 'claimed'", [space_id])
        cursor.execute("DELETE FROM tasks_claim WHERE space_id = %s", [space_id])
        cursor.execute("UPDATE tasks_task SET status = 'open' WHERE space_id = %s AND status = 'claimed'", [space_id])


def psycopg_claims(url: str, space_id: int, agents: int, seconds: float) -> float:
    """The bare claim over psycopg, one connection an agent: the ceiling with no HTTP or Django."""
    import psycopg

    dsn = psycopg_dsn(url)
    counts = [0] * agents
    stop_at = time.monotonic() + seconds
    barrier = threading.Barrier(agents + 1)

    def agent(i: int) -> None:
        with psycopg.connect(dsn) as conn:
            barrier.wait()
            while time.monotonic() < stop_at:
                with conn.transaction():
                    row = conn.execute(
                        "SELECT id FROM tasks_task WHERE space_id = %s AND status = 'open' ORDER BY priority, number "
                        "LIMIT 1 FOR UPDATE SKIP LOCKED", [space_id]).fetchone()
                    if row is None:
                        return
                    conn.execute("UPDATE tasks_task SET status = 'claimed' WHERE id = %s", [row[0]])
                counts[i] += 1

    threads = [threading.Thread(target=agent, args=(i,)) for i in range(agents)]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.monotonic()
    for t in threads:
        t.join()
    return sum(counts) / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--agents", type=lambda text: [int(n) for n in text.split(",")], default=list(AGENTS),
                        help="comma-separated agent counts (default 1,8,32)")
    parser.add_argument("--skip-million", action="store_true", help="leave out the 1,000,000-task comparison")
    args = parser.parse_args()
    ensure_wrk()
    url = fresh_database()
    from spaces import services

    space = services.create_space(slug="claims", name="Claims")
    keys = []
    for i in range(max(args.agents)):
        member = services.add_member(space=space, role="writer", name=f"agent-{i}")
        keys.append(services.issue_key(member=member)[1])
    creator = space.members.first()
    add_tasks(space.pk, creator.pk, 10_000, "done")  # the 10,000-task table of the comparison below
    add_tasks(space.pk, creator.pk, OPEN_TASKS, "open")

    next_request = Scenario("/v1/spaces/claims/next", keys)
    bare_request = Scenario("/bench/claim", keys)

    def measure(base, factory, agents):
        reopen_all(space.pk)
        return run_load(base, factory, clients=agents, seconds=args.seconds)

    def measure_direct(agents):
        reopen_all(space.pk)
        return psycopg_claims(url, space.pk, agents, args.seconds)

    figures = {}
    with gunicorn(url, workers=WORKERS) as base:
        run_load(base, next_request, clients=2, seconds=0.5)
        print(f"== claims/s, gunicorn {WORKERS} sync workers, median of {args.repeats} x {args.seconds:g} s "
              f"({OPEN_TASKS:,} open tasks), the three interleaved in every repeat; {autovacuum_note(url)}")
        for agents in args.agents:
            # Interleaved, so that the machine's drifting speed falls on all three alike.
            nexts, bares, directs = [], [], []
            for _ in range(args.repeats):
                refresh_statistics(url)
                nexts.append(measure(base, next_request, agents))
                bares.append(measure(base, bare_request, agents))
                directs.append(measure_direct(agents))
            nxt, bare, direct = median_of(nexts), median_of(bares), sorted(directs)[args.repeats // 2]
            figures[agents] = nxt.rps
            print(f"  {agents:>2} agents: next {fmt(nxt)}")
            print(f"            (a) bare SKIP LOCKED view {fmt(bare)}")
            print(f"            (b) psycopg, no HTTP {direct:8.0f} claims/s")
            print(f"            next / (a) = {nxt.rps / bare.rps:.2f}x [>= 0.8 at 8]   "
                  f"next / (b) = {nxt.rps / direct:.2f}x [>= 0.25 at 8]")
        if args.skip_million or 8 not in figures:
            return
        reopen_all(space.pk)
        add_tasks(space.pk, creator.pk, 1_000_000, "done")
        refresh_statistics(url)
        run_load(base, next_request, clients=2, seconds=0.5)
        big = median_of([measure(base, next_request, 8) for _ in range(args.repeats)])
        print(f"== with 1,000,000 finished tasks: next at 8 agents {fmt(big)}")
        print(f"   vs 10,000 tasks: {big.rps / figures[8]:.2f}x [>= 0.8]")


if __name__ == "__main__":
    main()
