"""The counters, gauges and histograms each process keeps (SPEC §20), apart from the code
that reads them out (``fronts.operator.metrics``), so the apps that count import nothing else.
Under gunicorn every process writes them to ``PROMETHEUS_MULTIPROC_DIR`` (gunicorn.conf.py),
and a scrape sums them across the host."""
from __future__ import annotations

from typing import Any

from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics

# A ``*_created`` series beside every counter and histogram is a process's start time, which a
# scrape summed across processes cannot use: 243 of 1,775 samples were that noise.
disable_created_metrics()

REQUESTS = Counter("spaces_requests_total", "Requests answered, by route template, method and status",
                   ["route", "method", "status"])
LATENCY = Histogram("spaces_request_seconds", "Time to answer a request, by route template and method",
                    ["route", "method"], buckets=(.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60))
REFUSALS = Counter("spaces_refusals_total", "Refusals answered, by status and code", ["status", "code"])
REPLAYS = Counter("spaces_idempotent_replays_total", "Answers replayed for a retried Idempotency-Key")
WAITS = Gauge("spaces_waits_in_progress", "Requests waiting for work or events right now", multiprocess_mode="livesum")
PICKUP = Histogram("spaces_pickup_seconds", "From the wake-up of a waiting next to its answer",
                   buckets=(.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5))
LAPSES = Counter("spaces_lapses_total", "Claims recorded as lapsed")
DELIVERIES = Counter("spaces_webhook_deliveries_total", "Webhook tries, by outcome (delivered, retry, failed)",
                     ["outcome"])
POOL_IN_USE = Gauge("spaces_db_pool_connections_in_use", "Database connections of the pool in use",
                    multiprocess_mode="livesum")
POOL_SIZE = Gauge("spaces_db_pool_connections", "Database connections the pool holds", multiprocess_mode="livesum")


_children: dict[tuple, Any] = {}


def child(metric, *labels: str):
    """``metric.labels(*labels)``, kept: the library checks and locks on every ``labels`` call,
    which cost more than the count itself on every request (docs/benchmarks.md)."""
    key = (metric, labels)
    found = _children.get(key)
    if found is None:
        found = _children[key] = metric.labels(*labels)
    return found


def note_pool() -> None:
    """The process's connection pool, as a request leaves it (when there is a pool)."""
    from django.db import connection

    if not connection.settings_dict.get("OPTIONS", {}).get("pool"):
        return
    pool = connection.pool
    if pool is None:
        return
    stats = pool.get_stats()
    POOL_SIZE.set(stats.get("pool_size", 0))
    POOL_IN_USE.set(stats.get("pool_size", 0) - stats.get("pool_available", 0))
