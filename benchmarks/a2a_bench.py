"""A2A (SPEC §18) beside REST, and the SDK's own server beside ours:

1. on the shipped serving configuration (gunicorn.conf.py, the one that holds waiting agents):
   a create over REST (``POST …/tasks``, without and with a new ``Idempotency-Key``) against the
   same create sent as A2A ``SendMessage`` (JSON-RPC, and HTTP+JSON's ``message:send``), each
   message with a new ``messageId`` (its idempotency key); a
   task read over REST (``GET …/tasks/1``) against A2A ``GetTask``;
2. the same two A2A calls served by the official SDK's Starlette server (its JSON-RPC route and
   dispatcher, ``benchmarks/a2a_starlette.py``) under uvicorn, with as many worker processes,
   handing each call to the same operations in a worker thread.

    .venv/bin/python benchmarks/a2a_bench.py [--clients 8] [--seconds 3] [--repeats 3] [--workers 2]

Uses a fresh PostgreSQL database (BENCH_DATABASE_URL, by default the embedded server in
.postgres/bench) and wrk. Prints figures and ratios; asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (ROOT, free_port, fresh_database, gunicorn, refresh_statistics,  # noqa: E402
                               wait_until_serving)
from benchmarks.load import Scenario, ensure_wrk, fmt, median_of, run_load  # noqa: E402

VERSION = {"A2A-Version": "1.0"}


def send_body(method: str) -> str:
    message = ('{"messageId": "{unique}", "role": "ROLE_USER", "parts": [{"text": "bench work {unique}"}]}')
    if method == "rest":
        return '{"message": ' + message + "}"
    return '{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": ' + message + "}}"


GET_TASK = '{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "1", "historyLength": 0}}'


def routes(keys: list[str]) -> dict[str, Scenario]:
    return {
        "create REST": Scenario("/v1/spaces/bench/tasks", keys, body='{"title": "bench work {unique}"}'),
        "create REST keyed": Scenario("/v1/spaces/bench/tasks", keys, body='{"title": "bench work {unique}"}',
                                      headers={"Idempotency-Key": "{unique}"}),
        "create A2A JSON-RPC": Scenario("/a2a/bench", keys, body=send_body("rpc"), headers=VERSION),
        "create A2A HTTP+JSON": Scenario("/a2a/bench/message:send", keys, body=send_body("rest"), headers=VERSION),
        "read REST": Scenario("/v1/spaces/bench/tasks/1", keys, method="GET", body=""),
        "read A2A JSON-RPC": Scenario("/a2a/bench", keys, body=GET_TASK, headers=VERSION),
    }


@contextmanager
def uvicorn(url: str, workers: int) -> Iterator[str]:
    """The SDK's Starlette server (benchmarks/a2a_starlette.py) under uvicorn."""
    port = free_port()
    env = dict(os.environ, DATABASE_URL=url, DJANGO_SETTINGS_MODULE="settings.benchmark", DJANGO_DEBUG="0",
               DJANGO_SECRET_KEY=secrets.token_urlsafe(50), DJANGO_SECURE_SSL_REDIRECT="0",
               DJANGO_CONN_MAX_AGE="600", DJANGO_DB_POOL_SIZE="0", PYTHONPATH=str(ROOT))
    process = subprocess.Popen([sys.executable, "-m", "uvicorn", "benchmarks.a2a_starlette:app", "--port", str(port),
                                "--workers", str(workers), "--log-level", "warning", "--no-access-log"],
                               cwd=ROOT, env=env)
    try:
        wait_until_serving(process, port, "/", "uvicorn")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    ensure_wrk()
    url = fresh_database()
    from spaces import services

    space = services.create_space(slug="bench", name="bench")
    keys = [services.issue_key(member=services.add_member(space=space, role="writer", name=f"agent-{i}"))[1]
            for i in range(args.clients)]
    refresh_statistics(url)
    scenarios = routes(keys)
    starlette = {name: scenarios[name] for name in ("create A2A JSON-RPC", "read A2A JSON-RPC")}
    results: dict[tuple[str, str], list] = {}
    for _ in range(args.repeats):  # the two servers interleaved, so both see the same database
        with gunicorn(url, workers=args.workers, shipped=True) as base:
            for name, scenario in scenarios.items():
                run_load(base, scenario, clients=2, seconds=0.5)  # warm up (and task 1 exists)
                results.setdefault(("django", name), []).append(
                    run_load(base, scenario, clients=args.clients, seconds=args.seconds))
        with uvicorn(url, args.workers) as base:
            for name, scenario in starlette.items():
                run_load(base, scenario, clients=2, seconds=0.5)
                results.setdefault(("starlette", name), []).append(
                    run_load(base, scenario, clients=args.clients, seconds=args.seconds))
        refresh_statistics(url)
    print(f"== {args.clients} clients, {args.workers} workers, median of {args.repeats} x {args.seconds:g} s")
    rest = {"create": median_of(results[("django", "create REST")]).rps,
            "read": median_of(results[("django", "read REST")]).rps}
    for (server, name), runs in results.items():
        result = median_of(runs)
        ratio = result.rps / rest[name.split()[0]]
        print(f"  {server:<9} {name:<22} {fmt(result)}  {ratio:.2f}x of REST's {name.split()[0]}")


if __name__ == "__main__":
    main()
