"""Allocation benchmark: create-task, its 409 path, idempotent replays and bind, as ratios
against baselines served by the same gunicorn (2 sync workers) in the same run.

    .venv/bin/python benchmarks/allocation_bench.py [--seconds 3] [--repeats 3] [--each]

Uses a fresh PostgreSQL database (BENCH_DATABASE_URL, by default the embedded server in
.postgres/bench), dropped and re-created. Prints every
figure; asserts nothing (speed is measured, not asserted).
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.catalogs import sample_titles, zipf_catalog  # noqa: E402
from benchmarks.common import autovacuum_note, fresh_database, gunicorn, refresh_statistics  # noqa: E402
from benchmarks.load import Scenario, ensure_wrk, fmt, median_of, run_load  # noqa: E402

CLIENTS = (8, 32)


def bind_in_process(report) -> None:
    from allocation.binding import CatalogIndex, bag_rows, decide, scan_scores, tokens

    rng = random.Random(42)
    for size in (10, 1_000, 100_000):
        catalog = zipf_catalog(rng, size)
        started = time.perf_counter()
        index = CatalogIndex(catalog)
        build = time.perf_counter() - started
        titles = sample_titles(rng, catalog, 2000)
        timings = []
        for title in titles:
            t0 = time.perf_counter()
            index.bind(title)
            timings.append((time.perf_counter() - t0) * 1000)
        timings.sort()
        checked = titles[: 200 if size < 100_000 else 50]
        bagged = bag_rows(catalog)
        agree = 0
        for title in checked:
            got = index.scores(tokens(title))
            expected = scan_scores(bagged, tokens(title))
            same = [s for s in got if s.jaccard > 0] == [s for s in expected if s.jaccard > 0]
            agree += same and decide(got) == decide(expected)
        report(
            f"bind in process, {size:>7,} rows: p50 {statistics.median(timings):.3f} ms  "
            f"p99 {timings[int(len(timings) * 0.99)]:.3f} ms  (index built in {build:.2f} s; "
            f"agrees with brute force on {agree}/{len(checked)} sampled titles)"
        )


def prepare(url: str):
    from benchmarks.baseline_views import create_tables
    from spaces import services
    from spaces.catalog import CatalogRow

    create_tables()
    lab = services.create_space(slug="bench", name="Bench")
    services.import_catalog(space=lab, rows=[
        CatalogRow("T1", "Benchmark harness for code-review agents", ["review agent benchmark"]),
        CatalogRow("T2", "Cost tracking dashboard for model calls", []),
        CatalogRow("T3", "Retry and backoff policy for tool calls", []),
    ])
    rng = random.Random(7)
    spaces = {"bench": lab}
    for slug, size in (("bind10", 10), ("bind100k", 100_000)):
        space = services.create_space(slug=slug, name=slug)
        rows = [CatalogRow(w, t, a) for w, t, a in zipf_catalog(rng, size)]
        services.import_catalog(space=space, rows=rows)
        spaces[slug] = space
    keys = {}
    for slug, space in spaces.items():
        keys[slug] = []
        for i in range(max(CLIENTS)):
            member = services.add_member(space=space, role="writer", name=f"agent-{i}")
            keys[slug].append(services.issue_key(member=member)[1])
    return keys, zipf_catalog(random.Random(7), 100_000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one measurement")
    parser.add_argument("--repeats", type=int, default=3, help="repeats per figure (the median is kept)")
    parser.add_argument("--each", action="store_true", help="also print every repeat's throughput and p99")
    args = parser.parse_args()
    lines: list[str] = []

    def report(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    ensure_wrk()
    url = fresh_database()
    report("== bind, in process (Zipf-like vocabulary of 20,000 words)")
    bind_in_process(report)
    keys, catalog100k = prepare(url)
    rng = random.Random(1)
    bind_titles = sample_titles(rng, catalog100k, 5000)

    key = {"Idempotency-Key": "{unique}"}
    scenarios = {
        "baseline: one INSERT": Scenario("/bench/insert", keys["bench"], body='{"title": "{unique}"}'),
        "baseline: INSERT + idempotency key": Scenario(
            "/bench/insert-idempotent", keys["bench"], body='{"title": "x"}', headers=key),
        "create-task, new title": Scenario(
            "/v1/spaces/bench/tasks", keys["bench"], body='{"title": "bench task {unique}"}'),
        "create-task, new title + Idempotency-Key": Scenario(
            "/v1/spaces/bench/tasks", keys["bench"], body='{"title": "bench task {unique}"}', headers=key),
        "create-task, 409 occupied": Scenario(
            "/v1/spaces/bench/tasks", keys["bench"], body='{"title": "review agent benchmark"}'),
        "create-task, idempotent replay": Scenario(
            "/v1/spaces/bench/tasks", keys["bench"], body='{"title": "replayed {agent}"}',
            headers={"Idempotency-Key": "r{agent}"}),
        "bind over HTTP, 10 rows": Scenario(
            "/v1/spaces/bind10/bind", keys["bind10"], body='{"title": "{pick}"}', picks=bind_titles),
        "bind over HTTP, 100,000 rows": Scenario(
            "/v1/spaces/bind100k/bind", keys["bind100k"], body='{"title": "{pick}"}', picks=bind_titles),
    }
    results: dict[tuple[str, int], object] = {}
    # Both servers run side by side so that every repeat measures every scenario in turn:
    # the machine's speed drifts, and interleaving keeps that drift out of the ratios.
    with gunicorn(url, workers=2) as base, gunicorn(url, workers=2, conn_max_age=0) as base_no_reuse:
        runs_on = {name: base for name in scenarios}
        scenarios["create-task, CONN_MAX_AGE=0"] = scenarios["create-task, new title"]
        runs_on["create-task, CONN_MAX_AGE=0"] = base_no_reuse
        # Warm up: the occupied task exists, replays are stored, every worker has built its bind indexes.
        run_load(base, scenarios["create-task, 409 occupied"], clients=1, seconds=0.5)
        run_load(base, scenarios["create-task, idempotent replay"], clients=max(CLIENTS), seconds=1)
        run_load(base, scenarios["bind over HTTP, 100,000 rows"], clients=4, seconds=8)
        run_load(base, scenarios["bind over HTTP, 10 rows"], clients=4, seconds=1)
        for clients in CLIENTS:
            report(f"== over HTTP, gunicorn 2 sync workers, {clients} clients, median of {args.repeats} x "
                   f"{args.seconds:g} s, scenarios interleaved ({autovacuum_note(url)})")
            runs: dict[str, list] = {name: [] for name in scenarios}
            for _ in range(args.repeats):
                refresh_statistics(url)
                for name, scenario in scenarios.items():
                    runs[name].append(run_load(runs_on[name], scenario, clients=clients, seconds=args.seconds))
            for name in scenarios:
                results[(name, clients)] = median_of(runs[name])
                report(f"  {name:<42} {fmt(results[(name, clients)])}")
                if args.each:
                    report(f"  {'':<42} repeats: " + ", ".join(f"{r.rps:.0f} req/s p99 {r.p99_ms:.1f} ms"
                                                                  for r in runs[name]))

    report("== ratios (goal in brackets)")
    for clients in CLIENTS:
        r = {name: results[(name, c)] for (name, c) in results if c == clients}
        insert = r["baseline: one INSERT"]
        create = r["create-task, new title"]
        report(f"  c={clients}: create / one-INSERT                 {create.rps / insert.rps:5.2f}x  [>= 0.5]")
        report(f"  c={clients}: create p99 / one-INSERT p99         {create.p99_ms / insert.p99_ms:5.2f}x  [<= 2]")
        report(f"  c={clients}: create+key / one-INSERT             "
               f"{r['create-task, new title + Idempotency-Key'].rps / insert.rps:5.2f}x  [>= 0.4]")
        report(f"  c={clients}: 409 path / successful create        "
               f"{r['create-task, 409 occupied'].rps / create.rps:5.2f}x  [>= 1.0]")
        report(f"  c={clients}: replay / one-INSERT                 "
               f"{r['create-task, idempotent replay'].rps / insert.rps:5.2f}x  [>= 1.0]")
        report(f"  c={clients}: bind 100,000 rows / bind 10 rows    "
               f"{r['bind over HTTP, 10 rows'].rps / r['bind over HTTP, 100,000 rows'].rps:5.2f}x slower  [<= 3]")
        report(f"  c={clients}: create persistent / CONN_MAX_AGE=0  "
               f"{create.rps / r['create-task, CONN_MAX_AGE=0'].rps:5.2f}x  [>= 4]")


if __name__ == "__main__":
    main()
