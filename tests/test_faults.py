"""A retry after a SIGKILL gets the original answer at once (SPEC §7.1): real gunicorn workers, real kills.

For create, next and done, two moments:
- inside the work: the worker's statement waits on a lock the test holds; the test
  kills the worker, then releases the lock. The dead attempt's transaction ends with
  its connection, so nothing of it stays but create's committed reservation.
- after the work committed, before the client got the answer: once the operation is
  settled in the database, the test kills the worker and the client drops its
  connection without reading.

Each test first checks that the state it means to test was reached, then that the retry
answers within a few seconds (never after the 30 s operation lease) and that the work
was done once.
"""
from __future__ import annotations

import json
import signal
import socket
import threading
import time
from contextlib import contextmanager

import httpx
import psutil
import psycopg
import pytest
from django.db import connection

from allocation.models import Reservation
from idempotency.models import Operation, OperationState
from spaces import services as space_services
from tasks.models import Attempt, Claim, Task
from tests.conftest import load_agent_lab
from tests.factories import create_task, member_with_key
from tests.live_server import gunicorn_process

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

S = "/v1/spaces/agent-lab"
FEW_SECONDS = 5.0


def database(autocommit: bool = False) -> psycopg.Connection:
    s = connection.settings_dict
    return psycopg.connect(host=s["HOST"] or None, port=s["PORT"] or None, user=s["USER"] or None,
                           password=s["PASSWORD"] or None, dbname=s["NAME"], autocommit=autocommit)


def wait_until(condition, what: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never reached: {what}"
        time.sleep(0.02)


def worker_of(master) -> psutil.Process:
    workers = psutil.Process(master.pid).children()
    assert len(workers) == 1
    return workers[0]


def waiting_on_lock(watcher: psycopg.Connection, statement: str) -> bool:
    row = watcher.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE %s",
        [f"%{statement}%"]).fetchone()
    return row[0] == 1


def retry_until_answered(base: str, method_path: str, key: str, idempotency_key: str, body: dict) -> httpx.Response:
    """The client's retry: at once, and again after retry_after_ms while the attempt is in progress."""
    started = time.monotonic()
    while True:
        response = httpx.post(base + method_path, json=body, timeout=FEW_SECONDS,
                              headers={"Authorization": f"Bearer {key}", "Idempotency-Key": idempotency_key})
        if response.status_code != 409 or response.json().get("error") != "idempotency_in_progress":
            break
        assert time.monotonic() - started < FEW_SECONDS, "the retry waited out a dead attempt"
        time.sleep(response.json()["retry_after_ms"] / 1000)
    assert time.monotonic() - started < FEW_SECONDS
    return response


def request_bytes(path: str, key: str, idempotency_key: str, body: dict) -> bytes:
    payload = json.dumps(body).encode()
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
            f"Idempotency-Key: {idempotency_key}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n").encode() + payload


@contextmanager
def connection_dropped_before_the_answer(base: str, request: bytes):
    """Send ``request`` on a raw connection that the client drops without reading a byte of
    the answer, as a client whose network failed does."""
    host, port = base.removeprefix("http://").split(":")
    client = socket.create_connection((host, int(port)))
    try:
        client.sendall(request)
        yield
    finally:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        client.close()  # a reset: whatever the server wrote is thrown away unread


# --- The scenarios ---------------------------------------------------------------------------------


@pytest.fixture
def agents():
    space = load_agent_lab()
    writer, key = member_with_key(space, "writer", "agent")
    return space, writer, key


def killed_inside_the_work(base, master, *, lock_sql: str, statement: str, path: str, key: str, body: dict):
    """Hold ``lock_sql``, send the request, kill its worker while its ``statement`` waits, release."""
    # The watcher reads pg_stat_activity outside a transaction: inside one it sees a snapshot.
    with database() as blocker, database(autocommit=True) as watcher:
        blocker.execute(lock_sql)
        sender = threading.Thread(target=lambda: send_ignoring_errors(base + path, key, body))
        sender.start()
        wait_until(lambda: waiting_on_lock(watcher, statement), f"the worker waits in {statement}")
        worker_of(master).send_signal(signal.SIGKILL)
        sender.join(10)
        blocker.rollback()  # release: the dead attempt's statement runs, then its transaction dies with it


def send_ignoring_errors(url: str, key: str, body: dict) -> None:
    try:
        httpx.post(url, json=body, timeout=30, headers={"Authorization": f"Bearer {key}", "Idempotency-Key": "K1"})
    except httpx.HTTPError:
        pass  # the worker died: no answer, as the test wants


def test_create_killed_inside_its_work_is_retried_at_once_and_creates_once(agents):
    space, writer, key = agents
    body = {"title": "Retry policy"}
    with gunicorn_process(workers=1) as (base, master):
        killed_inside_the_work(base, master, lock_sql="LOCK TABLE tasks_task IN SHARE MODE",
                               statement='INSERT INTO "tasks_task"', path=f"{S}/tasks", key=key, body=body)
        # One transaction (SPEC §4.5 as amended): nothing of the attempt stayed, reservation included
        assert not Reservation.objects.exists() and not Operation.objects.exists() and not Task.objects.exists()
        retried = retry_until_answered(base, f"{S}/tasks", key, "K1", body)
    assert retried.status_code == 201, retried.text
    assert Task.objects.count() == 1 and retried.json()["number"] == 1
    assert not Reservation.objects.exists()
    assert Operation.objects.get(key="K1").state == OperationState.COMPLETED


def test_next_killed_inside_its_work_is_retried_at_once_and_claims_once(agents):
    space, writer, key = agents
    for title in ("Retry policy", "Write the onboarding guide"):
        create_task(space=space, actor=writer, title=title)
    with gunicorn_process(workers=1) as (base, master):
        # The claim statement, by its opening: pg_stat_activity shows a statement's first KiB only.
        killed_inside_the_work(base, master, lock_sql="LOCK TABLE tasks_task IN SHARE MODE",
                               statement="WITH due AS (SELECT EXISTS", path=f"{S}/next", key=key, body={})
        assert not Claim.objects.exists() and not Operation.objects.exists()  # nothing of the attempt stayed
        retried = retry_until_answered(base, f"{S}/next", key, "K1", {})
    assert retried.status_code == 200 and retried.json()["task"]["number"] == 1
    assert Claim.objects.filter(member=writer, ended_at=None).count() == 1


def test_done_killed_inside_its_work_is_retried_at_once_and_attempts_once(agents):
    space, writer, key = agents
    task = create_task(space=space, actor=writer, title="Retry policy")
    post = space_services.create_post(space=space, author=writer, body="the policy")
    with gunicorn_process(workers=1) as (base, master):
        killed_inside_the_work(base, master, lock_sql=f"SELECT 1 FROM tasks_task WHERE id = {task.pk} FOR UPDATE",
                               statement='SELECT "tasks_task"."id"', path=f"{S}/tasks/1/done", key=key, body={"post": post.pk})
        assert not Attempt.objects.exists()
        retried = retry_until_answered(base, f"{S}/tasks/1/done", key, "K1", {"post": post.pk})
    assert retried.status_code == 201, retried.text
    assert Attempt.objects.count() == 1 and retried.json()["attempt"]["number"] == 1


def test_create_killed_while_settling_its_answer_leaves_no_work_without_it(agents):
    """The moment between the work and its settled answer: settlement waits on a lock the test
    holds. The work must not be visible then, and the retry must not refuse against itself."""
    space, writer, key = agents
    body = {"title": "Retry policy"}
    with gunicorn_process(workers=1) as (base, master):
        killed_inside_the_work(base, master, lock_sql="LOCK TABLE allocation_operationobservation IN SHARE MODE",
                               statement="INSERT INTO", path=f"{S}/tasks", key=key, body=body)
        assert not Task.objects.exists()
        retried = retry_until_answered(base, f"{S}/tasks", key, "K1", body)
    assert retried.status_code == 201, retried.text
    assert Task.objects.count() == 1 and not Reservation.objects.exists()


@pytest.mark.parametrize("route", ["create", "next", "done"])
def test_an_answer_lost_after_the_work_committed_is_replayed_at_once(agents, route):
    space, writer, key = agents
    if route == "create":
        path, body = f"{S}/tasks", {"title": "Retry policy"}
    elif route == "next":
        create_task(space=space, actor=writer, title="Retry policy")
        path, body = f"{S}/next", {}
    else:
        create_task(space=space, actor=writer, title="Retry policy")
        post = space_services.create_post(space=space, author=writer, body="the policy")
        path, body = f"{S}/tasks/1/done", {"post": post.pk}
    work = {"create": Task.objects.all(), "next": Claim.objects.all(), "done": Attempt.objects.all()}[route]
    with gunicorn_process(workers=1) as (base, master):
        with connection_dropped_before_the_answer(base, request_bytes(path, key, "K1", body)):
            wait_until(work.exists, "the work committed")
            worker_of(master).send_signal(signal.SIGKILL)
        # Never the work without its answer: both committed in one transaction.
        stored = Operation.objects.get(key="K1", state=OperationState.COMPLETED)
        retried = retry_until_answered(base, path, key, "K1", body)
    assert retried.headers["Idempotent-Replayed"] == "true"
    assert retried.status_code == stored.response_status and retried.json() == stored.response_body
    assert Task.objects.count() == 1
    assert Claim.objects.count() == (1 if route == "next" else 0)
    assert Attempt.objects.count() == (1 if route == "done" else 0)
