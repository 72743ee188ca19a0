"""The hot routes against the floor of their own stack, in one run (issue 36's goals).

    .venv/bin/python benchmarks/floor_bench.py [--seconds 3] [--repeats 5] [--open 24000]

The floor is the least a Django + DRF + psycopg view does on the same machine, served by the
same gunicorn (2 sync workers) in the same run (``benchmarks/baseline_views.py``): look the
API key up by hash (DRF's authentication, the service's own), then one INSERT (the floor of a
create), or one ``FOR UPDATE SKIP LOCKED`` claim (the floor of ``next``). The routes run in a
space of ``--open`` open tasks whose titles share words (``task <run> <agent> <n>``), as an
agent team's do, and with titles of words nobody else uses. Every repeat measures every
scenario in turn, so the machine's drift falls on all alike. Uses a fresh PostgreSQL database
(BENCH_DATABASE_URL, by default the embedded server in .postgres/bench). Prints the ratios with
their goals; asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import random
import string
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import autovacuum_note, fresh_database, gunicorn, refresh_statistics  # noqa: E402
from benchmarks.load import Scenario, ensure_wrk, fmt, median_of, run_load  # noqa: E402

CLIENTS = 8


def seed(space_id: int, creator_id: int, total: int) -> None:
    """``total`` open tasks titled ``task <run> <agent> <n>`` with their similar-tasks index rows,
    written inside the server (no row crosses the wire)."""
    from django.db import connection

    from common.sql import insert_select
    from tasks.models import Task
    from tasks.similarity import terms

    titles = [f"task seed {n % 8} {n}" for n in range(1, total + 1)]
    values = {"space": "%(space)s", "number": "u.n", "title": "u.title", "body": "''", "delivery_mode": "'result'",
              "work_item_id": "NULL", "conflict_kind": "'create_task'", "conflict_target": "'task:bench:seed:' || u.n",
              "status": "'open'", "cycle": "1", "creator": "%(creator)s", "received_seq": "0", "payload_sha256": "''",
              "superseded_by": "NULL", "closed_by": "NULL", "closed_at": "NULL", "close_reason": "''",
              "created_at": "now()", "updated_at": "now()", "priority": "2", "labels": "'{}'", "budget_usd": "NULL",
              "approver": "NULL", "setbacks": "0", "ready_since": "now()",
              "title_terms": "ARRAY(SELECT jsonb_array_elements_text(u.terms))"}
    with connection.cursor() as cursor:
        cursor.execute(
            f"{insert_select(Task, values)} "
            "FROM unnest(%(numbers)s::int[], %(titles)s::text[], %(terms)s::jsonb[]) AS u(n, title, terms)",
            {"space": space_id, "creator": creator_id, "numbers": list(range(1, total + 1)), "titles": titles,
             "terms": [json.dumps(terms(title)) for title in titles]},
        )
        cursor.execute("INSERT INTO tasks_titleterm (space_id, term, task_id) "
                       "SELECT space_id, unnest(title_terms || ARRAY['']), id FROM tasks_task WHERE space_id = %s",
                       [space_id])
        cursor.execute("UPDATE spaces_space SET task_counter = %s WHERE id = %s", [total, space_id])


def prepare(total: int) -> list[str]:
    from benchmarks.baseline_views import create_tables
    from spaces import services
    from spaces.catalog import CatalogRow

    create_tables()
    space = services.create_space(slug="bench", name="Bench")
    services.import_catalog(space=space, rows=[
        CatalogRow("T1", "Benchmark harness for code-review agents", ["review agent benchmark"])])
    members = [services.add_member(space=space, role="writer", name=f"agent-{i}") for i in range(CLIENTS)]
    seed(space.pk, members[0].pk, total)
    return [services.issue_key(member=member)[1] for member in members]


def distinct_titles(rng: random.Random, count: int) -> list[str]:
    """Titles of three made-up words each, none shared with any other title of the run."""
    seen: set[str] = set()
    while len(seen) < count * 3:
        seen.add("".join(rng.choices(string.ascii_lowercase, k=9)))
    words = list(seen)
    return [" ".join(words[i:i + 3]) for i in range(0, len(words), 3)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one measurement")
    parser.add_argument("--repeats", type=int, default=5, help="repeats per figure (the median is kept)")
    parser.add_argument("--open", type=int, default=24_000, help="open tasks in the space before the run")
    args = parser.parse_args()
    ensure_wrk()
    url = fresh_database()
    keys = prepare(args.open)
    rng = random.Random(36)
    key = {"Idempotency-Key": "{unique}"}
    shared = '{"title": "task {unique} agent {agent}"}'  # the run's nonce, the agent and a counter: words shared
    scenarios = {
        "floor: key lookup + one INSERT": Scenario("/bench/insert", keys, body='{"title": "{unique}"}'),
        "floor: key lookup + one claim": Scenario("/bench/claim", keys),
        "create, titles sharing words": Scenario("/v1/spaces/bench/tasks", keys, body=shared),
        "create, titles of distinct words": Scenario("/v1/spaces/bench/tasks", keys, body='{"title": "{pick}"}'),
        "create with a new Idempotency-Key": Scenario("/v1/spaces/bench/tasks", keys, body=shared, headers=key),
        "409 (the slot is taken)": Scenario("/v1/spaces/bench/tasks", keys, body='{"title": "review agent benchmark"}'),
        "idempotent replay": Scenario("/v1/spaces/bench/tasks", keys, body='{"title": "replayed {agent}"}',
                                      headers={"Idempotency-Key": "r{agent}"}),
        "next": Scenario("/v1/spaces/bench/next", keys),
    }
    runs: dict[str, list] = {name: [] for name in scenarios}
    with gunicorn(url, workers=2) as base:
        run_load(base, scenarios["409 (the slot is taken)"], clients=1, seconds=1)  # the occupant exists
        run_load(base, scenarios["idempotent replay"], clients=CLIENTS, seconds=1)  # the replays are stored
        print(f"== {CLIENTS} clients, gunicorn 2 sync workers, median of {args.repeats} x {args.seconds:g} s, "
              f"{args.open:,} open tasks ({autovacuum_note(url)})", flush=True)
        for repeat in range(args.repeats):
            refresh_statistics(url)
            # Fresh titles every repeat: a title used before would be a 409.
            scenarios["create, titles of distinct words"] = Scenario(
                "/v1/spaces/bench/tasks", keys, body='{"title": "{pick}"}', picks=distinct_titles(rng, 60_000))
            for name, scenario in scenarios.items():
                runs[name].append(run_load(base, scenario, clients=CLIENTS, seconds=args.seconds))
            print(f"  repeat {repeat + 1}: " + ", ".join(f"{name.split(' (')[0]} {runs[name][-1].rps:.0f}"
                                                         for name in scenarios), flush=True)
    results = {name: median_of(found) for name, found in runs.items()}
    for name, result in results.items():
        print(f"  {name:<38} {fmt(result)}")
    insert, claim = results["floor: key lookup + one INSERT"].rps, results["floor: key lookup + one claim"].rps
    print("== ratios to the floor [goal]")
    for name, floor, goal in (("create, titles sharing words", insert, "≥ 0.5"),
                              ("create, titles of distinct words", insert, "≥ 0.5"),
                              ("create with a new Idempotency-Key", insert, "≥ 0.4"),
                              ("409 (the slot is taken)", insert, "≥ 1.2"),
                              ("idempotent replay", insert, "≥ 1.5"),
                              ("next", claim, "≥ 0.6")):
        print(f"  {name:<38} {results[name].rps / floor:5.2f}x  [{goal}]")


if __name__ == "__main__":
    main()
