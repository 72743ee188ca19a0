"""``GET /healthz`` and ``GET /readyz`` (SPEC §20), answered in front of the application.

A load balancer asks these every few seconds, so they are answered by the WSGI entry point
itself, before Django's middleware, the running-slot gate, authentication, rate limits or
logging: a health check never waits behind a request, never counts against an address, and
never writes a log line. ``/healthz`` touches nothing (the process serves); ``/readyz`` asks
the database one statement, and until this process has seen every migration applied, the
migration graph too (then it remembers: a running process's migrations do not come undone).
"""
from __future__ import annotations

import json
import threading
from typing import Any, Callable, Iterable

HEALTH, READY = "/healthz", "/readyz"
_migrated = threading.Event()  # set once this process saw every migration applied


def pending_migrations() -> list[str]:
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]


def check_database() -> tuple[int, dict[str, Any]]:
    """200 when the database answers and every migration is applied; else 503 saying what is missing."""
    from django.db import DatabaseError, connection

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        if not _migrated.is_set():
            pending = pending_migrations()
            if pending:
                return 503, {"status": "unready", "database": "ok", "pending_migrations": pending}
            _migrated.set()
        return 200, {"status": "ready"}
    except DatabaseError as error:
        return 503, {"status": "unready", "database": str(error).strip().splitlines()[0][:200]}
    finally:
        connection.close()  # back to the pool, or closed: the checking thread keeps none


# A balancer's probe gives up after 1-5 s: /readyz answers within READY_WITHIN whatever the
# database does (a full pool waits 10 s for a connection, a host that drops packets longer).
# The check runs on one thread of its own; a probe arriving while one is under way waits on
# that one, so a database that hangs holds one thread, not one per probe. (A thread a check:
# a new connection without a pool, as before, where a probe every few seconds costs ~5 ms.)
READY_WITHIN = 2.0
_check_lock = threading.Lock()
_under_way: Check | None = None


class Check:
    """One database check on a daemon thread of its own (one that hangs never holds up the
    process's exit)."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.answer: tuple[int, dict[str, Any]] = (503, {"status": "unready", "database": "not checked"})
        threading.Thread(target=self.run, name="readyz", daemon=True).start()

    def run(self) -> None:
        try:
            self.answer = check_database()
        finally:
            self.done.set()


def readiness() -> tuple[int, dict[str, Any]]:
    global _under_way
    with _check_lock:
        if _under_way is None or _under_way.done.is_set():
            _under_way = Check()
        check = _under_way
    if not check.done.wait(READY_WITHIN):
        return 503, {"status": "unready", "database": f"no answer within {READY_WITHIN:g} s"}
    return check.answer


def serving() -> bool:
    """False once this server process is told to stop (gunicorn.conf.py), so balancers drain it."""
    from tasks.waiting import REGISTRY

    return REGISTRY.serving is None or REGISTRY.serving()


def wrap(app: Callable) -> Callable:
    def application(environ: dict, start_response: Callable) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path not in (HEALTH, READY):
            return app(environ, start_response)
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            status, body = 405, {"status": "method not allowed"}
        elif path == HEALTH:
            status, body = (200, {"status": "ok"}) if serving() else (503, {"status": "stopping"})
        else:
            status, body = readiness()
        payload = json.dumps(body).encode()
        reason = {200: "OK", 405: "Method Not Allowed", 503: "Service Unavailable"}[status]
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(payload))),
                   ("Cache-Control", "no-store")]
        if status == 405:
            headers.append(("Allow", "GET, HEAD"))
        start_response(f"{status} {reason}", headers)
        return [b"" if environ.get("REQUEST_METHOD") == "HEAD" else payload]

    return application
