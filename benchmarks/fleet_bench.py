"""SPEC §22's fleet controls in `next`: claims per second with caps and priority aging on, side by
side with them off, and with aging on at 1,000,000 tasks against 10,000.

One space of 20,000 open tasks (priorities 0-4, a seventh labelled `gpu`, opened over the last ten
hours) and 10,000 finished ones; 8 agents each loop over gunicorn (wrk, closed loop): POST …/next,
then give the task back, so each holds at most one claim as a working agent does. The settings
alternate in every repeat: off (no caps, no aging) and on (`max_claims_per_member` 2, `label_caps`
{"gpu": 2}, `priority_aging_minutes` 30: every claim passes the caps' trigger, `gpu` is often
full, and every pick reads the aged queue). Figures are requests per second (two a loop).
Then 990,000 more finished tasks and the loop with aging on again: the ratio to the 10,000-task
figure.

    .venv/bin/python benchmarks/fleet_bench.py [--seconds 3] [--repeats 5] [--agents 8]

Goals (issue 53): on / off >= 0.9; aging at 1,000,000 / 10,000 >= 0.8; off against today's main
is benchmarks/compare_checkouts.py's `next` (>= 0.97). Uses a fresh database (BENCH_DATABASE_URL,
by default the embedded server in .postgres/bench). Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.claims_bench import add_tasks, reopen_all  # noqa: E402
from benchmarks.common import autovacuum_note, fresh_database, gunicorn, refresh_statistics  # noqa: E402
from benchmarks.load import Scenario, Step, ensure_wrk, fmt, median_of, run_load  # noqa: E402

WORKERS = int(os.environ.get("BENCH_WORKERS", "2"))
OPEN_TASKS = 20_000
ON = {"max_claims_per_member": 2, "label_caps": {"gpu": 2}, "priority_aging_minutes": 30}
OFF = {"max_claims_per_member": None, "label_caps": {}, "priority_aging_minutes": None}


def spread(space_id: int) -> None:
    """Priorities 0-4, a fifth of the open tasks on `gpu`, opened over the last ten hours (the
    newest numbers most recently, as a queue fills)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("""
            UPDATE tasks_task SET priority = (number * 7919) %% 5,
                   labels = CASE WHEN number %% 7 = 0 THEN ARRAY['gpu']::varchar[] ELSE '{}' END,
                   ready_since = now() - make_interval(secs => 36000.0 * (1 - number::float8 / %(last)s))
            WHERE space_id = %(space)s AND status = 'open'""", {"space": space_id, "last": 40_000})
        cursor.execute("ANALYZE tasks_task")


def configure(space, settings: dict) -> None:
    from spaces.models import Space

    Space.objects.filter(pk=space.pk).update(**settings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--skip-million", action="store_true")
    args = parser.parse_args()
    ensure_wrk()
    url = fresh_database()
    from spaces import services

    space = services.create_space(slug="fleet", name="Fleet")
    keys = []
    for i in range(args.agents):
        member = services.add_member(space=space, role="writer", name=f"agent-{i}")
        keys.append(services.issue_key(member=member)[1])
    creator = space.members.first()
    add_tasks(space.pk, creator.pk, 10_000, "done")
    add_tasks(space.pk, creator.pk, OPEN_TASKS, "open")
    spread(space.pk)
    number = r'"number":%s*(%d+)'  # the first number in next's answer: the task's
    request = Scenario("/v1/spaces/fleet/next", keys, steps=[
        Step("/v1/spaces/fleet/next", captures={"task": number}), Step("/v1/spaces/fleet/tasks/{task}/give-back")])

    def measure(settings: dict):
        time.sleep(0.5)  # the last run's requests still in a worker end before the rows are reset
        configure(space, settings)
        reopen_all(space.pk)
        spread(space.pk)  # reopening set ready_since to now (the database's rule): spread them again
        return run_load(base, request, clients=args.agents, seconds=args.seconds)

    with gunicorn(url, workers=WORKERS) as base:
        for settings in (OFF, ON):
            measure(settings)  # warm both statements in every worker
        print(f"== next and give-back, requests/s, {args.agents} agents, gunicorn {WORKERS} sync workers, median of {args.repeats} x "
              f"{args.seconds:g} s ({OPEN_TASKS:,} open tasks), off and on interleaved; {autovacuum_note(url)}")
        offs, ons = [], []
        for _ in range(args.repeats):
            refresh_statistics(url)
            offs.append(measure(OFF))
            ons.append(measure(ON))
        off, on = median_of(offs), median_of(ons)
        print(f"  off (no caps, no aging)  {fmt(off)}")
        print(f"  on (caps and aging)      {fmt(on)}")
        print(f"  on / off = {on.rps / off.rps:.2f}x [>= 0.9]")
        if args.skip_million:
            return
        aged_small = median_of([measure({**OFF, "priority_aging_minutes": 30}) for _ in range(args.repeats)])
        add_tasks(space.pk, creator.pk, 990_000, "done")
        refresh_statistics(url)
        aged_large = median_of([measure({**OFF, "priority_aging_minutes": 30}) for _ in range(args.repeats)])
        print(f"== next with aging on: 30,000 tasks {fmt(aged_small)}")
        print(f"   1,020,000 tasks {fmt(aged_large)}")
        print(f"   1,000,000 / 10,000 = {aged_large.rps / aged_small.rps:.2f}x [>= 0.8]")


if __name__ == "__main__":
    main()
