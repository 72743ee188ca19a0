"""SPEC §7.3: export, then share; and the operator commands that keep operations tidy."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from allocation.models import ObservationKind, Operation, OperationObservation
from allocation.settlement import Report, observe
from tasks.exports import drain_exports
from tasks.models import Claim, Export, ExportResult, Notification, Task, TaskEvent
from tasks.services import create_task
from tests.conftest import ApiClient, load_agent_lab
from tests.factories import member_with_key
from tests.live_server import ROOT, server_env

S = "/v1/spaces/agent-lab"


def test_export_then_share(steward, writer, anonymous, space):
    create_task(space=space, actor=writer.member, title="Retry policy")
    started = steward.api.post(f"{S}/exports")
    assert started.status_code == 202 and started.json()["state"] == "unknown"
    export_id = started.json()["id"]
    early = steward.api.post(f"{S}/exports/{export_id}/share")
    assert early.status_code == 409 and early.json()["error"] == "export_not_completed"
    assert drain_exports() == 1
    state = steward.api.get(f"{S}/exports/{export_id}").json()
    assert state["state"] == "completed" and state["result"]["counts"]["tasks"] == 1
    shared = steward.api.post(f"{S}/exports/{export_id}/share")
    assert shared.status_code == 201
    data = anonymous.get(f"/v1/shares/{shared.json()['token']}").json()
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
    from tasks.exports import lease_next_export

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
from tasks import exports

real = exports.export_data

def slow_export_data(space):
    data = real(space)
    print("writing", flush=True)
    time.sleep(600)  # killed here, mid-export
    return data

exports.export_data = slow_export_data
from django.core.management import call_command
call_command("run_worker", "--once")
"""


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_export_is_retried_and_its_late_report_quarantined():
    space = load_agent_lab()
    steward, key = member_with_key(space, "steward")
    create_task(space=space, actor=steward, title="Retry policy")
    export_id = ApiClient(key).post(f"{S}/exports").json()["id"]

    worker = subprocess.Popen([sys.executable, "-c", WORKER_THAT_HANGS], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env=server_env(SPACES_OPERATION_LEASE_SECONDS="1"))
    try:
        assert worker.stdout.readline().startswith("writing")
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
    dead = Operation.objects.get(export__pk=export_id)
    assert dead.state == "in_progress" and dead.lease_epoch == 1
    time.sleep(1.2)  # the dead worker's lease runs out
    retry = subprocess.run([sys.executable, "manage.py", "run_worker", "--once"], cwd=ROOT, env=server_env(),
                           capture_output=True, text=True, timeout=60)
    assert retry.returncode == 0 and "Processed 1 export" in retry.stdout
    done = Operation.objects.get(pk=dead.pk)
    assert done.state == "completed" and done.lease_epoch == 2 and done.response_body["result_epoch"] == 2
    late = observe(operation=dead, report=Report.for_attempt(dead, ObservationKind.SUCCESS, status=200,
                                                             body={"export": export_id, "result_epoch": 1}))
    assert late.verdict == "quarantined"
    assert Operation.objects.get(pk=dead.pk).response_body["result_epoch"] == 2
    token = ApiClient(key).post(f"{S}/exports/{export_id}/share").json()["token"]
    assert ApiClient().get(f"/v1/shares/{token}").json()["tasks"][0]["title"] == "Retry policy"
    assert ExportResult.objects.filter(export_id=export_id).count() == 1  # the dead attempt wrote nothing


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
    assert TaskEvent.objects.filter(kind="lapsed").count() == 30  # once each, not three times
    assert Notification.objects.filter(kind="claim_lapsed").count() == 30
    assert Task.objects.filter(status="open").count() == Task.objects.count()


def test_sweep_dry_run_changes_nothing(writer, space, tasks_for_sweep=None):
    create_task(space=space, actor=writer.member, title="Retry policy")
    from tasks.claims import claim_task

    claim_task(space=space, member=writer.member, number=1)
    Claim.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    from io import StringIO

    out = StringIO()
    call_command("sweep", "--dry-run", stdout=out)
    assert "Would sweep: 0 reservations, 1 claims" in out.getvalue()
    assert Claim.objects.get().ended_at is None
    call_command("sweep", stdout=StringIO())
    assert Claim.objects.get().end_reason == "lapsed"
    assert OperationObservation.objects.count() == 0


def test_a_share_keeps_only_a_hash_expires_and_can_be_revoked(steward, anonymous, space):
    export_id = steward.api.post(f"{S}/exports").json()["id"]
    assert drain_exports() == 1
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
