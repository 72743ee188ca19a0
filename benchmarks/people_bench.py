"""SPEC §21's waits, on the shipped serving configuration (gunicorn.conf.py):

1. what waiting costs: the server processes' CPU and the statements the database runs a second
   while ``--askers`` agents wait for answers (``ask`` with ``wait``) and nothing happens, and
   then while the same number of agents wait for work (``next`` with ``wait``);
2. how fast an answer reaches its asker: questions answered one at a time while the askers
   wait; from the answer's send (an upper bound on "from its commit") and from its answer's
   arrival (a lower bound) to the asker's answer, p50 and p99; each question answered once.

    .venv/bin/python benchmarks/people_bench.py [--askers 200] [--answers 50] [--workers 2]

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

import psycopg  # noqa: E402

from benchmarks.common import fresh_database, gunicorn, psycopg_dsn  # noqa: E402
from benchmarks.events_bench import idle  # noqa: E402
from benchmarks.live_bench import Agent, Waiters, percentile, settle  # noqa: E402

WAIT = 60  # each ask waits this long for its answer: no wait ends while it is measured


class Askers:
    """One agent a task: each claims it, then asks the stewards with ``wait``; when an answer comes
    back, the time it arrived is noted against the question."""

    def __init__(self, base: str, keys: list[str], slug: str) -> None:
        self.base, self.keys, self.slug = base, keys, slug
        self.arrived: dict[int, float] = {}
        self.questions: list[tuple[int, int]] = []  # (task, question) as each asker learns it
        self.lock = threading.Lock()
        self.errors = 0
        self.threads = [threading.Thread(target=self.ask, args=(key, number), daemon=True)
                        for number, key in enumerate(keys, start=1)]

    def ask(self, key: str, number: int) -> None:
        agent = Agent(self.base, key, self.slug)
        status, _ = agent.call("/next", {"number": number})
        if status != 200:
            self.errors += 1
            return
        status, body = agent.call(f"/tasks/{number}/questions", {"body": f"Which way for task {number}?",
                                                                 "to": "stewards", "wait": WAIT})
        arrived = time.monotonic()
        if status != 201:
            self.errors += 1
            return
        with self.lock:
            if body["state"] == "answered":
                self.arrived[body["id"]] = arrived

    def __enter__(self) -> "Askers":
        for thread in self.threads:
            thread.start()
        return self

    def join(self) -> None:
        for thread in self.threads:
            thread.join(WAIT + 10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--askers", type=int, default=200)
    parser.add_argument("--answers", type=int, default=50, help="questions answered one at a time (part 2)")
    parser.add_argument("--workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "2")))
    args = parser.parse_args()
    url = fresh_database()
    from commands.unit import in_unit
    from spaces import services
    from tasks.commands import create_once

    def space_with_keys(slug: str, count: int) -> tuple[object, list[str]]:
        space = services.create_space(slug=slug, name=slug)
        keys = [services.issue_key(member=services.add_member(space=space, role="writer", name=f"{slug}-{i}"))[1]
                for i in range(count)]
        return space, keys

    ask_space, ask_keys = space_with_keys("asking", args.askers)
    steward = services.add_member(space=ask_space, role="steward", name="lead")
    lead = services.issue_key(member=steward)[1]
    for number in range(1, args.askers + 1):
        in_unit(create_once, space=ask_space, actor=steward, title=f"Work item number {number}",
                catalog_version=ask_space.catalog_version)
    _, next_keys = space_with_keys("waiting", args.askers)

    masters: list = []
    with gunicorn(url, workers=args.workers, shipped=True, processes=masters) as base:
        master = masters[0].pid
        print(f"== the shipped gunicorn.conf.py: {args.workers} workers; {args.askers} agents waiting")
        alone = idle(master, url, seconds=10)
        askers = Askers(base, ask_keys, "asking").__enter__()
        settle(args.askers)
        asked = idle(master, url, seconds=5)
        sent: dict[int, tuple[float, float]] = {}
        with psycopg.connect(psycopg_dsn(url), autocommit=True) as conn:  # the open questions, oldest first
            rows = conn.execute("SELECT q.id, t.number FROM tasks_question q JOIN tasks_task t ON t.id = q.task_id "
                                "WHERE q.state = 'open' ORDER BY q.id LIMIT %s", [args.answers]).fetchall()
        answer_agent = Agent(base, lead, "asking")
        for question, number in rows:
            t_send = time.monotonic()
            status, _ = answer_agent.call(f"/tasks/{number}/questions/{question}/answer", {"body": "this way"})
            t_answered = time.monotonic()
            if status == 200:
                sent[question] = (t_send, t_answered)
            else:
                print(f"   answer to question {question}: {status}")
            time.sleep(0.05)
        time.sleep(2)
        arrived = dict(askers.arrived)
        upper = [(arrived[q] - s) * 1000 for q, (s, _) in sent.items() if q in arrived]
        lower = [max(0.0, arrived[q] - a) * 1000 for q, (_, a) in sent.items() if q in arrived]
        print(f"-- 2. {len(sent)} answers one at a time, {len(upper)} reached their asker: from the answer's send "
              f"p50 {percentile(upper, 0.5):.1f} ms, p99 {percentile(upper, 0.99):.1f} ms; from its answer "
              f"p50 {percentile(lower, 0.5):.1f} ms [<= 50], p99 {percentile(lower, 0.99):.1f} ms"
              if upper else "-- 2. no answer reached its asker")
        print(f"   askers refused or cut off: {askers.errors}")
        askers.join()  # the unanswered ones' waits end (WAIT)
        with Waiters(base, next_keys, "waiting", wait=20):
            settle(args.askers)
            nexts = idle(master, url, seconds=5)
        print(f"-- 1. idle: nobody waiting {alone[0] * 100:.1f}% of a core, {alone[1]:.2f} statements/s; "
              f"{args.askers} waited asks {asked[0] * 100:.1f}%, {asked[1]:.2f}/s; {args.askers} waited nexts "
              f"{nexts[0] * 100:.1f}%, {nexts[1]:.2f}/s")


if __name__ == "__main__":
    main()
