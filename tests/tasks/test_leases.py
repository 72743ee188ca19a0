"""SPEC §15 leases and heartbeats, and §6.1's lapse: a claim past its expiry is ended for every
rule at once and recorded exactly once."""
from __future__ import annotations

import re
import threading
import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tasks.models import Claim, Notification, Task, TaskEvent
from tests.tasks.conftest import set_space

S = "/v1/spaces/agent-lab"


def expire(claim_id: int, seconds_ago: float = 1) -> None:
    Claim.objects.filter(pk=claim_id).update(expires_at=timezone.now() - timedelta(seconds=seconds_ago))


def lapses() -> int:
    return TaskEvent.objects.filter(kind="claim_lapsed").count()


@pytest.mark.parametrize("value, status", [(9, 422), (10, 200), (3600, 200), (3601, 422), (None, 200), ("x", 422)])
def test_claim_lease_seconds_is_null_or_10_to_3600(steward, value, status):
    response = steward.api.patch(S, {"claim_lease_seconds": value})
    assert response.status_code == status, response.content
    if status == 200:
        assert response.json()["claim_lease_seconds"] == value


def test_a_claim_lasts_the_lease_and_a_heartbeat_moves_it(writer, tasks3, space):
    set_space(space, claim_lease_seconds=30)
    before = timezone.now()
    claim = writer.api.post(f"{S}/next").json()["claim"]
    assert claim["last_heartbeat_at"] is None
    expires = Claim.objects.get(pk=claim["id"]).expires_at
    assert before + timedelta(seconds=29) < expires <= timezone.now() + timedelta(seconds=30)

    Claim.objects.filter(pk=claim["id"]).update(expires_at=timezone.now() + timedelta(seconds=5))
    response = writer.api.post(f"{S}/tasks/1/heartbeat")
    assert response.status_code == 200, response.content
    renewed = response.json()["claim"]
    assert renewed["id"] == claim["id"] and renewed["live"] is True and renewed["last_heartbeat_at"]
    stored = Claim.objects.get(pk=claim["id"])
    assert stored.expires_at > timezone.now() + timedelta(seconds=29) and stored.last_heartbeat_at is not None
    assert stored.ended_at is None


def test_without_a_lease_claims_last_task_claim_hours(writer, tasks3):
    writer.api.post(f"{S}/next")
    writer.api.post(f"{S}/tasks/1/heartbeat")
    assert Claim.objects.get().expires_at > timezone.now() + timedelta(hours=3, minutes=59)


def test_a_lapsed_claim_is_ended_at_once_for_next_and_recorded_once(writer, writer2, tasks3, space):
    set_space(space, claim_lease_seconds=10)
    first = writer.api.post(f"{S}/next").json()
    assert first["task"]["id"] == 1
    expire(first["claim"]["id"])
    # No operator command ran: next hands task 1 (the most urgent) out again.
    again = writer2.api.post(f"{S}/next").json()
    assert again["task"]["id"] == 1 and again["claim"]["member"]["name"] == "writer2"
    old = Claim.objects.get(pk=first["claim"]["id"])
    assert old.end_reason == "lapsed" and old.ended_at is not None
    assert lapses() == 1
    note = Notification.objects.get(kind="claim_lapsed")
    assert note.member_id == writer.member.pk and note.details["task_number"] == 1
    history = [e["kind"] for e in writer.api.get(f"{S}/tasks/1/history").json()["results"]]
    assert history.count("claim_lapsed") == 1
    assert call_command("expire_claims") is None and lapses() == 1  # nothing left to record


def test_heartbeat_after_the_lapse_is_claim_lapsed_and_a_stranger_gets_not_holder(writer, writer2, tasks3, space):
    post = writer.api.post(f"{S}/posts", {"body": "It runs."}).json()["id"]
    claim = writer.api.post(f"{S}/next").json()["claim"]
    expire(claim["id"])
    response = writer.api.post(f"{S}/tasks/1/heartbeat")
    assert response.status_code == 409 and response.json()["error"] == "claim_lapsed"
    assert lapses() == 1 and Task.objects.get(number=1).status == "open"
    stranger = writer2.api.post(f"{S}/tasks/1/heartbeat")
    assert stranger.status_code == 409 and stranger.json()["error"] == "not_holder"
    # Its later done is still an attempt (SPEC §15).
    done = writer.api.post(f"{S}/tasks/1/done", {"post": post})
    assert done.status_code == 201 and done.json()["attempt"]["number"] == 1


def test_a_reader_cannot_heartbeat(reader, writer, tasks3):
    writer.api.post(f"{S}/next")
    assert reader.api.post(f"{S}/tasks/1/heartbeat").status_code == 403


def writes_during(action) -> list[str]:
    """The statements ``action`` sent that write or lock (a read does neither, SPEC §15)."""
    with CaptureQueriesContext(connection) as queries:
        action()
    writes = re.compile(r"\b(INSERT|UPDATE|DELETE|NOTIFY)\b", re.IGNORECASE)
    return [q["sql"] for q in queries.captured_queries if writes.search(q["sql"])]


def test_reads_show_a_lapsed_claim_ended_and_write_nothing(writer, steward, tasks3):
    """SPEC §15: reads show a claim past its expiry lapsed; a read never writes (the lapse is
    recorded by the next change of the task, or expire_claims)."""
    claim = writer.api.post(f"{S}/next", {"number": 1}).json()["claim"]
    writer.api.post(f"{S}/next", {"number": 2})
    expire(claim["id"])
    answers = {}

    def read_all():
        answers["detail"] = writer.api.get(f"{S}/tasks/1").json()
        answers["open"] = writer.api.get(f"{S}/tasks?status=open").json()["results"]
        answers["claimed"] = writer.api.get(f"{S}/tasks?status=claimed").json()["results"]
        answers["ready"] = writer.api.get(f"{S}/tasks?ready=true&order=next").json()["results"]
        answers["summary"] = writer.api.get(f"{S}/summary").json()

    assert writes_during(read_all) == []
    assert answers["detail"]["status"] == "open" and answers["detail"]["claims"] == []
    assert [t["id"] for t in answers["open"]] == [1, 3] and all(t["status"] == "open" for t in answers["open"])
    assert [t["id"] for t in answers["claimed"]] == [2]
    assert [t["id"] for t in answers["ready"]] == [1, 3]
    assert answers["summary"]["by_status"]["open"] == 2
    assert answers["summary"]["by_status"]["claimed"] == 1
    assert lapses() == 0 and Claim.objects.get(pk=claim["id"]).ended_at is None
    # The next change of the task records it, as having ended at its expiry.
    expires_at = Claim.objects.get(pk=claim["id"]).expires_at
    assert writer.api.post(f"{S}/tasks/1/heartbeat").status_code == 409
    ended = Claim.objects.get(pk=claim["id"])
    assert lapses() == 1 and ended.end_reason == "lapsed" and ended.ended_at == expires_at


@pytest.mark.django_db(transaction=True)
def test_many_meeting_one_lapse_at_once_record_it_once(writer, writer2, tasks3, space):
    """next, reads, heartbeats and expire_claims in eight threads, all at the moment of expiry."""
    claims = [writer.api.post(f"{S}/next", {"number": n}).json()["claim"]["id"] for n in (1, 2, 3)]
    for claim_id in claims:
        expire(claim_id)
    barrier = threading.Barrier(8)
    failures: list[BaseException] = []

    def meet(action):
        try:
            barrier.wait()
            action()
        except BaseException as error:  # surfaced below
            failures.append(error)
        finally:
            connection.close()

    taken: list = []
    actions = [
        lambda: taken.append(writer2.api.post(f"{S}/next")), lambda: taken.append(writer2.api.post(f"{S}/next")),
        lambda: writer.api.get(f"{S}/tasks/1"), lambda: writer.api.get(f"{S}/tasks?ready=true"),
        lambda: writer.api.post(f"{S}/tasks/2/heartbeat"), lambda: call_command("expire_claims"),
        lambda: call_command("expire_claims"), lambda: writer.api.get(f"{S}/tasks/3"),
    ]
    threads = [threading.Thread(target=meet, args=(action,)) for action in actions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures
    # Both nexts got a task: the lapses the others were recording held the rows only for a moment.
    assert [(r.status_code, r.json()["task"] is not None) for r in taken] == [(200, True)] * 2, [r.content for r in taken]
    assert lapses() == 3
    assert Notification.objects.filter(kind="claim_lapsed").count() == 3
    assert set(Claim.objects.filter(pk__in=claims).values_list("end_reason", flat=True)) == {"lapsed"}
    # Each task has at most one live claim (the two nexts took two of them), and no task is lost.
    live = Claim.objects.filter(ended_at=None).values_list("task__number", flat=True)
    assert len(live) == len(set(live)) == 2


@pytest.mark.django_db(transaction=True)
def test_a_heartbeat_that_waits_for_the_lock_past_the_expiry_is_claim_lapsed(writer, tasks3, space):
    """SPEC §15: a heartbeat after ``expires_at`` answers ``409 claim_lapsed`` and records the
    lapse, however long it waited for the task's lock (it read the clock before the lock)."""
    set_space(space, claim_lease_seconds=10)
    taken = writer.api.post(f"{S}/next").json()
    claim, number = taken["claim"], taken["task"]["id"]
    Claim.objects.filter(pk=claim["id"]).update(expires_at=timezone.now() + timedelta(seconds=0.5))
    locked, release = threading.Event(), threading.Event()

    def hold_the_task_row():
        from django.db import transaction
        try:
            with transaction.atomic():
                Task.objects.select_for_update().get(space=space, number=number)
                locked.set()
                release.wait(10)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_task_row)
    holder.start()
    assert locked.wait(10)
    threading.Timer(1.5, release.set).start()  # the heartbeat waits past the expiry
    response = writer.api.post(f"{S}/tasks/{number}/heartbeat")
    holder.join(10)
    assert response.status_code == 409 and response.json()["error"] == "claim_lapsed", response.content
    assert lapses() == 1
    assert Claim.objects.get(pk=claim["id"]).end_reason == "lapsed"


@pytest.mark.django_db(transaction=True)
def test_a_next_records_a_lapse_before_it_claims_and_holds_no_lapsed_row_while_it_waits(writer, writer2, space):
    """A next that meets a claim past its expiry records the lapse in a phase of its own, which
    commits before the claim (commands.unit: two phases, lock order). So while that next waits
    for a ready row another transaction holds, the lapse is already recorded for everyone and the
    lapsed task's row is free: two nexts each holding a lapsed row while waiting for the other's
    would wait for ever."""
    from django.db import connections, transaction as db_transaction
    from psycopg.errors import LockNotAvailable

    lapsed_task = writer.api.post(f"{S}/tasks", {"title": "Retry policy", "labels": ["a"]}).json()["id"]
    ready_task = writer.api.post(f"{S}/tasks", {"title": "Onboarding guide", "labels": ["b"]}).json()["id"]
    expire(writer.api.post(f"{S}/next", {"number": lapsed_task}).json()["claim"]["id"])
    holding, release = threading.Event(), threading.Event()

    def hold_the_ready_row() -> None:  # as a heartbeat or another lapse does, for a moment
        try:
            with db_transaction.atomic():
                Task.objects.select_for_update(no_key=True).get(number=ready_task)
                holding.set()
                release.wait(10)
        finally:
            connection.close()

    answers: list = []

    def next_for_b() -> None:
        try:
            answers.append(writer2.api.post(f"{S}/next", {"labels": ["b"]}))
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_ready_row)
    holder.start()
    assert holding.wait(10)
    agent = threading.Thread(target=next_for_b)
    agent.start()
    deadline = time.monotonic() + 10
    while lapses() == 0 and time.monotonic() < deadline:  # this connection sees only what committed
        time.sleep(0.02)
    try:
        assert lapses() == 1 and agent.is_alive()  # recorded and committed while the next still waits
        other = connections.create_connection("default")
        try:
            with other.cursor() as cursor:  # the lapsed task's row is free meanwhile
                cursor.execute(f'SELECT id FROM "{Task._meta.db_table}" WHERE number = %s FOR UPDATE NOWAIT',
                               [lapsed_task])
        except LockNotAvailable:  # pragma: no cover - the failure this test is for
            pytest.fail("the next held the lapsed task's row while it waited")
        finally:
            other.close()
    finally:
        release.set()
        holder.join(10)
        agent.join(10)
    assert answers[0].status_code == 200 and answers[0].json()["task"]["id"] == ready_task
