"""SPEC §11: the service behind a transaction-mode pooler. A real PgBouncer (Debian's package; bin/test
installs it where it may) in front of the test database, with prepared statements and server-side
cursors off as such a pooler needs; the create and `next` races and an export run through it."""
from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx
import psycopg
import pytest
from django.db import connection

from tasks.models import Claim, Task
from tests.factories import create_task
from tests.allocation.test_races import run_clients
from tests.conftest import load_agent_lab
from tests.factories import member_with_key
from tests.live_server import ROOT, free_port, gunicorn, server_env

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

S = "/v1/spaces/agent-lab"
POOLER_OPTIONS = "prepare_threshold=none&server_side_binding=false&disable_server_side_cursors=true"


@contextmanager
def pgbouncer(server: dict | None = None) -> Iterator[str]:
    """PgBouncer in transaction mode, configured as docs/deploying.md says, before the test
    database (or ``server``: HOST, PORT, USER, NAME); yields the DATABASE_URL through it.
    It refuses to run as root: it runs as the database server's own user then."""
    binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
    assert os.path.exists(binary), "PgBouncer is missing: apt-get install pgbouncer (bin/test does, as root)"
    db = server or connection.settings_dict
    host, port = db["HOST"] or "127.0.0.1", db["PORT"] or "5432"
    folder = Path(tempfile.mkdtemp(prefix="pgbouncer-"))
    listen = free_port()
    (folder / "users.txt").write_text(f'"{db["USER"]}" ""\n')
    (folder / "pgbouncer.ini").write_text(f"""[databases]
* = host={host} port={port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {listen}
unix_socket_dir =
auth_type = trust
auth_file = {folder / "users.txt"}
pool_mode = transaction
max_client_conn = 500
default_pool_size = 20
ignore_startup_parameters = extra_float_digits,options
server_login_retry = 1
logfile = {folder / "pgbouncer.log"}
pidfile = {folder / "pgbouncer.pid"}
""")
    command = [binary, str(folder / "pgbouncer.ini")]
    if os.geteuid() == 0:
        owner = os.stat(host).st_uid if host.startswith("/") else 0
        user = pwd.getpwuid(owner).pw_name if owner != 0 else "postgres"
        shutil.chown(folder, user)
        for path in folder.iterdir():
            shutil.chown(path, user)
        command = ["runuser", "-u", user, "--", *command]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", listen), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log = (folder / "pgbouncer.log").read_text() if (folder / "pgbouncer.log").exists() else ""
                    raise RuntimeError(f"pgbouncer did not start: {process.stdout.read() if process.poll() else ''}"
                                       f"{log}")
                time.sleep(0.1)
        yield f"postgres://{db['USER']}@127.0.0.1:{listen}/{db['NAME']}?{POOLER_OPTIONS}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


def test_racing_creates_and_next_through_a_transaction_mode_pooler():
    space = load_agent_lab()
    keys = [member_with_key(space, "writer", f"agent-{i}")[1] for i in range(16)]
    phrasings = ["Benchmark harness for code-review agents", "Build a benchmark for code review agents",
                 "review agent benchmark", "code review evaluation suite"]
    with pgbouncer() as url, gunicorn(workers=4, DATABASE_URL=url) as base:
        def creates(index: int) -> list:
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {keys[index]}"}, timeout=60) as http:
                return [http.post(f"{S}/tasks", json={"title": phrasings[(index + n) % 4]},
                                  headers={"Idempotency-Key": f"c{index}-{n}"}) for n in range(4)]

        answers = run_clients(16, creates)
        failed = [r.text[:2000] for r in answers if r.status_code >= 500]
        assert not failed, failed[0]
        assert sorted({r.status_code for r in answers}) in ([201, 409], [201])
        created = [r for r in answers if r.status_code == 201]
        assert len(created) == 1 and Task.objects.filter(work_item_id="T1").count() == 1
        winner = created[0].json()["number"]
        for refused in (r.json() for r in answers if r.status_code == 409):
            # Occupied names the task; reserved (the winner was still being created) says retry.
            assert refused["code"] in ("conflict_key_occupied", "conflict_key_reserved"), refused
            if refused["code"] == "conflict_key_occupied":
                assert refused["winner"] == {"type": "task", "id": winner, "status": "open"}, refused

        for n in range(100):
            create_task(space=space, actor=space.members.first(), title=f"job {n}")

        def claims(index: int) -> list:
            taken = []
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {keys[index]}"}, timeout=60) as http:
                while (task := http.post(f"{S}/next", json={}).json()["task"]) is not None:
                    taken.append(task["number"])
            return taken

        handed = run_clients(16, claims)
    assert len(handed) == len(set(handed)) == 101  # each open task once (the T1 task too), none lost
    assert Claim.objects.count() == 101


def test_an_export_through_a_transaction_mode_pooler(steward, space):
    for n in range(7):
        create_task(space=space, actor=steward.member, title=f"export row {n}")
    with pgbouncer() as url:
        export_id = steward.api.post(f"{S}/exports").json()["id"]
        env = server_env(DATABASE_URL=url, SPACES_EXPORT_BATCH_ROWS="3")
        worker = subprocess.run([os.sys.executable, "manage.py", "run_worker", "--once"], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=120)
        assert worker.returncode == 0, worker.stderr
        token = steward.api.post(f"{S}/exports/{export_id}/share").json()["token"]
        with gunicorn(workers=2, DATABASE_URL=url) as base:
            document = httpx.get(f"{base}/v1/shares/{token}", timeout=60).json()
    assert [t["title"] for t in document["tasks"]] == [f"export row {n}" for n in range(7)]
    assert len(document["history"]) == 7


def test_a_database_restart_behind_the_pooler_is_over_in_seconds():
    """With docs/deploying.md's ``server_login_retry = 1`` PgBouncer tries a failed login again
    within a second: a restart of the database costs the agents its own downtime, not the
    15 s PgBouncer waits by default after a login fails. A database of its own, restarted."""
    from devserver import embedded_postgres

    name = "pooler-restart"
    embedded_postgres.start(name)
    try:
        pid_lines = (embedded_postgres.data_dir(name) / "postmaster.pid").read_text().splitlines()
        server = {"HOST": pid_lines[4].strip(), "PORT": pid_lines[3].strip(), "USER": "postgres",
                  "NAME": embedded_postgres.DATABASE}
        with pgbouncer(server) as url:
            dsn = url.split("?")[0].replace("postgres://", "postgresql://", 1)

            def answers() -> bool:
                try:
                    with psycopg.connect(dsn, autocommit=True, connect_timeout=2, prepare_threshold=None) as conn:
                        return conn.execute("SELECT 1").fetchone() == (1,)
                except psycopg.Error:
                    return False

            assert answers()
            embedded_postgres.stop(name)
            # An agent's query while the server is down: PgBouncer's login for it fails (the
            # query waits in the pooler meanwhile), which starts its server_login_retry.
            waiting = threading.Thread(target=answers, daemon=True)
            waiting.start()
            time.sleep(1)
            restart(name)
            back = time.monotonic()
            while not answers():
                assert time.monotonic() - back < 60, "the pooler never reached the restarted server"
                time.sleep(0.1)
            waited = time.monotonic() - back
            waiting.join(timeout=30)
    finally:
        embedded_postgres.stop(name)
    assert waited < 5, f"{waited:.1f} s after the server was back"


def restart(name: str) -> None:
    """Start a stopped embedded server again with the options it ran with (pg_ctl restart reads
    them from postmaster.opts)."""
    from devserver.embedded_postgres import data_dir, library

    embedded_postgres = library()
    folder = data_dir(name)
    server = embedded_postgres.get_server(folder, cleanup_mode=None)
    embedded_postgres.pg_ctl(["-w", "restart"], pgdata=folder, user=server.system_user)
