"""Set-up shared by the benchmarks: a fresh PostgreSQL database and gunicorn servers."""
from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent


def bench_database_url() -> str:
    """BENCH_DATABASE_URL, or a database on the embedded server in .postgres/bench (started here;
    it keeps running for the next benchmark: `python -m devserver.embedded_postgres stop bench`)."""
    url = os.environ.get("BENCH_DATABASE_URL")
    if url:
        return url
    sys.path.insert(0, str(ROOT))
    from devserver import embedded_postgres

    return with_database(embedded_postgres.start("bench"), "spaces_bench")


def with_database(url: str, name: str) -> str:
    """``url`` naming database ``name`` on the same server."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def recreate_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres", scheme="postgresql"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def psycopg_dsn(url: str) -> str:
    """The benchmark's DATABASE_URL as libpq reads it (postgres:// is Django's spelling)."""
    return url.replace("postgres://", "postgresql://", 1)


def refresh_statistics(url: str) -> None:
    """ANALYZE, as autovacuum would have by now.

    Tables here start empty and grow by thousands of rows a second. Prepared statements
    keep their generic plans until the statistics change, and with autovacuum off (as on
    some benchmark machines) they never would: a plan picked for an empty table would
    then stay, which no production server with autovacuum on (the default) sees.
    """
    import psycopg

    with psycopg.connect(psycopg_dsn(url), autocommit=True) as conn:
        conn.execute("ANALYZE")


def autovacuum_note(url: str) -> str:
    import psycopg

    with psycopg.connect(psycopg_dsn(url), autocommit=True) as conn:
        setting = conn.execute("SHOW autovacuum").fetchone()[0]
    return f"autovacuum is {setting} on this server; each round starts with ANALYZE"


def setup_django(url: str, conn_max_age: int = 600) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = "settings.base"
    os.environ.setdefault("DJANGO_DEBUG", "1")  # only this process's set-up; the servers run with debug off
    os.environ["DJANGO_CONN_MAX_AGE"] = str(conn_max_age)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def fresh_database() -> str:
    """A fresh benchmark database, migrated, with this process's Django set up on it; its URL."""
    url = bench_database_url()
    recreate_database(url)
    setup_django(url)
    return url


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_serving(process: subprocess.Popen, port: int, path: str, name: str, seconds: float = 30) -> None:
    """Until the server on ``port`` answers ``path`` (any status); RuntimeError if it exits or
    takes longer than ``seconds``."""
    import http.client

    deadline = time.monotonic() + seconds
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", path)
            if conn.getresponse().status < 500:
                return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not start")
        time.sleep(0.2)


@contextmanager
def gunicorn(url: str, *, workers: int = 2, conn_max_age: int = 600, root: Path = ROOT,
             worker_class: str = "sync", threads: int = 1, shipped: bool = False,
             processes: list | None = None, python: str = sys.executable) -> Iterator[str]:
    """A gunicorn serving the checkout at ``root`` (this one unless told) on a free port, run
    by ``python``: ``workers`` of ``worker_class`` with persistent connections, or with
    ``shipped`` the project's own gunicorn.conf.py as it is (WEB_CONCURRENCY=``workers``).
    ``processes`` receives the master process."""
    port = free_port()
    env = dict(os.environ)
    env.update(
        DATABASE_URL=url,
        DJANGO_SETTINGS_MODULE="settings.benchmark",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_SECURE_SSL_REDIRECT="0",
        DJANGO_CONN_MAX_AGE=str(conn_max_age),
        PYTHONPATH=str(root),
    )
    if shipped:
        env["WEB_CONCURRENCY"] = str(workers)
        command = ["--bind", f"127.0.0.1:{port}", "--log-level", "warning"]
    else:
        env["DJANGO_DB_POOL_SIZE"] = "0"  # a connection per worker, whatever gunicorn.conf.py says
        command = ["settings.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
                   "--worker-class", worker_class, "--threads", str(threads), "--log-level", "warning",
                   "--backlog", "2048"]
    process = subprocess.Popen([python, "-m", "gunicorn", *command], cwd=root, env=env)
    if processes is not None:
        processes.append(process)
    try:
        wait_until_serving(process, port, "/v1/reference?section=tasks", "gunicorn")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
