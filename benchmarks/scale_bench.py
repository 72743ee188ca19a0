"""SPEC §11 with the work graph of §13: is a space of 1,000,000 tasks as fast as one of 10,000?

Two spaces in one database, each with the same 5,000 open tasks (half of them blocked by
another open task, priorities 0-4 and labels spread) and the rest finished: 5,000 finished
in `small`, 995,000 in `large`, in both about 500 of them in the last 7 days; every task has its `created` event, and 100 tasks of each
space carry the word "zebrafish". Each table is seeded by one INSERT … SELECT over
generate_series, run inside the server so no row crosses the wire, then VACUUM ANALYZE as
autovacuum would.

For each route it prints requests per second at both sizes (wrk, closed loop, one API key
a client, gunicorn sync workers), alternating the sizes for each repeat, and the ratio
large/small (SPEC §11 asks ≥ 0.8): `next` plain and with a label, create, one task, a
filtered list page (?ready=true&label=…), a full-text search, and one task's history.
Before those, the admin's task list (plain, searched, filtered) and one client's median for
the summary (SPEC §14) and the board's data at both sizes. After them, the plan of `next`'s
pick at 1,000,000 tasks (EXPLAIN ANALYZE, BUFFERS), one agent's 200 sequential calls
with and without keep-alive, and an export of each space: the worker's time and peak
memory, and its share read back whole.

    .venv/bin/python benchmarks/scale_bench.py [--seconds 2] [--repeats 3] [--clients 4]

Uses a fresh database (BENCH_DATABASE_URL, by default the embedded server in
.postgres/bench). Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import json
from urllib.parse import quote_plus
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import fresh_database, gunicorn  # noqa: E402
from benchmarks.load import Scenario, ensure_wrk, fmt, median_of, run_load  # noqa: E402

OPEN = 5_000
RECENT_DONE = 500  # done in the last 7 days, in either space: the same recent pace of work
SIZES = {"small": 10_000, "large": 1_000_000}
LABELS = ["api", "db", "ui", "ops", "docs"]
WORKERS = int(os.environ.get("BENCH_WORKERS", "2"))


def seed(space_id: int, creator_id: int, total: int) -> None:
    """``total`` tasks: every (total/OPEN)-th open, the rest done; open task k (1-based) is
    blocked by open task k+1 when k is even; 100 titles say zebrafish. Open tasks were created
    a minute apart; about RECENT_DONE done ones were created and finished in the last 7 days
    (the newest numbers), the others more than 30 days ago."""
    from django.db import connection

    step = total // OPEN
    every = total // 100
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO tasks_task (space_id, number, title, body, delivery_mode, work_item_id, conflict_kind,
                                    conflict_target, status, cycle, creator_id, received_seq, payload_sha256,
                                    superseded_by_id, closed_by_id, closed_at, close_reason, created_at,
                                    updated_at, priority, labels, title_terms)
            SELECT %(space)s, g, 'bench task ' || g || CASE WHEN g %% %(every)s = 1 THEN ' zebrafish' ELSE '' END,
                   '', 'result', NULL, 'create_task', 'task:bench:' || g,
                   CASE WHEN g %% %(step)s = 0 THEN 'open' ELSE 'done' END, 1, %(creator)s, 0, '', NULL, NULL,
                   NULL, '', at.t, at.t, (g / %(step)s) %% 5,
                   ARRAY[(%(labels)s::varchar[])[(g / %(step)s) %% 5 + 1]]
                   || CASE WHEN (g / %(step)s) %% 3 <> 0 THEN ARRAY['core']::varchar[] ELSE '{}' END,
                   '{}'
            FROM generate_series(1, %(total)s) AS g,
            LATERAL (SELECT CASE WHEN g %% %(step)s = 0 OR g > %(total)s - %(recent_span)s
                                 THEN now() - interval '1 minute' * (%(total)s - g)
                                 ELSE now() - interval '30 days' - interval '1 minute' * (%(total)s - g) END) AS at(t)
            """,
            {"space": space_id, "total": total, "step": step, "every": every, "creator": creator_id,
             "labels": LABELS, "recent_span": -(-RECENT_DONE * step // (step - 1))},
        )
        cursor.execute("UPDATE spaces_space SET task_counter = %s WHERE id = %s", [total, space_id])
        cursor.execute(
            """
            INSERT INTO tasks_dependency (space_id, task_id, blocker_id, created_at)
            SELECT t.space_id, t.id, b.id, now() FROM tasks_task t
            JOIN tasks_task b ON b.space_id = t.space_id AND b.number = t.number + %(step)s AND b.status = 'open'
            WHERE t.space_id = %(space)s AND t.status = 'open' AND (t.number / %(step)s) %% 2 = 0
            """,
            {"space": space_id, "step": step},
        )
        cursor.execute(
            """
            INSERT INTO tasks_taskevent (space_id, task_id, kind, actor_id, details, created_at)
            SELECT space_id, id, 'created', creator_id, '{}', now() FROM tasks_task WHERE space_id = %s
            """,
            [space_id],
        )


VERBS = ["add", "fix", "remove", "document", "speed up", "test", "refactor", "migrate", "upgrade", "cache",
         "validate", "log", "monitor", "translate", "rename", "split", "merge", "index", "profile", "retry"]
PLACES = ["in the admin", "for the API", "on mobile", "in the CLI", "for enterprise plans", "in production",
          "on the board", "for new teams", "in the docs", "behind the gateway"]
SYLLABLES = ["ka", "lo", "mer", "tin", "vo", "sar", "pel", "du", "ri", "zan", "qui", "bor", "fe", "nok", "ta"]


def live_titles(count: int) -> list[str]:
    """``count`` titles of the shapes agents write ("Fix the kalomer parser on mobile"): a common
    verb and place, and one or two of 3,000 made-up nouns drawn as words are, a few often and
    most rarely (Zipf), so SPEC §16's index holds what a real space's does. The same for every
    space."""
    import itertools
    import random

    rng = random.Random(16)
    nouns = ["".join(parts) for parts in itertools.product(SYLLABLES, repeat=3)][:3000]
    rng.shuffle(nouns)
    ranks = [1 / (rank + 1) for rank in range(len(nouns))]
    titles = []
    for _ in range(count):
        things = " ".join(rng.choices(nouns, weights=ranks, k=rng.choice((1, 2))))
        titles.append(f"{rng.choice(VERBS).capitalize()} the {things} {rng.choice(PLACES)}")
    return titles


def title_open_tasks(space_id: int) -> None:
    """The open tasks get live_titles(OPEN), their terms and their rows in the similar-tasks index."""
    from django.db import connection

    from tasks.similarity import terms

    titles = live_titles(OPEN)
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM tasks_task WHERE space_id = %s AND status = 'open' ORDER BY number", [space_id])
        ids = [row[0] for row in cursor.fetchall()]
        cursor.execute(
            "UPDATE tasks_task t SET title = u.title, title_terms = ARRAY(SELECT jsonb_array_elements_text(u.terms)) "
            "FROM unnest(%s::bigint[], %s::text[], %s::jsonb[]) AS u(id, title, terms) WHERE t.id = u.id",
            [ids, titles, [json.dumps(terms(t)) for t in titles]])
        cursor.execute("INSERT INTO tasks_titleterm (space_id, term, task_id) "
                       "SELECT space_id, unnest(title_terms || ARRAY['']), id FROM tasks_task "
                       "WHERE space_id = %s AND status = 'open'", [space_id])


def reopen(space_id: int) -> None:
    """Give back what `next` claimed in the last round, so every round starts with the same ready work."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM tasks_taskevent WHERE space_id = %s AND kind = 'claimed'", [space_id])
        cursor.execute("DELETE FROM tasks_claim WHERE space_id = %s", [space_id])
        cursor.execute("UPDATE tasks_task SET status = 'open' WHERE space_id = %s AND status = 'claimed'",
                       [space_id])


def vacuum_analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for table in ("tasks_task", "tasks_dependency", "tasks_taskevent", "tasks_claim", "tasks_titleterm"):
            cursor.execute(f"VACUUM ANALYZE {table}")


def next_plan(space_id: int) -> str:
    """The plan of `next`'s pick, run for real inside a transaction that is rolled back."""
    from django.db import connection, transaction
    from django.utils import timezone

    from tasks.sql import claim_next

    pick = claim_next()[0].sql.split("picked AS (", 1)[1].split("), claimed AS", 1)[0]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + pick,
                       {"space": space_id, "labels": [], "now": timezone.now()})
        plan = "\n".join(row[0] for row in cursor.fetchall())
        transaction.set_rollback(True)
    return plan


def median_ms(base: str, path: str, key: str, *, requests: int = 60) -> float:
    """One client's median latency, request after request."""
    import http.client
    import statistics
    from urllib.parse import urlsplit

    host = urlsplit(base)
    times = []
    for _ in range(requests):
        conn = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
        started = time.perf_counter()
        conn.request("GET", path, headers={"Authorization": f"Bearer {key}"})
        response = conn.getresponse()
        response.read()
        times.append((time.perf_counter() - started) * 1000)
        assert response.status == 200, response.status
        conn.close()
    return statistics.median(times)


def board_data_ms(space, *, rounds: int = 30) -> float:
    """The board's full data (every column, every card, the summary, the throughput chart),
    in this process."""
    import statistics

    from django.http import QueryDict

    from fronts.board.data import board_data

    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        board_data(space, since=None, numbers=[], params=QueryDict(), member=None)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def duplicates_ms(space, *, rounds: int = 10) -> float:
    """SPEC §16's likely duplicate pairs among the space's live tasks, in this process."""
    import statistics

    from tasks.similarity import likely_duplicates

    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        likely_duplicates(space)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def admin_ms(space, query: str, *, rounds: int = 10) -> float:
    """The admin's task list of one space (as a steward opens it), rendered in this process."""
    import statistics

    from django.contrib.auth.models import User
    from django.test import Client

    user = User.objects.filter(username="bench-admin").first() or User.objects.create_superuser(
        "bench-admin", "admin@example.com", "unused")
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    path = f"/admin/tasks/task/?space__id__exact={space.pk}{'&' + query if query else ''}"
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        response = client.get(path)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.status_code
    return statistics.median(times)


def export_figures(base: str, url: str, space, steward_key: str) -> str:
    """Export the space with the worker (its own process, as in production), then read the
    share back whole through the server: wall times, the worker's peak memory, tasks shared."""
    import json
    import secrets
    import subprocess
    import urllib.request

    from exports.services import request_export

    export = request_export(space=space, actor=space.members.get(role="steward"), api_key=None)
    env = dict(os.environ, DATABASE_URL=url, DJANGO_SETTINGS_MODULE="settings.benchmark", DJANGO_DEBUG="0",
               DJANGO_SECRET_KEY=secrets.token_urlsafe(50), DJANGO_SECURE_SSL_REDIRECT="0")
    started = time.monotonic()
    worker = subprocess.Popen([sys.executable, "manage.py", "run_worker", "--once"], cwd=Path(__file__).parent.parent,
                              env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(worker.pid, 0)
    worker.returncode = os.waitstatus_to_exitcode(status)
    wrote = time.monotonic() - started
    request = urllib.request.Request(f"{base}/v1/spaces/{space.slug}/exports/{export.pk}/share", data=b"{}",
                                     headers={"Authorization": f"Bearer {steward_key}",
                                              "Content-Type": "application/json"})
    token = json.loads(urllib.request.urlopen(request).read())["token"]
    started = time.monotonic()
    document = json.loads(urllib.request.urlopen(f"{base}/v1/shares/{token}").read())
    read = time.monotonic() - started
    return (f"worker exit {worker.returncode}, {wrote:5.1f} s, peak memory {usage.ru_maxrss / 1024:5.0f} MB; "
            f"share read whole in {read:5.1f} s: {len(document['tasks']):,} tasks, "
            f"{len(document['history']):,} events")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--skip-export", action="store_true", help="leave out the exports")
    parser.add_argument("--routes", help="only these routes, comma-separated (e.g. 'create,similar ?title=')")
    parser.add_argument("--skip-extras", action="store_true",
                        help="only the routes: leave out the admin, summary, plan, keep-alive and export figures")
    args = parser.parse_args()
    ensure_wrk()
    url = fresh_database()
    from spaces import services

    spaces, keys, stewards = {}, {}, {}
    for name, total in SIZES.items():
        space = services.create_space(slug=name, name=name)
        stewards[name] = services.issue_key(member=services.add_member(space=space, role="steward",
                                                                        name="steward"))[1]
        members = [services.add_member(space=space, role="writer", name=f"agent-{i}") for i in range(args.clients)]
        keys[name] = [services.issue_key(member=m)[1] for m in members]
        started = time.monotonic()
        seed(space.pk, members[0].pk, total)
        title_open_tasks(space.pk)
        print(f"== seeded {name}: {total:,} tasks ({OPEN:,} open, half of those blocked) "
              f"in {time.monotonic() - started:.1f} s", flush=True)
        spaces[name] = space
    started = time.monotonic()
    vacuum_analyze()
    print(f"== VACUUM ANALYZE in {time.monotonic() - started:.1f} s", flush=True)

    # One task to read: an open one in the middle; its history has its created event.
    middle = {name: (OPEN // 2 + 1) * (total // OPEN) for name, total in SIZES.items()}
    routes = {
        "next": lambda n: Scenario(f"/v1/spaces/{n}/next", keys[n]),
        "next --label core": lambda n: Scenario(f"/v1/spaces/{n}/next", keys[n], body='{"labels": ["core"]}'),
        "create": lambda n: Scenario(f"/v1/spaces/{n}/tasks", keys[n],
                                     body='{"title": "new work {unique}", "priority": 1, "labels": ["api"]}'),
        "one task": lambda n: Scenario(f"/v1/spaces/{n}/tasks/{middle[n]}", keys[n], method="GET", body=""),
        "list ?ready&label": lambda n: Scenario(f"/v1/spaces/{n}/tasks?ready=true&label=db&limit=20", keys[n],
                                                method="GET", body=""),
        "search q=zebrafish": lambda n: Scenario(f"/v1/spaces/{n}/tasks?q=zebrafish&limit=20", keys[n],
                                                 method="GET", body=""),
        "history of one task": lambda n: Scenario(f"/v1/spaces/{n}/tasks/{middle[n]}/history", keys[n],
                                                  method="GET", body=""),
        # SPEC §16: the live tasks like one of the space's own titles, and a create that binds no slot
        # with titles of the same shapes
        "similar ?title=": lambda n: Scenario(f"/v1/spaces/{n}/tasks/similar?title={quote_plus(live_titles(OPEN)[7])}",
                                              keys[n], method="GET", body=""),
        "create words": lambda n: Scenario(f"/v1/spaces/{n}/tasks", keys[n],
                                            body='{"title": "Fix the ' + live_titles(OPEN)[9].split(" the ")[1]
                                                 + ' {unique}"}'),
    }
    if args.routes:
        routes = {name: route for name, route in routes.items() if name in args.routes.split(",")}
    print("\n== the admin's task list of one space, in this process, median of 10 (goal < 200 ms)")
    for name, total in ({} if args.skip_extras else SIZES).items():
        figures = {label: admin_ms(spaces[name], query) for label, query in
                   (("list", ""), ("search zebrafish", "q=zebrafish"), ("ready, label db", "readiness=ready&label=db"))}
        print(f"   {total:>9,} tasks: " + "   ".join(f"{label} {ms:6.1f} ms" for label, ms in figures.items()),
              flush=True)
    results: dict[str, dict[str, list]] = {route: {n: [] for n in SIZES} for route in routes}
    with gunicorn(url, workers=WORKERS) as base:
        print("\n== one client, median of 60 requests (SPEC §14: the summary within 50 ms at 1,000,000)")
        for name, total in ({} if args.skip_extras else SIZES).items():
            summary = median_ms(base, f"/v1/spaces/{name}/summary", keys[name][0])
            print(f"   GET …/summary, {total:>9,} tasks: {summary:6.1f} ms   "
                  f"board data (in process): {board_data_ms(spaces[name]):6.1f} ms   "
                  f"likely duplicates (in process): {duplicates_ms(spaces[name]):6.1f} ms", flush=True)
        for name in SIZES:
            run_load(base, routes["one task"](name), clients=2, seconds=1)  # warm the workers
        for repeat in range(args.repeats):
            for route, scenario in routes.items():
                for name in (SIZES if repeat % 2 == 0 else reversed(list(SIZES))):
                    reopen(spaces[name].pk)
                    results[route][name].append(run_load(base, scenario(name), clients=args.clients,
                                                         seconds=args.seconds))
            print(f"   repeat {repeat + 1}/{args.repeats} done", flush=True)
    print(f"\n== requests/s, {args.clients} clients, gunicorn {WORKERS} sync workers, "
          f"median of {args.repeats} x {args.seconds:g} s")
    print(f"{'route':22} {'10,000 tasks':>44} {'1,000,000 tasks':>44}  ratio")
    for route, by_size in results.items():
        small, large = median_of(by_size["small"]), median_of(by_size["large"])
        print(f"{route:22} {fmt(small):>44} {fmt(large):>44}  {large.rps / small.rps:5.2f}")
    if args.skip_extras:
        return
    reopen(spaces["large"].pk)
    print("\n== plan of next's pick in the 1,000,000-task space\n" + next_plan(spaces["large"].pk), flush=True)
    print("\n== one agent's 200 sequential calls (GET one task): a connection each against sync workers, "
          "one kept connection against gthread workers (docs/benchmarks.md, keep-alive)", flush=True)
    from benchmarks.keepalive_bench import sequential

    for label, options, reuse in (("sync, a connection each", {}, False),
                                  ("gthread x4, one connection", {"worker_class": "gthread", "threads": 4}, True)):
        with gunicorn(url, workers=WORKERS, **options) as base:
            port = int(base.rsplit(":", 1)[1])
            for name, total in SIZES.items():
                path_key = keys[name][0]
                seconds, _ = sequential(port, path_key, 200, reuse=reuse, path=f"/v1/spaces/{name}/tasks/{middle[name]}")
                print(f"   {label:28} {total:>9,} tasks: {seconds * 1000:6.0f} ms ({seconds * 1000 / 200:.2f} ms a call)",
                      flush=True)
    if not args.skip_export:
        print("\n== an export of each space (run_worker --once), then its share read whole (goal: < 300 MB)")
        with gunicorn(url, workers=WORKERS) as base:
            for name, total in SIZES.items():
                print(f"   {total:>9,} tasks: {export_figures(base, url, spaces[name], stewards[name])}", flush=True)


if __name__ == "__main__":
    main()
