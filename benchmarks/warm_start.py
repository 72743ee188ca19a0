"""How long ``bin/run`` takes to its banner on a warm start (SPEC §9; the goal is 8 s): the
database folder and the venv exist, the demo is loaded. Starts it once to warm up, then times
``--runs`` starts, each stopped by a TERM, and prints each and the median.

    .venv/bin/python -m benchmarks.warm_start --runs 3
"""
from __future__ import annotations

import argparse
import statistics
import time
import uuid

from tests.live_server import free_port
from tests.test_bin_run import cleanup_run, start, stop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed warm starts (default 3)")
    runs = parser.parse_args().runs
    name = f"warmstart-{uuid.uuid4().hex[:8]}"
    try:
        process, _, _ = start(name, free_port())  # the first start makes the database and loads the demo
        stop(process)
        times = []
        for _ in range(runs):
            started = time.monotonic()
            process, _, _ = start(name, free_port())
            times.append(time.monotonic() - started)
            stop(process)
            print(f"warm start to the banner: {times[-1]:.1f} s", flush=True)
        print(f"median of {runs}: {statistics.median(times):.1f} s (goal: 8 s)")
    finally:
        cleanup_run(name)


if __name__ == "__main__":
    main()
