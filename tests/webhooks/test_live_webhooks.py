"""Webhooks sent by a real ``run_worker`` process: killed mid-delivery it loses nothing (the
delivery goes again after its lease, with the same ``webhook-id``), and told to stop it lets
the deliveries in flight finish."""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections import deque

import httpx
import pytest
from django.db import connection
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from tests.conftest import ApiClient, load_agent_lab
from tests.factories import member_with_key
from tests.live_server import ROOT, server_env
from tests.webhooks.receiver import Receiver
from webhooks.models import Delivery, DeliveryState, Endpoint

S = "/v1/spaces/agent-lab"
LOCAL = {"SPACES_WEBHOOK_ALLOW_HTTP": "1", "SPACES_WEBHOOK_ALLOW_PRIVATE": "1"}


@pytest.fixture
def steward(settings, transactional_db) -> ApiClient:
    """A steward of agent-lab; the test's process may register endpoints on this machine."""
    settings.SPACES_WEBHOOK_ALLOW_HTTP = settings.SPACES_WEBHOOK_ALLOW_PRIVATE = True
    _, key = member_with_key(load_agent_lab(), "steward")
    return ApiClient(key)


def start_worker() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "manage.py", "run_worker", "--poll", "0.2"], cwd=ROOT,
                            env=server_env(**LOCAL), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_a_worker_killed_mid_delivery_loses_nothing(steward):
    receiver = Receiver(delay=30.0)  # the first delivery hangs until the worker is killed
    worker = start_worker()
    try:
        hook = steward.post(f"{S}/webhooks", {"url": receiver.url}).json()
        numbers = [steward.post(f"{S}/tasks", {"title": f"Killed mid-delivery {n}"}).json()["id"] for n in range(3)]
        assert len(receiver.wait_for(1, 20)) == 1, worker.stderr
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        head = Delivery.objects.filter(endpoint_id=hook["id"]).order_by("id").first()
        assert head.state == DeliveryState.PENDING and head.attempts == 0  # sent, never recorded
        receiver.delay = 0.0
        Endpoint.objects.filter(pk=hook["id"]).update(lease_until=timezone.now())  # its lease has run out
        worker = start_worker()
        arrived = receiver.wait_for(4, 20)
        assert len(arrived) == 4, worker.stderr
        bodies = [Webhook(hook["secret"]).verify(r.body, r.headers) for r in arrived]
        assert [b["task"] for b in bodies] == [numbers[0]] + numbers  # the first again, then the rest in order
        assert arrived[0].headers["webhook-id"] == arrived[1].headers["webhook-id"]
        assert len({r.headers["webhook-id"] for r in arrived}) == 3
        deadline = time.monotonic() + 10
        while Delivery.objects.filter(endpoint_id=hook["id"], state="pending").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert Delivery.objects.filter(endpoint_id=hook["id"], state="delivered").count() == 3
    finally:
        worker.kill()
        worker.wait(10)
        receiver.close()


@pytest.mark.slow
def test_a_stopped_worker_finishes_the_delivery_in_flight(steward):
    receiver = Receiver(delay=2.0, answers=deque([500]))
    worker = start_worker()
    try:
        hook = steward.post(f"{S}/webhooks", {"url": receiver.url}).json()
        steward.post(f"{S}/tasks", {"title": "Answered 500 first"})
        assert len(receiver.wait_for(1, 20)) == 1
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=30)
        assert worker.returncode == 128 + signal.SIGTERM and "Stopped (SIGTERM)" in err
        [pending] = Delivery.objects.filter(endpoint_id=hook["id"])
        assert pending.attempts == 1 and pending.tries.get().status_code == 500  # recorded before it stopped
        given_back = Endpoint.objects.get(pk=hook["id"])
        assert given_back.lease_token == "" and given_back.lease_until <= timezone.now()  # the lease ended
    finally:
        worker.kill()
        worker.wait(10)
        receiver.close()


@pytest.mark.slow
def test_deliveries_outlive_the_workers_database_connections(steward):
    """The database dropped every connection of the worker (a restart, ``pg_terminate_backend``)
    while deliveries were due: it comes back, and every event arrives, none under two ids."""
    receiver = Receiver()
    worker = start_worker()
    try:
        hook = steward.post(f"{S}/webhooks", {"url": receiver.url}).json()
        steward.post(f"{S}/tasks", {"title": "Before the connections went"})
        assert len(receiver.wait_for(1, 20)) == 1, worker.stderr
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
                           "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        numbers = [steward.post(f"{S}/tasks", {"title": f"After the connections went {n}"}).json()["id"]
                   for n in range(3)]
        arrived = receiver.wait_for(4, 30)
        assert len(arrived) >= 4 and worker.poll() is None
        bodies = [Webhook(hook["secret"]).verify(r.body, r.headers) for r in arrived]
        assert [b["task"] for b in bodies][-3:] == numbers
        by_id = {r.headers["webhook-id"]: b["seq"] for r, b in zip(arrived, bodies)}
        assert len(set(by_id.values())) == len(by_id) == 4  # one id per event, whatever went twice
    finally:
        worker.terminate()
        worker.communicate(timeout=30)
        receiver.close()


@pytest.mark.slow
def test_deliveries_due_while_the_database_restarts_arrive_when_it_is_back(settings):
    """A database of its own, stopped while a try is in flight (so the worker can neither record
    it nor give its lease back) and restarted: the worker says the database went and came back,
    gives the lease back, and every event arrives once it is back, not a lease (a minute) later."""
    from devserver import embedded_postgres
    from tests.live_server import gunicorn
    from tests.test_pgbouncer import restart

    name, run = "webhooks-restart", uuid.uuid4().hex[:8]  # titles of this run, should a database be left over
    url = embedded_postgres.start(name)
    receiver = Receiver(answers=deque([503]), delay=2.0)  # the first try is in flight while the database stops
    worker, out, err = None, "", ""
    try:
        env = {**LOCAL, "DATABASE_URL": url}
        loaded = subprocess.run([sys.executable, "manage.py", "load_demo", "--migrate"], cwd=ROOT, env=server_env(**env),
                                capture_output=True, text=True, timeout=300)
        assert loaded.returncode == 0, loaded.stderr
        key = loaded.stdout.strip().splitlines()[-1]
        worker = subprocess.Popen([sys.executable, "manage.py", "run_worker", "--poll", "0.2"], cwd=ROOT,
                                  env=server_env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with gunicorn(workers=1, **env) as base:
            api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30)
            hook = api.post(f"{S}/webhooks", json={"url": receiver.url, "types": ["task.created"]}).json()
            numbers = [api.post(f"{S}/tasks", json={"title": f"Due across a restart {run} {n}"}).json()["number"]
                       for n in range(2)]
            assert len(receiver.wait_for(1, 20)) == 1
            embedded_postgres.stop(name)
            receiver.delay = 0.0
            assert receiver.wait_answered(1, 20) == 1
            time.sleep(1)  # the worker finds it cannot record the try
            restart(name)
            arrived = receiver.wait_for(3, 40)
        bodies = [Webhook(hook["secret"]).verify(r.body, r.headers) for r in arrived]
        assert [b["task"] for b in bodies][-2:] == numbers and worker.poll() is None
        assert len({r.headers["webhook-id"] for r in arrived}) == 2
    finally:
        if worker is not None:
            worker.terminate()
            out, err = worker.communicate(timeout=30)
        embedded_postgres.stop(name)
        shutil.rmtree(embedded_postgres.data_dir(name), ignore_errors=True)
        receiver.close()
    assert "The database is not reachable" in err and "The database is back." in out
