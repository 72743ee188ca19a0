"""The hot routes (create, next, one task) under serving configurations side by side, to choose
the shipped one (gunicorn.conf.py): sync workers with a connection each (the configuration
before agents could wait, which cannot hold a waiting request), and the shipped threaded
workers with one running request a worker, with two, without the limit, and without the
connection pool. Each configuration serves the same database in turn, interleaved over the
repeats so the machine's drift falls on all alike; medians.

    .venv/bin/python benchmarks/serving_bench.py [--seconds 4] [--repeats 3] [--clients 16]

Uses a fresh PostgreSQL database (BENCH_DATABASE_URL, by default the embedded server in
.postgres/bench). Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.claims_bench import add_tasks  # noqa: E402
from benchmarks.common import fresh_database, gunicorn, refresh_statistics  # noqa: E402
from benchmarks.load import Scenario, ensure_wrk, fmt, median_of, run_load  # noqa: E402

CONFIGURATIONS = [
    ("sync ×2 (before)", dict(workers=2), {"SPACES_RUNNING_PER_PROCESS": "0"}),
    ("shipped: gthread, 1 running", dict(workers=2, shipped=True), {}),
    ("gthread, 2 running", dict(workers=2, shipped=True), {"SPACES_RUNNING_PER_PROCESS": "2"}),
    ("gthread, no limit", dict(workers=2, shipped=True), {"SPACES_RUNNING_PER_PROCESS": "0"}),
    ("gthread, 1 running, no pool", dict(workers=2, shipped=True), {"DJANGO_DB_POOL_SIZE": "0"}),
]
SETTINGS = ("SPACES_RUNNING_PER_PROCESS", "DJANGO_DB_POOL_SIZE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--clients", type=int, default=16)
    args = parser.parse_args()
    ensure_wrk()
    url = fresh_database()
    from spaces import services

    hot = services.create_space(slug="hot", name="hot")
    keys = [services.issue_key(member=services.add_member(space=hot, role="writer", name=f"agent-{i}"))[1]
            for i in range(args.clients)]
    add_tasks(hot.pk, hot.members.first().pk, 200_000, "open")  # next never runs dry
    refresh_statistics(url)
    routes = {
        "create": Scenario("/v1/spaces/hot/tasks", keys, body='{"title": "hot task {unique}"}'),
        "next": Scenario("/v1/spaces/hot/next", keys),
        "one task": Scenario("/v1/spaces/hot/tasks/1", keys, method="GET", body=""),
    }
    results: dict[tuple[str, str], list] = {}
    for _ in range(args.repeats):
        for label, options, environment in CONFIGURATIONS:
            for name in SETTINGS:
                os.environ.pop(name, None)
            os.environ.update(environment)
            with gunicorn(url, **options) as base:
                for scenario in routes.values():
                    run_load(base, scenario, clients=4, seconds=0.5)  # warm up
                for name, scenario in routes.items():
                    results.setdefault((label, name), []).append(
                        run_load(base, scenario, clients=args.clients, seconds=args.seconds))
    for name in SETTINGS:
        os.environ.pop(name, None)
    print(f"== hot routes, {args.clients} clients, median of {args.repeats} x {args.seconds:g} s, interleaved")
    baseline = {name: median_of(results[(CONFIGURATIONS[0][0], name)]).rps for name in routes}
    for label, _, _ in CONFIGURATIONS:
        for name in routes:
            result = median_of(results[(label, name)])
            print(f"  {label:<30} {name:<9} {fmt(result)}  {result.rps / baseline[name]:.2f}x of sync")


if __name__ == "__main__":
    main()
