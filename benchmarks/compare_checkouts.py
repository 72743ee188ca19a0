"""Compare this checkout with another one (e.g. the commit before a change), side by side.

    git worktree add /tmp/before HEAD~1
    (cd /tmp/before && . bin/setup-venv)   # its own .venv, when its dependencies differ
    .venv/bin/python benchmarks/compare_checkouts.py /tmp/before [/tmp/another …] [--clients 8] [--repeats 5] [--seconds 2]

Each checkout is served by its own gunicorn (2 sync workers) on a fresh database of its
own on one server (BENCH_DATABASE_URL's, by default the embedded server in
.postgres/bench), migrated and filled by that checkout's own code, so checkouts whose
migrations differ compare too. Every repeat runs each scenario on both, in alternating
order, so the machine's drift falls on both alike. Prints each repeat and the median
ratio of this checkout's rate to each other's, and where a request's CPU went on each side
(the checkout's gunicorn processes, and the database server's while it ran); asserts
nothing.
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (  # noqa: E402
    ROOT,
    bench_database_url,
    gunicorn,
    recreate_database,
    refresh_statistics,
    with_database,
)
from benchmarks.load import Scenario, Step, ensure_wrk, run_load  # noqa: E402

def prepare() -> list[str]:
    from spaces import services
    from spaces.catalog import CatalogRow

    space = services.create_space(slug="bench", name="Bench")
    services.import_catalog(space=space, rows=[
        CatalogRow("T1", "Benchmark harness for code-review agents", ["review agent benchmark"]),
    ])
    return [services.issue_key(member=services.add_member(space=space, role="writer", name=f"agent-{i}"))[1]
            for i in range(32)]


def interpreter(root: Path) -> str:
    """The checkout's own environment (its ``.venv``: checkouts' dependencies differ), else ours."""
    own = root / ".venv" / "bin" / "python"
    return str(own) if own.exists() else sys.executable


def prepare_checkout(root: Path, url: str) -> list[str]:
    """Migrate ``url``'s database and run ``prepare`` with the checkout at ``root``'s own code."""
    recreate_database(url)
    code = textwrap.dedent(f"""
        import json, os, sys
        sys.path.insert(0, {str(root)!r})
        os.environ["DJANGO_SETTINGS_MODULE"] = "settings.base"
        import django
        django.setup()
        from django.core.management import call_command
        call_command("migrate", verbosity=0)
    """) + textwrap.dedent(inspect.getsource(prepare)) + "\nprint(json.dumps(prepare()))\n"
    done = subprocess.run([interpreter(root), "-c", code], cwd=root,
                          env={**os.environ, "DATABASE_URL": url, "DJANGO_DEBUG": "1"},
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def scenarios(keys: list[str], reports_cost: bool = False) -> dict[str, Scenario]:
    """The scenarios; ``reports_cost``: this checkout's side of ``loop+cost`` reports spend
    (SPEC §19) on its heartbeat and done, the other side's sends the same requests without it."""
    tasks = "/v1/spaces/bench/tasks"
    return {
        "create": Scenario(tasks, keys, body='{"title": "task {unique}"}'),
        "create+key": Scenario(tasks, keys, body='{"title": "task {unique}"}', headers={"Idempotency-Key": "{unique}"}),
        "replay": Scenario(tasks, keys, body='{"title": "replayed {agent}"}', headers={"Idempotency-Key": "r{agent}"}),
        "409": Scenario(tasks, keys, body='{"title": "review agent benchmark"}'),
        "409+key": Scenario(tasks, keys, body='{"title": "review agent benchmark"}',
                            headers={"Idempotency-Key": "{unique}"}),
        "next": Scenario("/v1/spaces/bench/next", keys),
        "loop": Scenario(tasks, keys, steps=team_loop()),
        "loop+cost": Scenario(tasks, keys, steps=team_loop(heartbeat=True, cost=reports_cost)),
    }


COST = ', "cost": {"usd": 0.012345, "input_tokens": 1200, "output_tokens": 300, "seconds": 4.5, "model": "m"}'


def team_loop(heartbeat: bool = False, cost: bool = False) -> list[Step]:
    """An agent team's loop, each agent in turn: create a task, take the most urgent (and, with
    ``heartbeat``, renew its claim), write its result, deliver it, take an attempt to check
    (someone else's) and confirm it. ``cost``: the heartbeat and the done report spend."""
    task = "/v1/spaces/bench/tasks"
    number = r'"number":%s*(%d+)'  # the first number in the answer: the task's
    report = COST if cost else ""
    beat = [Step(task + "/{task}/heartbeat", "{" + report[2:] + "}")] if heartbeat else []
    return [
        Step(task, '{"title": "loop {unique}"}'),
        Step("/v1/spaces/bench/next", captures={"task": number}),
        *beat,
        Step("/v1/spaces/bench/posts", '{"body": "result {unique}"}', captures={"post": r'"id":%s*(%d+)'}),
        Step(task + "/{task}/done", '{"post": {post}' + report + '}'),
        Step("/v1/spaces/bench/next", '{"kind": "check"}',
             captures={"checked": number, "attempt": r'"attempt":%s*{.-"number":%s*(%d+)'}),
        Step(task + "/{checked}/attempts/{attempt}/confirm"),
    ]


def cpu_seconds(processes: list) -> float:
    """User and system CPU of ``processes`` and their children so far (psutil)."""
    import psutil

    total = 0.0
    for process in processes:
        try:
            root = psutil.Process(process.pid)
            for each in [root, *root.children(recursive=True)]:
                times = each.cpu_times()
                total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def database_processes(url: str) -> list:
    """The database server's postmaster (its backends are its children)."""
    import psycopg
    import psutil

    from benchmarks.common import psycopg_dsn

    with psycopg.connect(psycopg_dsn(url)) as conn:
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        return [psutil.Process(pid).parent()]


def compare(other: Path, names: list[str], args) -> tuple[dict[str, list[float]], dict]:
    """Serve ``other`` beside this checkout and run every scenario on both in each repeat: the
    ratios of this checkout's rate to the other's, and the CPU a request took on each side."""
    url = bench_database_url()
    urls = {"other": with_database(url, "spaces_bench_other"), "this": with_database(url, "spaces_bench_this")}
    loads = {"other": scenarios(prepare_checkout(other, urls["other"])),
             "this": scenarios(prepare_checkout(ROOT, urls["this"]), reports_cost=True)}

    masters: dict[str, list] = {"other": [], "this": []}
    with gunicorn(urls["other"], root=other, python=interpreter(other), processes=masters["other"]) as before, \
            gunicorn(urls["this"], processes=masters["this"]) as this:
        servers = {before: "other", this: "this"}
        database = database_processes(urls["this"])  # a database that exists on that server
        cpu: dict[tuple[str, str], list[tuple[float, float]]] = {}  # (scenario, side) → (server, database) µs a request
        for server, side in servers.items():  # warm up: the occupied task exists, replays are stored
            run_load(server, loads[side]["409"], clients=1, seconds=0.5)
            run_load(server, loads[side]["replay"], clients=32, seconds=1)
            run_load(server, loads[side]["create"], clients=args.clients, seconds=1)
        ratios: dict[str, list[float]] = {name: [] for name in names}
        for repeat in range(args.repeats):
            for side_url in urls.values():
                refresh_statistics(side_url)
            for name in names:
                order = (before, this) if repeat % 2 == 0 else (this, before)
                results = {}
                for server in order:
                    side = servers[server]
                    spent = cpu_seconds(masters[side]), cpu_seconds(database)
                    results[server] = run_load(server, loads[side][name], clients=args.clients, seconds=args.seconds)
                    done = max(results[server].requests, 1)
                    cpu.setdefault((name, side), []).append(
                        ((cpu_seconds(masters[side]) - spent[0]) / done * 1e6,
                         (cpu_seconds(database) - spent[1]) / done * 1e6))
                ratio = results[this].rps / results[before].rps
                ratios[name].append(ratio)
                print(f"{other.name}  repeat {repeat + 1}  {name:<11} other {results[before].rps:7.0f} req/s   "
                      f"this {results[this].rps:7.0f} req/s   this/other {ratio:.2f}   "
                      f"statuses {results[before].statuses} / {results[this].statuses}", flush=True)
    return ratios, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("others", type=Path, nargs="+", metavar="other",
                        help="the other checkouts (directories with manage.py), compared with this one in turn")
    parser.add_argument("--scenarios", default="create,create+key,replay,409,next,loop",
                        help="comma-separated, of: create, create+key, replay, 409, 409+key, next, loop "
                             "(the agent team's loop, create to confirm)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    others = [other.resolve() for other in args.others]
    for other in others:
        if not (other / "manage.py").exists():
            parser.error(f"{other} is not a checkout of this project (no manage.py)")
    names = args.scenarios.split(",")
    unknown = set(names) - set(scenarios([]))
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(sorted(unknown))}")

    ensure_wrk()
    outcomes = {other: compare(other, names, args) for other in others}
    for other, (ratios, cpu) in outcomes.items():
        print(f"== this checkout / {other}, {args.clients} clients, median of {args.repeats} x {args.seconds:g} s")
        for name in names:
            print(f"  {name:<11} {statistics.median(ratios[name]):.2f}x   (repeats: "
                  f"{', '.join(f'{r:.2f}' for r in ratios[name])})")
        print("   CPU a request, median (µs): the checkout's gunicorn + the database server")
        for name in names:
            line = []
            for side in ("other", "this"):
                server = statistics.median(c[0] for c in cpu[(name, side)])
                db = statistics.median(c[1] for c in cpu[(name, side)])
                line.append(f"{side} {server:5.0f} + {db:5.0f} = {server + db:5.0f}")
            print(f"  {name:<11} " + "   ".join(line))


if __name__ == "__main__":
    main()
