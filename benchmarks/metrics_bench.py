"""SPEC §20: what one Prometheus scrape of ``/metrics`` costs at 1 space and at 300.

Each space has a writer and ``--tasks`` open tasks (one claimed). The scrape is served by
gunicorn as the project ships it (its multiprocess metrics folder, two workers); the median
and max of ``--scrapes`` scrapes from loopback, and the statements one scrape sends (the same
at both sizes: the per-space gauges are read for the top 20 spaces and the rest summed).

    .venv/bin/python benchmarks/metrics_bench.py [--spaces 300] [--tasks 20] [--scrapes 50]

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

from benchmarks.common import fresh_database, gunicorn, refresh_statistics  # noqa: E402


def add_spaces(first: int, last: int, tasks: int) -> None:
    from commands.unit import in_transaction, in_unit
    from spaces import services
    from tasks import claims
    from tasks.commands import create_once

    for n in range(first, last):
        space = services.create_space(slug=f"space-{n}", name=f"Space {n}")
        member = services.add_member(space=space, role="writer", name="writer")
        for k in range(tasks):
            in_unit(create_once, space=space, actor=member, title=f"Work item {k} of space {n}")
        in_transaction(claims.claim_next_task, space=space, member=member)


def scrape_figures(url: str, scrapes: int) -> tuple[float, float, int]:
    import httpx
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    connection.queries_log.clear()  # full after the set-up: the capture would count nothing
    with CaptureQueriesContext(connection) as queries:
        answer = Client().get("/metrics")
    assert answer.status_code == 200, answer.status_code
    statements = len(queries)
    with gunicorn(url, workers=2, shipped=True) as base, httpx.Client(base_url=base) as http:
        http.get("/metrics")
        times = []
        for _ in range(scrapes):
            started = time.perf_counter()
            assert http.get("/metrics").status_code == 200
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), max(times), statements


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spaces", type=int, default=300)
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--scrapes", type=int, default=50)
    args = parser.parse_args()
    url = fresh_database()
    add_spaces(0, 1, args.tasks)
    refresh_statistics(url)
    one = scrape_figures(url, args.scrapes)
    add_spaces(1, args.spaces, args.tasks)
    refresh_statistics(url)
    many = scrape_figures(url, args.scrapes)
    for label, (median, worst, statements) in (("1 space", one), (f"{args.spaces} spaces", many)):
        print(f"{label:>12}: scrape median {median:.1f} ms, max {worst:.1f} ms, {statements} statements")
    print(f"ratio {args.spaces} spaces / 1 space (median): {many[0] / one[0]:.2f}")


if __name__ == "__main__":
    main()
