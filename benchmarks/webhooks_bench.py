"""SPEC §17's webhooks, sent by one ``manage.py run_worker`` process to receivers on this machine:

1. throughput: ``--events`` events committed at once, delivered to one endpoint (in seq
   order, one at a time: the worst case) and then to ``--endpoints`` endpoints; deliveries a
   second from the commit to the last one received;
2. isolation: one endpoint answers after ``--slow`` seconds; how long after each commit the
   events reach another endpoint meanwhile (p50 and max over ``--probes`` events, one a second);
3. a fleet (``--fleet``): that many endpoints, ``--hanging`` of them never answering in time,
   events committed one at a time at ``--rate`` a second for ``--seconds``; from commit to
   receipt at the endpoints that answer at once (p50, p99, max over every delivery).

    .venv/bin/python benchmarks/webhooks_bench.py [--events 2000] [--endpoints 4] [--slow 8] [--probes 5]
    .venv/bin/python benchmarks/webhooks_bench.py --fleet 100 --hanging 5 --rate 5 --seconds 30 [--workers 2]

Uses a fresh PostgreSQL database (BENCH_DATABASE_URL, by default the embedded server in
.postgres/bench). Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import ROOT, fresh_database  # noqa: E402


class Receiver:
    """Counts what arrives (and when each event's ``data.n`` came); answers 200 after ``delay`` seconds."""

    def __init__(self, delay: float = 0.0) -> None:
        self.arrivals: list[float] = []
        self.by_n: dict[int, float] = {}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.arrivals.append(time.monotonic())
                n = json.loads(body).get("data", {}).get("n")
                if isinstance(n, int):
                    receiver.by_n.setdefault(n, receiver.arrivals[-1])
                time.sleep(delay)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.request_queue_size = 256
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def wait_for(self, count: int, seconds: float) -> bool:
        ends = time.monotonic() + seconds
        while len(self.arrivals) < count and time.monotonic() < ends:
            time.sleep(0.002)
        return len(self.arrivals) >= count


def commit_events(space, count: int) -> float:
    """``count`` events in one transaction; the time it committed."""
    from django.db import transaction

    from events import feed

    with transaction.atomic():
        for n in range(count):
            feed.record(space_id=space.pk, type="space.settings_changed", data={"n": n})
    return time.monotonic()


def fleet(args, env: dict[str, str]) -> None:
    """Scenario 3: many endpoints, some hanging, events at a steady rate (see the module's doc)."""
    from spaces import services
    from webhooks.models import Endpoint

    workers = [subprocess.Popen([sys.executable, "manage.py", "run_worker"], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(args.workers)]
    try:
        time.sleep(3)
        space = services.create_space(slug="hooks-fleet", name="hooks")
        fast = [Receiver() for _ in range(args.fleet - args.hanging)]
        hanging = [Receiver(delay=60) for _ in range(args.hanging)]
        for receiver in hanging + fast:  # the hanging ones first: the lowest ids
            Endpoint.objects.create(space=space, url=receiver.url, secret="whsec_" + "A" * 44)
        committed: dict[int, float] = {}
        start, count = time.monotonic(), int(args.rate * args.seconds)
        for n in range(count):
            time.sleep(max(0.0, start + n / args.rate - time.monotonic()))
            committed[n] = commit_one(space, n)
        ends = time.monotonic() + 60
        while time.monotonic() < ends and any(len(r.by_n) < count for r in fast):
            time.sleep(0.1)
        latencies = sorted((r.by_n[n] - at) * 1000 for r in fast for n, at in committed.items() if n in r.by_n)
        missing = len(fast) * count - len(latencies)
        def pct(p: float) -> float:
            return latencies[min(len(latencies) - 1, int(p * len(latencies)))]
        print(f"{args.fleet} endpoints ({args.hanging} hanging), {args.workers} worker(s), {args.rate:g} events/s for "
              f"{args.seconds:g} s: {len(latencies)} deliveries to the fast ones, commit to receipt p50 "
              f"{pct(0.5):.0f} ms, p99 {pct(0.99):.0f} ms, max {latencies[-1]:.0f} ms"
              + (f"; {missing} not arrived within 60 s of the last commit" if missing else ""))
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(90)


def commit_one(space, n: int) -> float:
    from events import feed

    feed.record(space_id=space.pk, type="space.settings_changed", data={"n": n})  # autocommit: its own
    return time.monotonic()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--endpoints", type=int, default=4)
    parser.add_argument("--slow", type=float, default=8.0)
    parser.add_argument("--probes", type=int, default=5)
    parser.add_argument("--fleet", type=int, default=0, help="Endpoints of scenario 3 (0: scenarios 1 and 2)")
    parser.add_argument("--hanging", type=int, default=5)
    parser.add_argument("--rate", type=float, default=5.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    url = fresh_database()
    from spaces import services
    from webhooks.models import Endpoint

    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "settings.base", "DJANGO_DEBUG": "0",
           "DJANGO_SECRET_KEY": "bench-" + "x" * 50,  # as deployed: DEBUG keeps every query in memory
           "SPACES_WEBHOOK_ALLOW_HTTP": "1", "SPACES_WEBHOOK_ALLOW_PRIVATE": "1"}
    if args.fleet:
        fleet(args, env)
        return
    worker = subprocess.Popen([sys.executable, "manage.py", "run_worker"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(3)  # its start
        for endpoints in (1, args.endpoints):
            space = services.create_space(slug=f"hooks-{endpoints}", name="hooks")
            receivers = [Receiver() for _ in range(endpoints)]
            for receiver in receivers:
                Endpoint.objects.create(space=space, url=receiver.url, secret="whsec_" + "A" * 44)
            committed = commit_events(space, args.events)
            for receiver in receivers:
                receiver.wait_for(args.events, 300)
            last = max(r.arrivals[-1] for r in receivers)
            total = sum(len(r.arrivals) for r in receivers)
            print(f"{args.events} events to {endpoints} endpoint(s): {total} deliveries in {last - committed:.2f} s, "
                  f"{total / (last - committed):.0f} a second")

        space = services.create_space(slug="hooks-slow", name="hooks")
        slow, fast = Receiver(delay=args.slow), Receiver()
        for receiver in (slow, fast):
            Endpoint.objects.create(space=space, url=receiver.url, secret="whsec_" + "A" * 44)
        latencies = []
        for n in range(args.probes):
            committed = commit_events(space, 1)
            fast.wait_for(n + 1, 30)
            latencies.append((fast.arrivals[n] - committed) * 1000)
            time.sleep(1)
        print(f"one endpoint answering after {args.slow:g} s (it has had {len(slow.arrivals)} so far): another "
              f"endpoint's events arrive {statistics.median(latencies):.0f} ms (p50), {max(latencies):.0f} ms (max) "
              "after their commit")
    finally:
        worker.terminate()
        worker.wait(60)


if __name__ == "__main__":
    main()
