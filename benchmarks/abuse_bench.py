"""What abuse costs a well-behaved agent (SPEC §3 Abuse): one client reading a task, request after
request, alone; beside 16 connections of random bad API keys; beside 10 anonymous
`/v1/schema` requests a second.

    .venv/bin/python benchmarks/abuse_bench.py [--seconds 10] [--shipped] [--distinct-keys N]

``--shipped`` serves with gunicorn.conf.py as it is (threaded workers, one request running at a
time in each) instead of sync workers; ``--distinct-keys N`` floods with N different key-shaped
keys (default 16), so that a process has seen few of them before and each costs its lookup.

Bad keys are counted per client address and answered `429 rate_limited` past the limit
(SPACES_BAD_KEY_LIMIT_PER_MINUTE); the schema is built once a process. Uses a fresh
database (BENCH_DATABASE_URL, by default the embedded server in .postgres/bench). Prints
figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import http.client
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import fresh_database, gunicorn  # noqa: E402
from benchmarks.load import Scenario, ensure_wrk, fmt, run_load  # noqa: E402

WORKERS = int(os.environ.get("BENCH_WORKERS", "2"))


def victim(port: int, key: str, seconds: float) -> list[float]:
    """Milliseconds per `GET …/tasks/1`, one after another, on a kept connection where it can."""
    times: list[float] = []
    stop_at = time.monotonic() + seconds
    while time.monotonic() < stop_at:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        started = time.perf_counter()
        conn.request("GET", "/v1/spaces/abuse/tasks/1", headers={"Authorization": f"Bearer {key}"})
        response = conn.getresponse()
        response.read()
        conn.close()
        if response.status == 200:
            times.append((time.perf_counter() - started) * 1000)
    return times


def schema_flood(port: int, stop: threading.Event, answered: list[int]) -> None:
    while not stop.is_set():
        started = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/v1/schema")
        response = conn.getresponse()
        response.read()
        conn.close()
        answered.append(response.status)
        stop.wait(max(0.0, 0.1 - (time.monotonic() - started)))


def describe(name: str, times: list[float]) -> str:
    ordered = sorted(times)
    return (f"   {name:34} median {statistics.median(ordered):6.1f} ms   p99 {ordered[int(len(ordered) * 0.99)]:7.1f} ms"
            f"   ({len(ordered)} requests)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--shipped", action="store_true", help="serve with gunicorn.conf.py as it is")
    parser.add_argument("--distinct-keys", type=int, default=16, help="how many different bad keys (default 16)")
    args = parser.parse_args()
    ensure_wrk()
    url = fresh_database()
    from spaces import services
    from commands.unit import in_unit
    from tasks.services import create_task

    space = services.create_space(slug="abuse", name="abuse")
    member = services.add_member(space=space, role="writer", name="victim")
    key = services.issue_key(member=member)[1]
    in_unit(create_task, space=space, actor=member, title="the task the victim reads")
    # key-shaped: each is looked up once a minute
    bad_keys = [f"sk_bad{i:09d}_{'0' * 32}" for i in range(args.distinct_keys)]
    with gunicorn(url, workers=WORKERS, shipped=args.shipped) as base:
        port = int(base.rsplit(":", 1)[1])
        victim(port, key, 1)  # warm up
        quiet = victim(port, key, args.seconds)
        results: list = []
        flood = threading.Thread(target=lambda: results.append(run_load(
            base, Scenario("/v1/spaces/abuse/tasks", bad_keys, method="GET", body=""),
            clients=16, seconds=args.seconds + 2)))
        flood.start()
        time.sleep(1)
        attacked = victim(port, key, args.seconds)
        flood.join()
        stop, answered = threading.Event(), []
        schema = threading.Thread(target=schema_flood, args=(port, stop, answered))
        schema.start()
        schemed = victim(port, key, args.seconds)
        stop.set()
        schema.join()
    served = "gunicorn.conf.py" if args.shipped else "sync"
    print(f"\n== one agent's GET …/tasks/1, gunicorn {WORKERS} {served} workers, {args.seconds:g} s each, "
          f"{args.distinct_keys} bad keys")
    print(describe("alone", quiet))
    print(describe("beside 16 bad-key connections", attacked))
    print(f"   (the bad keys: {fmt(results[0])})")
    print(describe("beside 10 /v1/schema a second", schemed))
    print(f"   (schema answers: {len(answered)}, statuses {sorted(set(answered))})")


if __name__ == "__main__":
    main()
