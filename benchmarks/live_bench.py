"""SPEC §15 at scale, on the shipped serving configuration (gunicorn.conf.py):

1. the hot routes (create, next without wait, one task) with no agent waiting and with
   ``--waiters`` agents waiting in another space, alternately (A B A B A B A: each B's ratio is
   to the mean of the A on either side, so the machine's drift and the tables' growth fall on
   both); the median of the ratios for each;
2. while the agents wait and nothing happens: the server processes' CPU and the statements
   the database runs (its committed transactions) a second;
3. tasks made ready one at a time: from the create request's send to a waiter's claim
   arriving (an upper bound on "from its commit"), p50 and p99, and each task claimed once;
4. agents killed mid-task with ``claim_lease_seconds = 15``: from the kill to a waiting
   agent's claim of the task, p50 and p99; and an agent heartbeating every third of its lease
   meanwhile is never lapsed;
5. with ``--pgbouncer``, part 3 again through PgBouncer in transaction mode, with
   ``DATABASE_LISTEN_URL`` naming the database directly and with it ``off``.

    .venv/bin/python benchmarks/live_bench.py [--waiters 200] [--seconds 5] [--workers 2] [--pgbouncer]

Uses a fresh PostgreSQL database (BENCH_DATABASE_URL, by default the embedded server in
.postgres/bench). Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.claims_bench import add_tasks  # noqa: E402
from benchmarks.common import fresh_database, gunicorn, psycopg_dsn, refresh_statistics  # noqa: E402
from benchmarks.load import Scenario, ensure_wrk, run_load  # noqa: E402


WAIT = 20  # seconds each waiter's next waits; after it is told to stop, its last wait ends within that


class Agent:
    """One agent over its own keep-alive connection."""

    def __init__(self, base: str, key: str, slug: str) -> None:
        parts = urlsplit(base)
        self.host, self.port, self.key, self.slug = parts.hostname, parts.port, key, slug
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)

    def call(self, path: str, body: dict | None = None, method: str = "POST") -> tuple[int, dict]:
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
        self.conn.request(method, f"/v1/spaces/{self.slug}{path}", body=json.dumps(body or {}) if method == "POST"
                          else None, headers=headers)
        response = self.conn.getresponse()
        return response.status, json.loads(response.read() or b"null")


class Waiters:
    """``count`` agents each looping ``next {"wait": WAIT}``; every claim is noted with its time."""

    def __init__(self, base: str, keys: list[str], slug: str, wait: float = WAIT) -> None:
        self.wait = wait
        self.claims: list[tuple[int, float]] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.errors = 0
        self.threads = [threading.Thread(target=self.loop, args=(Agent(base, key, slug),), daemon=True)
                        for key in keys]

    def loop(self, agent: Agent) -> None:
        while not self.stop.is_set():
            try:
                status, body = agent.call("/next", {"wait": self.wait})
            except (OSError, http.client.HTTPException, ValueError):
                self.errors += 1
                if self.stop.is_set():
                    return
                time.sleep(0.5)
                agent.conn = http.client.HTTPConnection(agent.host, agent.port, timeout=120)
                continue
            if status == 200 and body.get("task"):
                with self.lock:
                    self.claims.append((body["task"]["id"], time.monotonic()))

    def __enter__(self) -> "Waiters":
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def process_cpu_seconds(master_pid: int) -> float:
    """User + system CPU of the gunicorn master and its workers so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry) == master_pid or int(fields[1]) == master_pid:  # fields[1]: the parent
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def committed(url: str) -> int:
    import psycopg

    with psycopg.connect(psycopg_dsn(url), autocommit=True) as conn:
        return conn.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
                            ).fetchone()[0]


def settle(count: int) -> None:
    """Time for ``count`` waiters to have sent their first try and be waiting."""
    time.sleep(2 + count / 100)


def pickup(base: str, waiters: Waiters, slug: str, maker: str, tasks: int) -> tuple[list[float], list[int]]:
    """Tasks made one at a time while ``waiters`` wait: latencies (ms, from the create's send to
    the claim's arrival) and the numbers claimed."""
    maker_agent = Agent(base, maker, slug)
    sent: dict[int, float] = {}
    for i in range(tasks):
        t_send = time.monotonic()
        status, body = maker_agent.call("/tasks", {"title": f"Made ready for a waiter, number {i}"})
        if status == 201:
            sent[body["id"]] = t_send
        time.sleep(0.05)
    time.sleep(2)
    claims = list(waiters.claims)
    return ([(got - sent[number]) * 1000 for number, got in claims if number in sent],
            [number for number, _ in claims if number in sent])


def through_pgbouncer(url: str, workers: int, tasks: int, space_with_keys) -> None:
    from common.database_url import parse_database_url
    from tests.test_pgbouncer import pgbouncer

    server = parse_database_url(url, conn_max_age=0)
    for mode in ("direct", "off"):
        slug = f"pooled-{mode}"
        space, keys = space_with_keys(slug, 21)
        with pgbouncer(server) as pooled:
            os.environ["DATABASE_LISTEN_URL"] = psycopg_dsn(url) if mode == "direct" else "off"
            try:
                with gunicorn(pooled, workers=workers, shipped=True) as base, \
                        Waiters(base, keys[1:], slug) as waiters:
                    settle(len(keys) - 1)
                    latencies, numbers = pickup(base, waiters, slug, keys[0], tasks)
            finally:
                os.environ.pop("DATABASE_LISTEN_URL", None)
        label = "DATABASE_LISTEN_URL direct" if mode == "direct" else "DATABASE_LISTEN_URL=off (re-check alone)"
        print(f"-- 5. through PgBouncer (transaction mode), {label}: {len(numbers)} of {tasks} claimed, distinct "
              f"{len(set(numbers))}; p50 {percentile(latencies, 0.5):.1f} ms, p99 {percentile(latencies, 0.99):.1f} ms"
              if latencies else f"-- 5. through PgBouncer, {label}: nothing claimed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--waiters", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=5.0, help="each hot-route measurement")
    parser.add_argument("--workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "2")))
    parser.add_argument("--tasks", type=int, default=100, help="tasks made ready one at a time (part 3)")
    parser.add_argument("--killed", type=int, default=10, help="agents killed mid-task (part 4)")
    parser.add_argument("--pgbouncer", action="store_true", help="part 5: the pickup through PgBouncer")
    parser.add_argument("--cycles", type=int, default=3, help="alternations of part 1")
    args = parser.parse_args()
    ensure_wrk()
    url = fresh_database()
    from spaces import services

    def space_with_keys(slug: str, count: int, role: str = "writer") -> tuple[object, list[str]]:
        """A space with ``count`` members of ``role``, each with a key."""
        space = services.create_space(slug=slug, name=slug)
        keys = [services.issue_key(member=services.add_member(space=space, role=role, name=f"{slug}-{i}"))[1]
                for i in range(count)]
        return space, keys

    hot, hot_keys = space_with_keys("hot", 16)
    waiting_space, waiting_keys = space_with_keys("waiting", args.waiters)
    maker_member = services.add_member(space=waiting_space, role="steward", name="maker")
    maker = services.issue_key(member=maker_member)[1]
    lease_space, lease_keys = space_with_keys("lease", args.killed * 2 + 1)
    services.update_space(space=lease_space, claim_lease_seconds=15)
    lease_maker = services.issue_key(member=services.add_member(space=lease_space, role="steward", name="m"))[1]
    creator = hot.members.first()
    add_tasks(hot.pk, creator.pk, 200_000, "open")  # next without wait never runs dry
    refresh_statistics(url)

    routes = {
        "create": Scenario("/v1/spaces/hot/tasks", hot_keys, body='{"title": "hot task {unique}"}'),
        "next": Scenario("/v1/spaces/hot/next", hot_keys),
        "one task": Scenario("/v1/spaces/hot/tasks/1", hot_keys, method="GET", body=""),
    }
    masters: list = []
    with gunicorn(url, workers=args.workers, shipped=True, processes=masters) as base:
        master = masters[0].pid
        print(f"== the shipped gunicorn.conf.py: {args.workers} workers (WEB_CONCURRENCY); "
              f"{args.waiters} waiters; each route {args.seconds:g} s at 16 clients")
        for scenario in routes.values():
            run_load(base, scenario, clients=4, seconds=0.5)  # warm up

        def measure() -> dict[str, object]:
            return {name: run_load(base, scenario, clients=16, seconds=args.seconds)
                    for name, scenario in routes.items()}

        def idle(seconds: float = 10.0) -> tuple[float, float]:
            """The server's CPU (share of a core) and the database's statements a second. After a
            quiet spell first: a backend reports its counts up to 10 s late when it goes idle."""
            time.sleep(11)
            cpu0, xact0, t0 = process_cpu_seconds(master), committed(url), time.monotonic()
            time.sleep(seconds)
            cpu1, xact1, t1 = process_cpu_seconds(master), committed(url), time.monotonic()
            return (cpu1 - cpu0) / (t1 - t0), (xact1 - xact0 - 1) / (t1 - t0)  # less the reading itself

        idle_alone = idle()
        withouts, withs = [measure()], []
        for cycle in range(args.cycles):
            with Waiters(base, waiting_keys, "waiting") as waiters:
                settle(args.waiters)
                # 1. The hot routes while they wait.
                withs.append(measure())
                if cycle == 0:
                    # 3. Pickup.
                    latencies, claimed_numbers = pickup(base, waiters, "waiting", maker, args.tasks)
            time.sleep(WAIT + 1)  # their last waits end
            withouts.append(measure())
        # 2. Idle: everyone waits (as long as an agent may: 60 s, so no wait ends meanwhile) and
        # nothing happens.
        with Waiters(base, waiting_keys, "waiting", wait=60):
            settle(args.waiters)
            cpu_share, statements = idle()
        print(f"-- 1. hot routes with {args.waiters} waiting / without, {args.cycles} alternations "
              "(each to the mean of the runs without on either side)")
        for name in routes:
            ratios = sorted(w[name].rps / ((a[name].rps + b[name].rps) / 2)
                            for w, a, b in zip(withs, withouts, withouts[1:]))
            print(f"  {name:<9} without " + " | ".join(f"{r[name].rps:.0f}" for r in withouts) + " req/s")
            print("            with    " + " | ".join(f"{r[name].rps:.0f}" for r in withs) + " req/s   "
                  f"ratios {', '.join(f'{x:.2f}' for x in ratios)}; median {ratios[len(ratios) // 2]:.2f}x [>= 0.95]")
        print(f"-- 2. idle, {args.waiters} waiting: server CPU {cpu_share * 100:.1f}% of a core [< 5%], "
              f"{statements:.2f} statements/s in all = {statements / args.workers:.2f} per worker [<= 1]; "
              f"with nobody waiting: {idle_alone[0] * 100:.1f}%, {idle_alone[1]:.2f} statements/s")
        print(f"-- 3. pickup of {args.tasks} tasks: claimed {len(claimed_numbers)}, distinct "
              f"{len(set(claimed_numbers))}; from the create's send to the claim: "
              f"p50 {percentile(latencies, 0.5):.1f} ms [<= 25], p99 {percentile(latencies, 0.99):.1f} ms [<= 250]"
              if latencies else "-- 3. no task was claimed")

        # 4. Dropped work back: agents claim, then die (no heartbeat, no give-back).
        doomed = [Agent(base, key, "lease") for key in lease_keys[:args.killed]]
        rescuers = lease_keys[args.killed:2 * args.killed]
        keeper = Agent(base, lease_keys[-1], "lease")
        lease_maker_agent = Agent(base, lease_maker, "lease")
        for i in range(args.killed + 1):
            lease_maker_agent.call("/tasks", {"title": f"Work an agent will drop, number {i}"})
        status, kept = keeper.call("/next", {})
        kept_number = kept["task"]["id"]
        killed_at: dict[int, float] = {}
        for agent in doomed:
            status, body = agent.call("/next", {})
            killed_at[body["task"]["id"]] = time.monotonic()
            agent.conn.close()  # the agent is gone
        keeper_refusals = 0
        with Waiters(base, rescuers, "lease") as rescue:
            deadline = time.monotonic() + 40
            while time.monotonic() < deadline and len(rescue.claims) < args.killed:
                status, _ = keeper.call(f"/tasks/{kept_number}/heartbeat")
                keeper_refusals += status != 200
                time.sleep(5)  # a third of its 15 s lease
            handovers = [(got - killed_at[number]) for number, got in rescue.claims if number in killed_at]
        if handovers:
            print(f"-- 4. {len(handovers)} of {args.killed} dropped tasks taken by a waiter: from the kill, "
                  f"p50 {percentile(handovers, 0.5):.1f} s, p99 {percentile(handovers, 0.99):.1f} s "
                  f"[<= 17 s at lease 15 s]; the heartbeating agent refused {keeper_refusals} times [0]")
        else:
            print("-- 4. no dropped task was taken")
        print(f"   {statistics.mean(handovers) if handovers else 0:.1f} s mean")
    if args.pgbouncer:
        through_pgbouncer(url, args.workers, args.tasks, space_with_keys)


if __name__ == "__main__":
    main()
