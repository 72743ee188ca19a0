"""Keep-alive for agents: one client making 200 sequential calls, reusing its connection or not,
against gunicorn's sync workers (which close every connection after its response) and gthread
workers (which keep it); and the hot routes' throughput under both, 8 clients.

    .venv/bin/python benchmarks/keepalive_bench.py [--calls 200] [--seconds 3] [--threads 4]

Uses a fresh database (BENCH_DATABASE_URL, by default the embedded server in
.postgres/bench). Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import http.client
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import fresh_database, gunicorn  # noqa: E402
from benchmarks.load import Scenario, ensure_wrk, run_load  # noqa: E402

WORKERS = int(os.environ.get("BENCH_WORKERS", "2"))


def sequential(port: int, key: str, calls: int, *, reuse: bool,
               path: str = "/v1/spaces/keepalive/tasks/1") -> tuple[float, int]:
    """Wall seconds for ``calls`` GETs one after another, and how many connections they took."""
    conn, opened = None, 0
    started = time.perf_counter()
    for _ in range(calls):
        if conn is None or not reuse:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            opened += 1
        conn.request("GET", path, headers={"Authorization": f"Bearer {key}"})
        response = conn.getresponse()
        response.read()
        assert response.status == 200, response.status
        if response.will_close or not reuse:
            conn.close()
            conn = None
    return time.perf_counter() - started, opened


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    ensure_wrk()
    url = fresh_database()
    from spaces import services
    from commands.unit import in_unit
    from tasks.services import create_task

    space = services.create_space(slug="keepalive", name="keepalive")
    keys = []
    for i in range(8):
        member = services.add_member(space=space, role="writer", name=f"agent-{i}")
        keys.append(services.issue_key(member=member)[1])
    in_unit(create_task, space=space, actor=member, title="the task every call reads")
    from benchmarks.claims_bench import add_tasks

    add_tasks(space.pk, member.pk, 60_000, "open")  # enough for every `next` of the runs
    hot = {"create": Scenario("/v1/spaces/keepalive/tasks", keys, body='{"title": "task {unique}"}'),
           "next": Scenario("/v1/spaces/keepalive/next", keys),
           "one task": Scenario("/v1/spaces/keepalive/tasks/1", keys, method="GET", body="")}
    kinds = {"sync": {"worker_class": "sync"}, f"gthread x{args.threads}": {"worker_class": "gthread",
                                                                           "threads": args.threads}}
    lines = []
    for name, options in kinds.items():
        with gunicorn(url, workers=WORKERS, **options) as base:
            port = int(base.rsplit(":", 1)[1])
            sequential(port, keys[0], 20, reuse=True)  # warm up
            for reuse in (False, True):
                runs = [sequential(port, keys[0], args.calls, reuse=reuse) for _ in range(args.repeats)]
                seconds = statistics.median(r[0] for r in runs)
                lines.append(f"   {name:12} {args.calls} calls, {'one connection' if reuse else 'a connection each':18}"
                             f" {seconds * 1000:7.0f} ms  ({seconds * 1000 / args.calls:.2f} ms a call, "
                             f"{runs[0][1]} connections)")
            for route, scenario in hot.items():
                result = statistics.median([run_load(base, scenario, clients=8, seconds=args.seconds).rps
                                            for _ in range(args.repeats)])
                lines.append(f"   {name:12} {route:10} 8 clients: {result:7.0f} req/s")
            print(f"   {name} done", flush=True)
    print(f"\n== gunicorn {WORKERS} workers, median of {args.repeats}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
