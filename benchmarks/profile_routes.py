"""Where a hot route's time goes: cProfile over N requests through the WSGI handler.

    .venv/bin/python benchmarks/profile_routes.py [--route create] [--requests 2000] [--top 25]

``--route floor-insert`` and ``floor-claim`` profile the floor views of
``benchmarks/floor_bench.py`` alike, to set a route's profile beside its floor's.

The requests go through ``settings.wsgi``'s handler in this process (every middleware,
DRF, the view, the database round trips over a real connection), without a server or a
client in the way, so the profile shows the service's own work. Prints the share of the
time spent in each layer (our code, Django, DRF, psycopg, waiting for PostgreSQL) and the
functions with the most time of their own. Asserts nothing.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import secrets
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import bench_database_url, recreate_database  # noqa: E402

ROUTES = {
    # name: (path, body, extra headers); {n} is the request's number
    "create": ("/v1/spaces/bench/tasks", '{{"title": "task {n}"}}', {}),
    # floor_bench.py's titles sharing words ({k}: a seeded title's number, {a}: an agent's),
    # with --open among thousands of live titles that have them
    "create-shared": ("/v1/spaces/bench/tasks", '{{"title": "task run-{n}-{a}-{k} agent {a}"}}', {}),
    "create+key": ("/v1/spaces/bench/tasks", '{{"title": "task {n}"}}', {"HTTP_IDEMPOTENCY_KEY": "k{n}"}),
    "replay": ("/v1/spaces/bench/tasks", '{{"title": "replayed"}}', {"HTTP_IDEMPOTENCY_KEY": "r"}),
    "409": ("/v1/spaces/bench/tasks", '{{"title": "review agent benchmark"}}', {}),
    "next": ("/v1/spaces/bench/next", "{{}}", {}),
    # the floor of the stack (benchmarks/baseline_views.py), profiled alike for a side-by-side
    "floor-insert": ("/bench/insert", '{{"title": "task {n}"}}', {}),
    "floor-claim": ("/bench/claim", "{{}}", {}),
}

LAYERS = (  # the first fragment of a function's file that matches names its layer
    ("postgres", ("{method 'execute' of 'psycopg", "psycopg_c", "pq_", "{method 'poll'", "waiting.py")),
    ("psycopg", ("/psycopg/",)),
    ("rest_framework", ("/rest_framework/", "/drf_spectacular/", "/django_filters/")),
    ("django", ("/django/",)),
    ("python", ("/lib/python3", "{built-in", "{method")),
)


def layer(filename: str, name: str) -> str:
    text = f"{filename}:{name}"
    for label, fragments in LAYERS:
        if any(fragment in text for fragment in fragments):
            return label
    return "spaces"


def print_statements(call, requests: int) -> None:
    """Each statement's time as the client sees it (round trip included), per request."""
    from django.db import connection

    spent: dict[str, list[float]] = defaultdict(list)

    def timed(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            spent[" ".join(sql.split())[:70]].append(time.perf_counter() - started)

    # A COMMIT is a round trip too (and the one that waits for the WAL to reach the disk); the
    # BEGIN psycopg sends before a transaction's first statement counts in that statement.
    commit = connection._commit

    def timed_commit():
        started = time.perf_counter()
        try:
            return commit()
        finally:
            spent["COMMIT"].append(time.perf_counter() - started)

    connection._commit = timed_commit
    try:
        with connection.execute_wrapper(timed):
            for n in range(requests):
                call(n)
    finally:
        del connection._commit
    print("  statements (µs per request: the client's wait, round trip included)")
    for sql, times in sorted(spent.items(), key=lambda item: -sum(item[1])):
        print(f"  {sum(times) / requests * 1e6:7.0f}  {len(times) / requests:4.1f}x  {sql}")
    total = sum(sum(times) for times in spent.values())
    print(f"  {total / requests * 1e6:7.0f}        in all")
    # A prepared statement PostgreSQL keeps planning anew (custom plans) costs its planning on
    # every run; one with a generic plan is planned once per connection.
    with connection.cursor() as cursor:
        cursor.execute("SELECT generic_plans, custom_plans, statement FROM pg_prepared_statements "
                       "ORDER BY generic_plans + custom_plans DESC")
        rows = cursor.fetchall()
    print("  prepared statements on this connection: generic plans, custom plans")
    for generic, custom, sql in rows[:8]:
        print(f"  {generic:7d} {custom:7d}  {' '.join(sql.split())[:70]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--route", choices=sorted(ROUTES), default="create")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--statements", action="store_true",
                        help="also time each statement the route sends (without the profiler)")
    parser.add_argument("--open", type=int, default=0,
                        help="open tasks in the space first, titled as benchmarks/floor_bench.py's seed")
    parser.add_argument("--save", type=Path, help="also write the profile there (pstats), to compare two checkouts")
    args = parser.parse_args()

    url = bench_database_url()
    recreate_database(url)
    os.environ.update(DATABASE_URL=url, DJANGO_SETTINGS_MODULE="settings.benchmark", DJANGO_DEBUG="0",
                      DJANGO_SECRET_KEY=secrets.token_urlsafe(50), DJANGO_SECURE_SSL_REDIRECT="0",
                      DJANGO_CONN_MAX_AGE="600")
    import django

    django.setup()
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.management import call_command

    from benchmarks.compare_checkouts import prepare

    call_command("migrate", verbosity=0)
    from benchmarks.baseline_views import create_tables

    create_tables()
    keys = prepare()
    if args.open:
        from benchmarks.floor_bench import seed
        from spaces.models import Member, Space

        space = Space.objects.get(slug="bench")
        seed(space.pk, Member.objects.filter(space=space).first().pk, args.open)
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    handler = WSGIHandler()

    def call(n: int, route: str = args.route) -> int:
        path, body, headers = ROUTES[route]
        data = body.format(n=n, a=n % 8, k=n % 20_000 + 1).encode()
        environ = {
            "REQUEST_METHOD": "POST", "PATH_INFO": path, "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80",
            "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(data), "CONTENT_LENGTH": str(len(data)),
            "CONTENT_TYPE": "application/json", "HTTP_AUTHORIZATION": f"Bearer {keys[n % len(keys)]}",
            "HTTP_HOST": "127.0.0.1", **{k: v.format(n=n) for k, v in headers.items()},
        }
        status = []
        for chunk in handler(environ, lambda s, h, *a: status.append(s)):
            pass
        return int(status[0].split()[0])

    if args.route in ("409", "replay"):
        call(0)
    if args.route in ("next", "floor-claim"):
        for n in range(2 * args.requests + 60):  # one ready task for each next
            call(10_000_000 + n, "create")
    for n in range(50):  # warm up: imports, prepared statements, caches
        call(1_000_000 + n)
    started = time.perf_counter()
    for n in range(args.requests):  # the same route's requests without the profiler, for their real time
        call(2_000_000 + n)
    plain = (time.perf_counter() - started) / args.requests
    if args.statements:
        print_statements(lambda n: call(3_000_000 + n), args.requests)
    statuses: dict[int, int] = defaultdict(int)
    profile = cProfile.Profile()
    profile.enable()
    for n in range(args.requests):
        statuses[call(n)] += 1
    profile.disable()
    if args.save:
        profile.dump_stats(args.save)

    stats = pstats.Stats(profile)
    total = sum(row[2] for row in stats.stats.values())
    by_layer: dict[str, float] = defaultdict(float)
    for (filename, _, name), row in stats.stats.items():
        by_layer[layer(filename, name)] += row[2]
    print(f"== {args.route}: {args.requests} requests {dict(statuses)}, "
          f"{total / args.requests * 1e6:.0f} µs each under the profiler, {plain * 1e6:.0f} µs without")
    for label, seconds in sorted(by_layer.items(), key=lambda item: -item[1]):
        print(f"  {label:<15} {seconds / total:6.1%}  {seconds / args.requests * 1e6:6.0f} µs/request")
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats(os.environ.get("SORT", "tottime")).print_stats(args.top)
    print(out.getvalue().split("\n\n", 1)[-1] if "--raw" not in sys.argv else out.getvalue())
    print(json.dumps({k: round(v / args.requests * 1e6) for k, v in by_layer.items()}))


if __name__ == "__main__":
    main()
