"""Real gunicorn processes against the test database, for HTTP-level race tests."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from urllib.parse import quote

import httpx
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_database_url() -> str:
    """The URL of the database pytest-django created, so the servers see the test's rows."""
    s = connection.settings_dict
    auth = quote(s["USER"], safe="") + (f":{quote(s['PASSWORD'], safe='')}" if s["PASSWORD"] else "")
    if s["HOST"].startswith("/"):  # a Unix socket folder (the embedded server)
        return f"postgres://{auth}@/{s['NAME']}?host={quote(s['HOST'], safe='/')}"
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or '5432'}/{s['NAME']}"


def server_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=test_database_url(),
        DJANGO_SETTINGS_MODULE="settings.base",
        DJANGO_DEBUG="1",
        PYTHONPATH=str(ROOT),
        SPACES_REQUEST_LOG_LEVEL="WARNING",  # no line per request in the tests' output (tests/operations asks)
    )
    env.update(extra)
    return env


@contextmanager
def gunicorn(workers: int = 4, threads: int | None = None, **env: str) -> Iterator[str]:
    """The project's gunicorn.conf.py (threaded workers, pooled connections), with ``workers``
    and, when given, ``threads`` instead of its own counts."""
    with gunicorn_process(workers, threads, **env) as (base, _):
        yield base


@contextmanager
def gunicorn_process(workers: int = 4, threads: int | None = None, **env: str
                     ) -> Iterator[tuple[str, subprocess.Popen]]:
    """Like ``gunicorn``, also yielding the master process (its children are the workers)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "settings.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", str(workers), *(["--threads", str(threads)] if threads else []), "--timeout", "60",
         "--log-level", "warning"],
        cwd=ROOT,
        env=server_env(**env),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/v1/reference?section=tasks", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("gunicorn did not start")
            time.sleep(0.2)
        yield base, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
