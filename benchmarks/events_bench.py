"""SPEC §17's feed on the shipped serving configuration (gunicorn.conf.py):

1. a follower with ``?wait=`` sees an event how long after the create that made it was
   answered (an upper bound on "after its commit"), p50 and p99 over ``--events`` creates
   made one at a time;
2. ``--streams`` open Server-Sent-Event streams while nothing happens: the server processes'
   CPU (share of one core) and the database's committed transactions a second, against the
   same server with no stream open.

    .venv/bin/python benchmarks/events_bench.py [--events 100] [--streams 200] [--workers 2]

Uses a fresh PostgreSQL database (BENCH_DATABASE_URL, by default the embedded server in
.postgres/bench). Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import fresh_database, gunicorn  # noqa: E402
from benchmarks.live_bench import committed, process_cpu_seconds  # noqa: E402


def request(base: str, key: str, method: str, path: str, body: dict | None = None,
            timeout: float = 30) -> tuple[int, dict]:
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body),
                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        conn.close()


def follower_latency(base: str, key: str, slug: str, events: int) -> list[float]:
    """Milliseconds from each create's answer to the waiting follower's answer with it."""
    feed = f"/v1/spaces/{slug}/events"
    after = request(base, key, "GET", feed)[1]["next"]
    latencies: list[float] = []
    for n in range(events):
        got: dict = {}

        def follow() -> None:
            got["answer"] = request(base, key, "GET", f"{feed}?after={after}&wait=20&types=task.created")
            got["at"] = time.monotonic()

        thread = threading.Thread(target=follow)
        thread.start()
        time.sleep(0.05)  # the follower is waiting
        request(base, key, "POST", f"/v1/spaces/{slug}/tasks", {"title": f"followed task {n}"})
        created = time.monotonic()
        thread.join(30)
        status, body = got["answer"]
        if status != 200 or not body["events"]:
            raise SystemExit(f"the follower got {status} {body}")
        latencies.append(max(0.0, got["at"] - created) * 1000)
        after = body["next"]
    return latencies


def open_streams(base: str, key: str, slug: str, count: int) -> list[socket.socket]:
    parts = urlsplit(base)
    streams = []
    for _ in range(count):
        sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
        sock.sendall((f"GET /v1/spaces/{slug}/events HTTP/1.1\r\nHost: {parts.hostname}\r\n"
                      f"Authorization: Bearer {key}\r\nAccept: text/event-stream\r\n\r\n").encode())
        streams.append(sock)
    for sock in streams:
        if not sock.recv(4096).startswith(b"HTTP/1.1 200"):
            raise SystemExit("a stream was refused")
    return streams


def idle(master: int, url: str, seconds: float) -> tuple[float, float]:
    time.sleep(11)  # a backend reports its counts up to 10 s late when it goes idle
    cpu0, xact0, t0 = process_cpu_seconds(master), committed(url), time.monotonic()
    time.sleep(seconds)
    cpu1, xact1, t1 = process_cpu_seconds(master), committed(url), time.monotonic()
    return (cpu1 - cpu0) / (t1 - t0), (xact1 - xact0 - 1) / (t1 - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0, help="each idle measurement")
    parser.add_argument("--workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "2")))
    args = parser.parse_args()
    url = fresh_database()
    from spaces import services

    space = services.create_space(slug="feed", name="feed")
    key = services.issue_key(member=services.add_member(space=space, role="writer", name="follower"))[1]
    masters: list = []
    with gunicorn(url, workers=args.workers, shipped=True, processes=masters) as base:
        master = masters[0].pid
        print(f"== the shipped gunicorn.conf.py: {args.workers} workers")
        latencies = follower_latency(base, key, "feed", args.events)
        cuts = statistics.quantiles(latencies, n=100)
        print(f"follower with wait, {args.events} events made one at a time: from the create's answer to the "
              f"follower's, p50 {statistics.median(latencies):.1f} ms, p99 {cuts[98]:.1f} ms")
        alone = idle(master, url, args.seconds)
        streams = open_streams(base, key, "feed", args.streams)
        try:
            held = idle(master, url, args.seconds)
        finally:
            for sock in streams:
                sock.close()
        print(f"idle, no stream: server CPU {alone[0] * 100:.1f}% of a core, {alone[1]:.1f} transactions/s")
        print(f"idle, {args.streams} streams open: server CPU {held[0] * 100:.1f}% of a core, "
              f"{held[1]:.1f} transactions/s")


if __name__ == "__main__":
    main()
