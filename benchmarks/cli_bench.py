"""What one `spaces` CLI call costs an agent: the median wall time of 30 `spaces next` calls
against a running server, beside the request alone (the same `next` over a kept-alive
connection in this process) and a bare `python -c pass`.

    .venv/bin/python benchmarks/cli_bench.py [--calls 30]

Uses a fresh database (BENCH_DATABASE_URL, by default the embedded server in
.postgres/bench). Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import ROOT, fresh_database, gunicorn  # noqa: E402


def timed(command: list[str], env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    url = fresh_database()
    from spaces import services
    from commands.unit import in_unit
    from tasks.services import create_task

    space = services.create_space(slug="bench", name="Bench")
    member = services.add_member(space=space, role="writer", name="agent")
    key = services.issue_key(member=member)[1]
    for number in range(args.calls * 2):
        in_unit(create_task, space=space, actor=member, title=f"task {number}")
    spaces = str(Path(sys.executable).parent / "spaces")
    with gunicorn(url) as base:
        env = {**os.environ, "SPACES_URL": f"{base}/v1/spaces/bench", "SPACES_KEY": key}
        python = [timed([sys.executable, "-c", "pass"], env) for _ in range(args.calls)]
        cli = [timed([spaces, "next"], env) for _ in range(args.calls)]
        from spaces_client.client import SpacesClient

        client = SpacesClient(f"{base}/v1/spaces/bench", key)
        client.next()  # the connection is open from here on
        request = []
        for _ in range(args.calls):
            started = time.perf_counter()
            client.next()
            request.append((time.perf_counter() - started) * 1000)
    print(f"== {args.calls} calls each, median wall time ({ROOT.name})")
    print(f"  spaces next (a process per call)   {statistics.median(cli):6.1f} ms")
    print(f"  the request alone (kept-alive)     {statistics.median(request):6.1f} ms")
    print(f"  python -c pass                     {statistics.median(python):6.1f} ms")


if __name__ == "__main__":
    main()
