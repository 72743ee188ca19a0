"""SPEC §7.3: export, then share; and the operator commands that keep operations tidy."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from idempotency.models import ObservationKind, Operation, OperationObservation
from idempotency.settlement import Report, observe
from exports.models import Export, ExportChunk, ExportResult
from exports.services import drain_exports
from tasks.models import Claim, Notification, Task, TaskEvent
from tests.factories import create_task
from tests.conftest import ApiClient, load_agent_lab
from tests.factories import member_with_key
from tests.live_server import ROOT, server_env

S = "/v1/spaces/agent-lab"


def shared(client: ApiClient, token: str) -> dict:
    """A share's streamed document, read whole and parsed."""
    response = client.get(f"/v1/shares/{token}")
    assert response.status_code == 200 and response.streaming, response
    return json.loads(b"".join(response.streaming_content))


def test_export_then_share(steward, writer, anonymous, space):
    create_task(space=space, actor=writer.member, title="Retry policy")
    started = steward.api.post(f"{S}/exports")
    assert started.status_code == 202 and started.json()["state"] == "unknown"
    export_id = started.json()["id"]
    early = steward.api.post(f"{S}/exports/{export_id}/share")
    assert early.status_code == 409 and early.json()["error"] == "export_not_completed"
    assert [o.state for o in drain_exports()] == ["completed"]
    state = steward.api.get(f"{S}/exports/{export_id}").json()
    assert state["state"] == "completed" and state["result"]["counts"]["tasks"] == 1
    shared_answer = steward.api.post(f"{S}/exports/{export_id}/share")
    assert shared_answer.status_code == 201
    data = shared(anonymous, shared_answer.json()['token'])
    assert data["space"] == "agent-lab" and [t["title"] for t in data["tasks"]] == ["Retry policy"]
    assert {"claims", "attempts", "checks", "notes", "history"} <= data.keys()
    assert anonymous.get("/v1/shares/nope").status_code == 404


def test_exports_are_for_stewards_of_the_space(writer, outsider, steward):
    assert writer.api.post(f"{S}/exports").status_code == 403
    export_id = steward.api.post(f"{S}/exports").json()["id"]
    assert outsider.api.get(f"{S}/exports/{export_id}").status_code == 404


def test_a_stale_report_opens_no_share(steward, space):
    export_id = steward.api.post(f"{S}/exports").json()["id"]
    export = Export.objects.get(pk=export_id)
    # Attempt 1 takes a lease, then goes quiet; its lease expires and attempt 2 takes over.
    op = export.operation
    op = observe(operation=op, report=Report.for_attempt(op, ObservationKind.LEASE)).operation
    Operation.objects.filter(pk=op.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    stale = Operation.objects.get(pk=op.pk)
    call_command("expire_operations")
    from exports.services import lease_next_export

    _, op2 = lease_next_export()
    assert op2.lease_epoch == 2
    late = observe(operation=stale, report=Report.for_attempt(stale, ObservationKind.SUCCESS, status=200,
                                                              body={"export": export_id, "result_epoch": 1}))
    assert late.verdict == "quarantined"
    assert steward.api.post(f"{S}/exports/{export_id}/share").json()["error"] == "export_not_completed"


WORKER_THAT_HANGS = """
import time
import django
django.setup()
from exports import services as exports

real = exports.batches

def batches_then_hang(space, section, size):
    for number, batch in enumerate(real(space, section, size)):
        yield batch
        if section.name == "history" and number == 1:
            print("writing", flush=True)
            time.sleep(600)  # killed here, mid-export, some chunks written

exports.batches = batches_then_hang
from django.core.management import call_command
call_command("run_worker", "--once")
"""


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_export_is_retried_and_its_late_report_quarantined():
    space = load_agent_lab()
    steward, key = member_with_key(space, "steward")
    for n in range(7):
        create_task(space=space, actor=steward, title=f"export row {n}")
    export_id = ApiClient(key).post(f"{S}/exports").json()["id"]
    small_batches = {"SPACES_EXPORT_BATCH_ROWS": "2"}  # 7 tasks, 7 events: four chunks each

    worker = subprocess.Popen([sys.executable, "-c", WORKER_THAT_HANGS], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env=server_env(SPACES_OPERATION_LEASE_SECONDS="1", **small_batches))
    try:
        lines = [worker.stdout.readline()]
        while not lines[-1].startswith("writing") and lines[-1]:
            lines.append(worker.stdout.readline())
        assert lines[-1].startswith("writing"), lines
        assert lines[0].startswith(f"Export {export_id}: 2 tasks rows written")  # progress on long work
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
    dead = Operation.objects.get(exports__pk=export_id)
    assert dead.state == "in_progress" and dead.lease_epoch == 1
    assert ExportChunk.objects.filter(export_id=export_id, lease_epoch=1).count() >= 5  # it was mid-way
    time.sleep(1.2)  # the dead worker's lease runs out
    retry = subprocess.run([sys.executable, "manage.py", "run_worker", "--once"], cwd=ROOT,
                           env=server_env(**small_batches), capture_output=True, text=True, timeout=60)
    assert retry.returncode == 0 and "Processed 1 export" in retry.stdout, retry.stderr
    done = Operation.objects.get(pk=dead.pk)
    assert done.state == "completed" and done.lease_epoch == 2 and done.response_body["result_epoch"] == 2
    assert done.response_body["counts"]["tasks"] == 7
    assert ExportChunk.objects.filter(export_id=export_id, lease_epoch=2, section="tasks").count() == 4
    late = observe(operation=dead, report=Report.for_attempt(dead, ObservationKind.SUCCESS, status=200,
                                                             body={"export": export_id, "result_epoch": 1}))
    assert late.verdict == "quarantined"
    assert Operation.objects.get(pk=dead.pk).response_body["result_epoch"] == 2
    token = ApiClient(key).post(f"{S}/exports/{export_id}/share").json()["token"]
    document = shared(ApiClient(), token)
    assert [t["title"] for t in document["tasks"]] == [f"export row {n}" for n in range(7)]
    assert len(document["history"]) == 7 and document["claims"] == []
    assert ExportResult.objects.filter(export_id=export_id).count() == 1  # the dead attempt finished nothing


def test_a_failing_export_says_why_stays_retryable_then_fails_and_a_steward_retries_it(steward, space, settings,
                                                                                        monkeypatch):
    from django.core.management.base import CommandError

    from exports import services as exports

    settings.SPACES_EXPORT_MAX_ATTEMPTS = 2
    create_task(space=space, actor=steward.member, title="Retry policy")
    export_id = steward.api.post(f"{S}/exports").json()["id"]

    def broken(space, section, size):
        raise RuntimeError("disk full")
        yield  # a generator, as the real one

    monkeypatch.setattr(exports, "batches", broken)
    err = StringIO()
    with pytest.raises(CommandError, match="1 export attempt"):
        call_command("run_worker", "--once", stdout=StringIO(), stderr=err)
    assert "attempt 1 failed (RuntimeError: disk full); it will be retried" in err.getvalue()
    state = steward.api.get(f"{S}/exports/{export_id}").json()
    assert state["state"] == "unknown" and state["attempts"] == 1
    assert state["last_error"]["reason"] == "RuntimeError: disk full"
    assert steward.api.post(f"{S}/exports/{export_id}/retry").json()["error"] == "export_not_failed"
    with pytest.raises(CommandError):
        call_command("run_worker", "--once", stdout=StringIO(), stderr=err)
    assert "attempt 2 failed (RuntimeError: disk full); failed: a steward may retry it" in err.getvalue()
    state = steward.api.get(f"{S}/exports/{export_id}").json()
    assert state["state"] == "failed" and state["last_error"]["reason"] == "RuntimeError: disk full"
    assert drain_exports() == []  # failed is terminal: no worker takes it
    monkeypatch.undo()
    retried = steward.api.post(f"{S}/exports/{export_id}/retry")
    assert retried.status_code == 202 and retried.json()["state"] == "unknown" and retried.json()["attempts"] == 0
    assert [o.state for o in drain_exports()] == ["completed"]
    assert steward.api.post(f"{S}/exports/{export_id}/share").status_code == 201


def test_an_export_whose_workers_keep_dying_fails_when_its_attempts_run_out(steward, space, settings):
    from exports.services import lease_next_export

    settings.SPACES_EXPORT_MAX_ATTEMPTS = 2
    export_id = steward.api.post(f"{S}/exports").json()["id"]
    for _ in range(2):  # two workers take a lease and die
        lease_next_export()
        Operation.objects.filter(exports__pk=export_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert lease_next_export() is None
    state = steward.api.get(f"{S}/exports/{export_id}").json()
    assert state["state"] == "failed" and "lease expired" in state["last_error"]["reason"]


@pytest.mark.django_db(transaction=True)
def test_three_sweeps_at_once_with_live_traffic_do_the_work_once():
    space = load_agent_lab()
    creator, _ = member_with_key(space, "steward")
    holders = [member_with_key(space, "writer", f"holder-{i}")[0] for i in range(30)]
    from tasks.claims import claim_task

    for i, member in enumerate(holders):
        task = create_task(space=space, actor=creator, title=f"job {i}")
        claim_task(space=space, member=member, number=task.number)
    Claim.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    stop = threading.Event()
    traffic_errors: list[BaseException] = []

    def traffic():
        from django.db import connection

        n = 0
        try:
            while not stop.is_set():
                create_task(space=space, actor=creator, title=f"live {n}")
                n += 1
        except BaseException as exc:
            traffic_errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=traffic)
    thread.start()
    sweeps = [subprocess.Popen([sys.executable, "manage.py", "sweep"], cwd=ROOT, env=server_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outputs = [s.communicate(timeout=120) for s in sweeps]
    stop.set()
    thread.join(timeout=30)
    assert not traffic_errors
    for sweep, (out, err) in zip(sweeps, outputs):
        assert sweep.returncode == 0, err
        assert "Swept:" in out
    assert Claim.objects.filter(end_reason="lapsed").count() == 30
    assert TaskEvent.objects.filter(kind="claim_lapsed").count() == 30  # once each, not three times
    assert Notification.objects.filter(kind="claim_lapsed").count() == 30
    assert Task.objects.filter(status="open").count() == Task.objects.count()


def test_sweep_dry_run_changes_nothing(writer, space, tasks_for_sweep=None):
    create_task(space=space, actor=writer.member, title="Retry policy")
    from tasks.claims import claim_task

    claim_task(space=space, member=writer.member, number=1)
    Claim.objects.update(expires_at=timezone.now() - timedelta(seconds=1))


    out = StringIO()
    call_command("sweep", "--dry-run", stdout=out)
    assert "Would sweep: 0 reservations, 1 claims" in out.getvalue()
    assert Claim.objects.get().ended_at is None
    call_command("sweep", stdout=StringIO())
    assert Claim.objects.get().end_reason == "lapsed"
    assert OperationObservation.objects.count() == 0


def test_a_share_keeps_only_a_hash_expires_and_can_be_revoked(steward, anonymous, space):
    export_id = steward.api.post(f"{S}/exports").json()["id"]
    assert [o.state for o in drain_exports()] == ["completed"]
    shared = steward.api.post(f"{S}/exports/{export_id}/share", {"expires_in_hours": 1})
    assert shared.status_code == 201
    token = shared.json()["token"]
    export = Export.objects.get(pk=export_id)
    assert token not in (export.share_token_hash or "") and export.share_token_hash
    assert timezone.timedelta(minutes=59) < export.share_expires_at - timezone.now() <= timezone.timedelta(hours=1)
    assert anonymous.get(f"/v1/shares/{token}").status_code == 200
    Export.objects.filter(pk=export_id).update(share_expires_at=timezone.now() - timedelta(seconds=1))
    assert anonymous.get(f"/v1/shares/{token}").status_code == 404  # expired
    again = steward.api.post(f"{S}/exports/{export_id}/share").json()["token"]
    assert anonymous.get(f"/v1/shares/{again}").status_code == 200
    assert steward.api.delete(f"{S}/exports/{export_id}/share").status_code == 204
    assert anonymous.get(f"/v1/shares/{again}").status_code == 404  # revoked
    assert steward.api.delete(f"{S}/exports/{export_id}/share").status_code == 404
    assert steward.api.post(f"{S}/exports/{export_id}/share", {"expires_in_hours": 0}).status_code == 422


def test_the_worker_outlives_its_database_connection(steward):
    """The database dropped the worker's connection (a restart, ``pg_terminate_backend``): the
    worker says so, opens a new one and goes on, and a later export completes."""
    worker = subprocess.Popen([sys.executable, "manage.py", "run_worker", "--poll", "0.2"], cwd=ROOT,
                              env=server_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = steward.api.post(f"{S}/exports").json()["id"]
        wait_for(lambda: Export.objects.get(pk=first).operation.state == "completed", "the first export")
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                           "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        second = steward.api.post(f"{S}/exports").json()["id"]
        wait_for(lambda: Export.objects.get(pk=second).operation.state == "completed", "the export after")
        assert worker.poll() is None, worker.stderr.read()
    finally:
        worker.terminate()  # told to stop: it finishes its round (and reports it) first
        out, err = worker.communicate(timeout=30)
    assert f"Export {second}: attempt 1 completed." in out
    assert worker.returncode == 128 + signal.SIGTERM and "Stopped (SIGTERM)" in err


def test_sweep_every_rides_out_a_dropped_connection_and_stops_when_told(space):
    """SPEC §9: ``sweep --every`` says the database went away, tries again and goes on; SIGTERM
    ends it after the sweep in progress, with a non-zero status."""
    sweeper = subprocess.Popen([sys.executable, "-u", "manage.py", "sweep", "--every", "0.2"], cwd=ROOT,
                               env=server_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(sweeper.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        wait_for(lambda: any(line.startswith("Swept:") for line in lines), "the first sweep")
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                           "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        wait_for(lambda: "The database is back.\n" in lines, "a sweep after the dropped connection")
        swept = sum(line.startswith("Swept:") for line in lines)
        wait_for(lambda: sum(line.startswith("Swept:") for line in lines) > swept, "the sweeps going on")
        assert sweeper.poll() is None
    finally:
        sweeper.terminate()
        _, err = sweeper.communicate(timeout=30)
    assert "The database is not reachable" in err and "Stopped (SIGTERM)" in err
    assert sweeper.returncode == 128 + signal.SIGTERM


@pytest.mark.parametrize("command", [["run_worker", "--poll", "0.2"], ["sweep", "--every", "0.2"]])
def test_a_long_running_command_gives_up_when_the_database_stays_away(command):
    """SPEC §9: past ``--give-up-after`` seconds without the database, a non-zero exit saying so."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    env = server_env(DATABASE_URL=f"postgres://nobody@127.0.0.1:{port}/spaces")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "manage.py", *command, "--give-up-after", "2"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "giving up" in done.stderr, done.stderr
    assert done.stderr.count("The database is not reachable") >= 2  # it tried again before it gave up
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("command", [["sweep"], ["expire_claims"], ["run_worker", "--once"]])
def test_a_command_says_in_one_line_that_the_database_is_away(command):
    """SPEC §9: a one-shot command exits non-zero on failure, saying why, without a traceback."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    done = subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, capture_output=True, text=True,
                          env=server_env(DATABASE_URL=f"postgres://nobody@127.0.0.1:{port}/spaces"), timeout=60)
    assert done.returncode == 1 and "not reachable" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def wait_for(condition, what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not complete"
        time.sleep(0.1)


def test_a_space_queues_at_most_max_queued_exports_even_when_requests_race(steward, space):
    """Eight stewards' requests at once: three exports are queued (the default), five answered 429."""
    from django.db import connection as thread_connection

    statuses: list[int] = []
    retry: list[str] = []
    codes: list[dict] = []
    start = threading.Barrier(8)

    def ask() -> None:
        try:
            start.wait()
            response = ApiClient(steward.key).post(f"{S}/exports")
            statuses.append(response.status_code)
            if response.status_code == 429:
                retry.append(response["Retry-After"])
                codes.append(response.json())
        finally:
            thread_connection.close()

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [202] * 3 + [429] * 5 and set(retry) == {"5"}, codes
    assert {body["error"] for body in codes} == {"export_queue_full"}
    assert Export.objects.filter(space=space).count() == 3
    drain_exports()  # the queue empties as exports complete
    assert steward.api.post(f"{S}/exports").status_code == 202
    assert steward.api.patch(S, {"max_queued_exports": 1}).status_code == 200
    assert steward.api.post(f"{S}/exports").status_code == 429
    assert steward.api.patch(S, {"max_queued_exports": 0}).status_code == 422


@pytest.mark.parametrize("arguments", [
    ["run_worker", "--poll", "0"], ["run_worker", "--poll", "-1"], ["run_worker", "--once", "--give-up-after", "-5"],
    ["sweep", "--every", "0"], ["sweep", "--every", "nan"], ["sweep", "--give-up-after", "soon"],
])
def test_a_long_running_command_refuses_seconds_that_are_not_positive(arguments):
    """``--poll 0`` would spin on the database and ``--give-up-after -5`` give up at once: a usage
    error (status 2) naming the option, before the command touches anything."""
    done = subprocess.run([sys.executable, "manage.py", *arguments], cwd=ROOT, capture_output=True, text=True,
                          env=server_env(), timeout=60)
    option = next(a for a in arguments if a.startswith("--") and a != "--once")
    assert done.returncode == 2 and f"argument {option}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
