"""SPEC §7.1: Idempotency-Key replays, refusals and retryable outcomes."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from commands.unit import in_transaction
from allocation.conflict_keys import ConflictKey
from idempotency.services import expire_operations, purge_operations, storable
from allocation.models import Reservation
from idempotency.models import Operation, OperationState
from allocation.services import reserve
from spaces import services
from spaces.models import ApiKey
from tasks.models import Task
from tests.conftest import ApiClient

S = "/v1/spaces/agent-lab"
TITLE = {"title": "Benchmark harness for code-review agents"}


def post(persona, key, body=TITLE, path=f"{S}/tasks"):
    return persona.api.post(path, body, headers={"Idempotency-Key": key})


def test_a_retry_replays_the_first_201_never_409(writer):
    first = post(writer, "k1")
    again = post(writer, "k1")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first
    assert Task.objects.count() == 1
    operation = Operation.objects.get()
    assert operation.state == OperationState.COMPLETED and operation.response_status == 201


def test_a_refusal_is_replayed_too(writer, writer2):
    post(writer, "a")
    refused = post(writer2, "b")
    replayed = post(writer2, "b")
    assert refused.status_code == replayed.status_code == 409
    assert replayed.json() == refused.json() and replayed["Content-Type"] == "application/problem+json"


DESCRIBING = ("Content-Type", "Allow", "Location", "Retry-After")


@pytest.mark.parametrize("route, body", [
    ("tasks", {"title": "Benchmark harness for code-review agents — ünïcode", "priority": 1, "labels": ["b", "a"]}),
    ("tasks/window", {"proposals": [{"title": "Retry policy"}, {"title": "Token spend dashboard"}]}),
    ("posts", {"title": "Harness", "body": "It runs.\n\tIndented — ✓"}),
])
def test_a_replay_is_the_first_answer_byte_for_byte(writer, route, body):
    """SPEC §7.1: the same status and body, byte for byte, with the headers that describe it
    (the answer was stored as jsonb, and replayed with sorted keys, spaces and no Allow)."""
    first = post(writer, f"bytes-{route}", body, path=f"{S}/{route}")
    again = post(writer, f"bytes-{route}", body, path=f"{S}/{route}")
    assert first.status_code in (200, 201) and again.status_code == first.status_code
    assert again.content == first.content
    assert {h: first.get(h) for h in DESCRIBING} == {h: again.get(h) for h in DESCRIBING}
    assert again["Idempotent-Replayed"] == "true"


def test_a_refusal_is_replayed_byte_for_byte(writer, writer2):
    post(writer, "a")
    refused = post(writer2, "b")
    replayed = post(writer2, "b")
    assert refused.status_code == 409 and replayed.content == refused.content
    assert {h: refused.get(h) for h in DESCRIBING} == {h: replayed.get(h) for h in DESCRIBING}


def test_another_body_with_the_same_key_is_422_and_changes_nothing(writer):
    post(writer, "k1")
    response = post(writer, "k1", {"title": "Something else"})
    assert response.status_code == 422 and response.json()["error"] == "idempotency_key_reused"
    assert Task.objects.count() == 1
    assert Operation.objects.get().response_status == 201


def test_another_path_with_the_same_key_is_422(writer):
    post(writer, "k1")
    assert post(writer, "k1", {"body": "x"}, path=f"{S}/posts").json()["error"] == "idempotency_key_reused"


def test_keys_are_scoped_to_the_member(writer, writer2):
    assert post(writer, "same", {"title": "Retry policy"}).status_code == 201
    response = post(writer2, "same", {"title": "Retry policy"})
    assert response.status_code == 409 and "Idempotent-Replayed" not in response  # a new intent, which lost


def test_a_rotated_key_is_409_binding_mismatch(writer):
    post(writer, "k1")
    rotated = writer.api.post(f"{S}/members/{writer.member.pk}/keys").json()["key"]
    writer.api.key = rotated
    response = post(writer, "k1")
    assert response.status_code == 409 and response.json()["error"] == "idempotency_binding_mismatch"
    assert Operation.objects.get(key="k1").binding_generation == 1


def test_a_duplicate_of_a_live_attempt_is_409_in_progress_and_changes_nothing(writer):
    """The first attempt is alive exactly while its transaction holds the liveness lock."""
    from django.db import connections

    from idempotency.sql import LOCK_KEY

    live = connections.create_connection("default")  # the first attempt, on a connection of its own
    try:
        live.set_autocommit(False)
        with live.cursor() as cursor:  # the lock idempotency.first_touch takes, on that connection
            cursor.execute(f"SELECT pg_advisory_xact_lock({LOCK_KEY.format(member='%s', key='%s')})",
                           [writer.member.pk, "k1"])
        response = post(writer, "k1")
        assert response.status_code == 409
        body = response.json()
        assert body["error"] == "idempotency_in_progress" and body["retry_after_ms"] > 0
        assert not Operation.objects.exists() and not Task.objects.exists()
        live.rollback()  # the first attempt dies: the lock is free at once
        assert post(writer, "k1").status_code == 201
    finally:
        live.close()


def test_an_operation_left_in_progress_runs_again_at_once_whatever_its_lease(writer):
    """A committed in-progress operation (its attempt died between a window's two transactions, or a waited ask's)
    is not waited for: no live attempt holds its lock."""
    from idempotency.services import request_fingerprint

    Operation.objects.create(
        space_id=writer.member.space_id, member=writer.member, key="k1", binding_generation=1, method="POST",
        path=f"{S}/tasks", state=OperationState.IN_PROGRESS, lease_expires_at=timezone.now() + timedelta(seconds=30),
        fingerprint=request_fingerprint("POST", f"{S}/tasks", TITLE),
    )
    response = post(writer, "k1")
    assert response.status_code == 201 and "Idempotent-Replayed" not in response
    assert Operation.objects.get().state == OperationState.COMPLETED
    assert post(writer, "k1").json() == response.json()


def test_a_transient_409_reserved_stays_retryable(writer, writer2, space):
    blocker = in_transaction(reserve, operation=None, commits_alone=True, space=space,
                             key=ConflictKey("create_task", "task:agent-lab:slot:T1", "result"),
                             member=writer2.member, payload_sha256="x")
    first = post(writer, "k1")
    assert first.json()["code"] == "conflict_key_reserved"
    assert Operation.objects.get().state == OperationState.UNKNOWN
    Reservation.objects.filter(pk=blocker.pk).delete()
    retried = post(writer, "k1")
    assert retried.status_code == 201 and "Idempotent-Replayed" not in retried


def test_a_retry_takes_over_its_own_earlier_reservation(writer, space):
    """A crash between reserve and mutate leaves a reservation: the same operation's retry is not blocked by it."""
    from idempotency.services import request_fingerprint

    operation = Operation.objects.create(
        space_id=writer.member.space_id, member=writer.member, key="k1", binding_generation=1, method="POST",
        path=f"{S}/tasks", state=OperationState.IN_PROGRESS, lease_expires_at=timezone.now() + timedelta(seconds=30),
        fingerprint=request_fingerprint("POST", f"{S}/tasks", TITLE))
    reserve(commits_alone=True, space=space, key=ConflictKey("create_task", "task:agent-lab:slot:T1", "result"), member=writer.member,
            payload_sha256="x", operation=operation)
    response = post(writer, "k1")
    assert response.status_code == 201
    assert not Reservation.objects.exists()


def test_post_without_a_key_is_not_an_operation(writer):
    writer.api.post(f"{S}/tasks", TITLE)
    assert not Operation.objects.exists()


def test_an_overlong_key_is_422(writer):
    assert post(writer, "k" * 256).status_code == 422


@pytest.mark.parametrize("spoil", ["wrong secret", "revoked", "no key"])
@pytest.mark.parametrize("idempotency_key", ["k1", "k" * 256])
def test_without_a_valid_api_key_it_is_401_and_no_operation(writer, spoil, idempotency_key):
    raw = {"wrong secret": writer.key[:-1] + ("0" if writer.key[-1] != "0" else "1"), "no key": None,
           "revoked": writer.key}[spoil]
    if spoil == "revoked":
        services.revoke_key(key=ApiKey.objects.get(member=writer.member))
    response = ApiClient(raw).post(f"{S}/tasks", TITLE, headers={"Idempotency-Key": idempotency_key})
    assert response.status_code == 401 and response.json()["error"] == "unauthenticated"
    assert not Operation.objects.exists() and not Task.objects.exists()


def test_a_body_that_is_not_json_is_400_and_no_operation(writer):
    response = writer.api.post(f"{S}/tasks", raw=b"{not json", headers={"Idempotency-Key": "k1"})
    assert response.status_code == 400 and response.json()["error"] == "malformed_json"
    assert not Operation.objects.exists()


def test_expire_and_purge_operations(writer):
    post(writer, "old")
    post(writer, "running", {"title": "Retry policy"})
    Operation.objects.filter(key="old").update(created_at=timezone.now() - timedelta(hours=25))
    Operation.objects.filter(key="running").update(
        state=OperationState.IN_PROGRESS, lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert expire_operations(dry_run=True) == 1
    assert expire_operations() == 1
    assert Operation.objects.get(key="running").state == OperationState.UNKNOWN
    assert purge_operations() == 1
    assert list(Operation.objects.values_list("key", flat=True)) == ["running"]


# A window keeps two phases (its reservations commit, then its tasks): the runner's rules for an
# attempt between its two transactions are held on it. (A single create is one transaction.)
WINDOW = {"proposals": [TITLE]}


def window(persona, key):
    return post(persona, key, body=WINDOW, path=f"{S}/tasks/window")


def test_an_attempt_overtaken_between_its_transactions_writes_nothing_more_and_says_in_progress(
        writer, space, monkeypatch):
    """A window's second transaction finds another attempt holding the operation's lock: no task,
    no settled answer; once that attempt is gone, a retry creates the task."""
    from django.db import connections

    from idempotency.sql import LOCK_KEY
    from commands.unit import UnitOfWork

    other = connections.create_connection("default")  # the other attempt, on its own connection
    other.set_autocommit(False)
    real_commit = UnitOfWork.commit_phase

    def commit_then_lose_the_lock(self, **options):
        real_commit(self, **options)
        with other.cursor() as cursor:
            cursor.execute(f"SELECT pg_advisory_xact_lock({LOCK_KEY.format(member='%s', key='%s')})",
                           [self.operation.member_id, self.operation.key])

    monkeypatch.setattr(UnitOfWork, "commit_phase", commit_then_lose_the_lock)
    try:
        response = window(writer, "k1")
        assert response.status_code == 409 and response.json()["error"] == "idempotency_in_progress"
        assert not Task.objects.exists()
        assert Operation.objects.get().state == OperationState.IN_PROGRESS  # its first transaction only
    finally:
        other.rollback()
        other.close()
    monkeypatch.setattr(UnitOfWork, "commit_phase", real_commit)
    retried = window(writer, "k1")
    assert retried.status_code == 200 and retried.json()["results"][0]["status"] == 201
    assert Task.objects.count() == 1 and not Reservation.objects.exists()


def test_an_attempt_whose_reservation_a_retry_replaced_says_in_progress_not_reserved(writer, space, monkeypatch):
    """Two attempts of one window both between their two transactions: the retry's first
    transaction replaced the first attempt's reservation (its own operation's) while the lock was
    free, and committed. The first attempt takes the lock again, finds its reservation gone and
    the key reserved by its own operation: it writes nothing and answers 409
    idempotency_in_progress (the retry's work is this request's), never conflict_key_reserved."""
    from django.db import connections

    from commands.unit import UnitOfWork

    other = connections.create_connection("default")  # the retry's first transaction
    real_commit = UnitOfWork.commit_phase

    def commit_then_a_retry_replaces_the_reservation(self, **options):
        real_commit(self, **options)
        with other.cursor() as cursor:
            cursor.execute(f'UPDATE "{Reservation._meta.db_table}" SET id = id + 1000000 WHERE operation_id = %s',
                           [self.operation.pk])
            assert cursor.rowcount == 1

    monkeypatch.setattr(UnitOfWork, "commit_phase", commit_then_a_retry_replaces_the_reservation)
    try:
        response = window(writer, "k1")
    finally:
        other.close()
    assert response.status_code == 409 and response.json()["error"] == "idempotency_in_progress", response.json()
    assert not Task.objects.exists() and Reservation.objects.get().operation.key == "k1"
    monkeypatch.setattr(UnitOfWork, "commit_phase", real_commit)
    retried = window(writer, "k1")  # the retry takes over its operation's reservation
    assert retried.status_code == 200 and retried.json()["results"][0]["status"] == 201
    assert Task.objects.count() == 1 and not Reservation.objects.exists()


def test_a_window_that_crashes_midway_leaves_no_task_without_its_answer(writer, space, monkeypatch):
    """All of a window's tasks commit with its answer: a crash at its second task leaves none of
    them, and the retry answers every proposal 201, never 409 against its own work."""
    from tasks import services

    proposals = {"proposals": [{"title": "Retry policy"}, {"title": "Write the onboarding guide"},
                               {"title": "Token spend dashboard"}]}
    real_mutate = services.mutate_task
    calls = []

    def crash_at_the_second(intent, **kwargs):
        calls.append(intent.task.title)
        if len(calls) == 2:
            raise RuntimeError("the worker dies")
        return real_mutate(intent, **kwargs)

    monkeypatch.setattr(services, "mutate_task", crash_at_the_second)
    writer.api.client.raise_request_exception = False  # answer the crash as a server would: a 500
    crashed = post(writer, "w1", proposals, path=f"{S}/tasks/window")
    assert crashed.status_code == 500 and not Task.objects.exists()
    assert Reservation.objects.count() == 3  # the window's first transaction: its retry takes them over
    monkeypatch.setattr(services, "mutate_task", real_mutate)
    retried = post(writer, "w1", proposals, path=f"{S}/tasks/window")
    assert [r["status"] for r in retried.json()["results"]] == [201, 201, 201]
    assert Task.objects.count() == 3 and not Reservation.objects.exists()


def test_a_window_answers_a_repeated_key_as_a_single_create_would(writer):
    response = post(writer, "w2", {"proposals": [{"title": "Retry policy"}, {"title": "retry  POLICY"},
                                                 {"title": "Write the onboarding guide"}]}, path=f"{S}/tasks/window")
    results = response.json()["results"]
    assert [r["status"] for r in results] == [201, 409, 201]
    assert results[1]["body"]["winner"] == {"type": "task", "id": results[0]["body"]["number"], "status": "open"}


@pytest.mark.parametrize("path, body, persona", [
    ("/join-links", {"role": "writer\u0000"}, "steward"),
    ("/tasks", {"title": "Retry policy", "delivery_mode": "result\u0000"}, "writer"),
    ("/bind", {"title": "Retry policy", "delivery_mode": "result\u0000"}, "writer"),
    ("/next", {"kind": "check\u0000"}, "writer"),
    ("/tasks/window", {"proposals": [{"title": "Retry policy", "delivery_mode": "\u0000"}]}, "writer"),
])
def test_a_refusal_that_echoes_a_nul_is_stored_and_replayed_under_a_key(steward, writer, path, body, persona):
    """jsonb holds no NUL: a refusal quoting the input is stored there with U+FFFD in its place,
    and its retry answers the same refusal as it was sent (the body is kept as sent), never a 500."""
    who = {"steward": steward, "writer": writer}[persona]
    first = who.api.post(S + path, body, headers={"Idempotency-Key": "nul"})
    assert first.status_code in (200, 422), first.content
    again = who.api.post(S + path, body, headers={"Idempotency-Key": "nul"})
    assert again.status_code == first.status_code and again["Idempotent-Replayed"] == "true"
    assert again.content == first.content
    assert Operation.objects.get(key="nul").response_body == storable(first.json())
    without_key = who.api.post(S + path, body)
    assert without_key.status_code == first.status_code
