"""How the service is served in production (SPEC §9, §15): gunicorn reads this file from the
project root by default, so ``gunicorn`` alone (or with ``--bind``) serves it this way.

Threads, because agents wait: a waited ``next`` holds its request for up to 60 s, and a sync
worker would be taken whole by it. A waiting request holds a thread blocked on an event (no
CPU, no connection, no transaction), so each worker carries many of them beside the requests
that run; its connections come from a pool shared by its threads. Why these counts, with
figures: docs/deploying.md and docs/benchmarks.md (benchmarks/live_bench.py).
"""
import os
import shutil
import tempfile

wsgi_app = "settings.wsgi:application"  # it answers /healthz and /readyz itself (docs/deploying.md)
# The master imports the application once and forks ready workers: a worker that dies (a
# SIGKILL, the out-of-memory killer) is replaced in about 60 ms instead of the 1.5 s an import
# takes, so its clients' retries are answered at once (SPEC §7.1). Nothing opens a connection
# or a thread at import; the wait listener starts in the worker (tasks.waiting). A code change
# therefore needs a restart, not a HUP.
preload_app = True
worker_class = "gthread"
# WEB_CONCURRENCY, as gunicorn reads it; 2 workers on this 2-core machine measured best.
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
# Each waiting agent holds one thread while it waits: enough for hundreds per worker, beside
# the requests that run. Idle threads cost memory only (their stacks), and none are started
# before they are needed.
threads = int(os.environ.get("GUNICORN_THREADS", "256"))
worker_connections = 2048
# A waited next answers within 60 s; the worker's own heartbeat is its main loop's, which
# waiting threads never block.
timeout = 90
graceful_timeout = 70  # a restart lets the waits in flight finish
keepalive = 5
backlog = 2048
# The request running in a worker takes a connection from its pool (a few: admin pages and
# the MCP front may hold one a moment longer).
os.environ.setdefault("DJANGO_DB_POOL_SIZE", "4")
# One request runs at a time in each worker (common.gate); waiting ones give their turn back.
os.environ.setdefault("SPACES_RUNNING_PER_PROCESS", "1")
# Waits a worker holds at most (SPEC §15 Capacity): three quarters of its threads, so the requests
# that run always find a thread however many agents wait; a wait past it answers 503 at once.
os.environ.setdefault("SPACES_WAITS_PER_PROCESS", str(max(1, threads * 3 // 4)))


# Metrics (SPEC §20, fronts/operator/metrics.py): each process writes its counters to files in one
# folder, which a scrape of any worker sums. A fresh folder for each start of the master, so
# nothing is counted twice across restarts; a worker's files are marked dead when it exits.
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="spaces-metrics-")
    _metrics_folder_made_here = os.environ["PROMETHEUS_MULTIPROC_DIR"]
else:
    _metrics_folder_made_here = None


def child_exit(server, worker) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server) -> None:
    if _metrics_folder_made_here:
        shutil.rmtree(_metrics_folder_made_here, ignore_errors=True)


def post_fork(server, worker) -> None:
    """Traces (telemetry/tracing.py, when OTEL_* ask): each worker's own exporter thread."""
    from telemetry import tracing

    tracing.start()


def post_worker_init(worker) -> None:
    """A worker told to stop (or whose master is gone) ends its agents' waits within a second:
    they answer {"task": null} and ask again, of a worker that serves; the worker then exits
    instead of holding their requests until the graceful timeout."""
    from tasks.waiting import REGISTRY

    parent_alive = getattr(worker, "is_parent_alive", lambda: True)
    REGISTRY.serving = lambda: worker.alive and parent_alive()
