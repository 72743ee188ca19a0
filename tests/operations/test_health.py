"""SPEC §20 Health: /healthz while the process serves, /readyz when the database answers and
every migration is applied; both answered in front of the application (no key, no gate, no
rate limit, no log line)."""
from __future__ import annotations

import io
import json
import socket
import subprocess
import sys

import pytest
from django.db.migrations.recorder import MigrationRecorder

from fronts.operator import health
from tests.live_server import ROOT, server_env


def call(path: str, method: str = "GET", host: str = "10.0.0.7") -> tuple[str, dict, dict]:
    """The WSGI application as gunicorn calls it, with a Host no ALLOWED_HOSTS names."""
    from settings.wsgi import application

    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "SERVER_NAME": host, "SERVER_PORT": "80",
               "HTTP_HOST": host, "wsgi.input": io.BytesIO(), "wsgi.url_scheme": "http", "QUERY_STRING": "",
               "REMOTE_ADDR": "10.0.0.9"}
    started: dict = {}
    body = b"".join(application(environ, lambda status, headers: started.update(status=status,
                                                                                headers=dict(headers))))
    return started["status"], started["headers"], json.loads(body) if body else {}


@pytest.mark.django_db(transaction=True)
def test_healthz_and_readyz_answer_without_a_key_whatever_the_host(django_assert_max_num_queries):
    assert call("/healthz")[::2] == ("200 OK", {"status": "ok"})
    status, headers, body = call("/readyz")
    assert (status, body) == ("200 OK", {"status": "ready"}) and headers["Cache-Control"] == "no-store"
    with django_assert_max_num_queries(1):
        assert call("/readyz")[0] == "200 OK"  # once migrated, one statement
    assert call("/healthz", method="POST")[0] == "405 Method Not Allowed"
    assert call("/healthz", method="HEAD")[0] == "200 OK"


@pytest.mark.django_db(transaction=True)
def test_readyz_names_a_migration_not_applied():
    health._migrated.clear()
    last = MigrationRecorder.Migration.objects.filter(app="webhooks").order_by("-id").first()
    last.delete()  # as if the release's migration had not run yet
    try:
        status, _, body = call("/readyz")
        assert status == "503 Service Unavailable" and body["pending_migrations"] == [f"webhooks.{last.name}"]
    finally:
        MigrationRecorder.Migration.objects.create(app=last.app, name=last.name)
    assert call("/readyz")[0] == "200 OK"


def test_readyz_says_the_database_is_away_while_healthz_serves():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    script = ("from tests.operations.test_health import call; import json; "
              "print(json.dumps([call('/healthz')[0], call('/readyz')[0], call('/readyz')[2]]))")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env=server_env(DATABASE_URL=f"postgres://nobody@127.0.0.1:{port}/spaces"))
    healthz, readyz, body = json.loads(done.stdout.strip().splitlines()[-1])
    assert healthz == "200 OK" and readyz == "503 Service Unavailable", done.stderr
    assert body["status"] == "unready" and "connection" in body["database"]


def test_readyz_answers_in_time_when_the_database_hangs():
    """A server that takes the connection and never answers (a hung host, a full pool): /readyz
    says so within its READY_WITHIN instead of making the balancer's probe time out."""
    with socket.create_server(("127.0.0.1", 0)) as hung:  # listens, never answers
        script = ("from tests.operations.test_health import call; import json, time; started = time.monotonic(); "
                  "answer = call('/readyz'); print(json.dumps([answer[0], answer[2], time.monotonic() - started]))")
        done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                              env=server_env(DATABASE_URL=f"postgres://nobody@127.0.0.1:{hung.getsockname()[1]}/spaces"))
    status, body, _ = json.loads(done.stdout.strip().splitlines()[-1])
    assert status == "503 Service Unavailable", done.stderr
    assert body == {"status": "unready", "database": f"no answer within {health.READY_WITHIN:g} s"}
