"""Binding while a steward edits the catalog: p99 of POST …/bind on a 100,000-row catalog with
one catalog edit a second (PUT …/charter/{id}) against the same load with no edits.

    .venv/bin/python benchmarks/catalog_edit_bench.py [--seconds 10] [--repeats 3] [--clients 4]
    .venv/bin/python benchmarks/catalog_edit_bench.py --checkout /tmp/before   # the design before, served alike

Each server process keeps its bind index and catches it up by the rows an edit changed
(allocation.catalog_index); the goal is p99 with edits ≤ 1.5 × p99 without. The two runs
alternate in each repeat. Uses a fresh database (BENCH_DATABASE_URL, by default the
embedded server in .postgres/bench). Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.catalogs import sample_titles, zipf_catalog  # noqa: E402
from benchmarks.common import fresh_database, gunicorn  # noqa: E402
from benchmarks.load import Scenario, ensure_wrk, fmt, run_load  # noqa: E402

ROWS = 100_000
WORKERS = int(os.environ.get("BENCH_WORKERS", "2"))


def editor(base: str, key: str, stop: threading.Event, done: list[float]) -> None:
    """One catalog edit a second: a row's title and aliases replaced, as a steward would."""
    host = urlsplit(base)
    rng = random.Random(11)
    while not stop.is_set():
        started = time.monotonic()
        number = rng.randint(1, ROWS)
        body = json.dumps({"canonical_title": f"edited work item {number} {rng.random():.6f}",
                           "aliases": [f"edit alias {number}"]})
        conn = http.client.HTTPConnection(host.hostname, host.port, timeout=60)
        conn.request("PUT", f"/v1/spaces/bind100k/charter/T{number}", body,
                     {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        conn.close()
        if response.status == 200:
            done.append(time.monotonic() - started)
        stop.wait(max(0.0, 1.0 - (time.monotonic() - started)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--checkout", type=Path, default=None,
                        help="serve another checkout instead (e.g. one from before catch-up by rows; "
                             "this one migrates and fills the database)")
    args = parser.parse_args()
    ensure_wrk()
    url = fresh_database()
    from spaces import services
    from spaces.catalog import CatalogRow

    space = services.create_space(slug="bind100k", name="bind100k")
    catalog = zipf_catalog(random.Random(7), ROWS)
    started = time.monotonic()
    services.import_catalog(space=space, rows=[CatalogRow(w, t, a) for w, t, a in catalog])
    print(f"== imported {ROWS:,} catalog rows in {time.monotonic() - started:.1f} s", flush=True)
    keys = [services.issue_key(member=services.add_member(space=space, role="writer", name=f"agent-{i}"))[1]
            for i in range(args.clients)]
    steward_key = services.issue_key(member=services.add_member(space=space, role="steward", name="steward"))[1]
    binds = Scenario("/v1/spaces/bind100k/bind", keys, body='{"title": "{pick}"}',
                     picks=sample_titles(random.Random(3), catalog, 5000))

    results: dict[str, list] = {"no edits": [], "one edit a second": []}
    edit_times: list[float] = []
    root = {"root": args.checkout.resolve()} if args.checkout else {}
    with gunicorn(url, workers=WORKERS, **root) as base:
        run_load(base, binds, clients=args.clients, seconds=8)  # every worker builds its index once
        for repeat in range(args.repeats):
            order = ["no edits", "one edit a second"] if repeat % 2 == 0 else ["one edit a second", "no edits"]
            for mode in order:
                stop = threading.Event()
                thread = None
                if mode != "no edits":
                    thread = threading.Thread(target=editor, args=(base, steward_key, stop, edit_times))
                    thread.start()
                results[mode].append(run_load(base, binds, clients=args.clients, seconds=args.seconds))
                stop.set()
                if thread:
                    thread.join()
            print(f"   repeat {repeat + 1}/{args.repeats} done", flush=True)
    print(f"\n== POST …/bind on {ROWS:,} rows, {args.clients} clients, gunicorn {WORKERS} sync workers, "
          f"{args.repeats} x {args.seconds:g} s each")
    for mode, runs in results.items():
        for run in runs:
            print(f"   {mode:18} {fmt(run)}")
    quiet = statistics.median(r.p99_ms for r in results["no edits"])
    busy = statistics.median(r.p99_ms for r in results["one edit a second"])
    print(f"\n   median p99: no edits {quiet:.1f} ms, one edit a second {busy:.1f} ms: ratio {busy / quiet:.2f} "
          f"(goal <= 1.5)")
    rate = statistics.median(r.rps for r in results["one edit a second"]) / statistics.median(
        r.rps for r in results["no edits"])
    print(f"   binds/s with edits / without: {rate:.2f}; {len(edit_times)} edits, "
          f"median edit {statistics.median(edit_times) * 1000:.1f} ms" if edit_times else "no edit answered")


if __name__ == "__main__":
    main()
