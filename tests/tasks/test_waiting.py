"""SPEC §15: next {"wait": S} waits for work, claims it as next would, each task to one waiter,
longest waiter first, holding no transaction and no connection while it waits."""
from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from tasks.models import Claim, Task
from tasks.waiting import LISTENER_NAME, REGISTRY
from tests.conftest import make_persona
from tests.factories import create_task

S = "/v1/spaces/agent-lab"
pytestmark = [pytest.mark.django_db(transaction=True)]


class Waiting(threading.Thread):
    """One agent's waited next, in a thread of its own (its own connection, as a server's)."""

    def __init__(self, persona, body: dict, headers: dict | None = None) -> None:
        super().__init__(daemon=True)
        self.persona, self.body, self.headers = persona, body, headers or {}
        self.response = None
        self.error: BaseException | None = None
        self.elapsed = 0.0
        self.finished_at = 0.0

    def run(self) -> None:
        started = time.monotonic()
        try:
            self.response = self.persona.api.post(f"{S}/next", self.body, headers=self.headers)
        except BaseException as error:  # surfaced by result()
            self.error = error
        finally:
            self.finished_at = time.monotonic()
            self.elapsed = self.finished_at - started
            connection.close()

    def result(self) -> dict:
        self.join(timeout=90)
        assert self.error is None and not self.is_alive()
        assert self.response.status_code == 200, self.response.content
        return self.response.json()


def until_waiting(count: int, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while REGISTRY.waiting_count() < count:
        assert time.monotonic() < deadline, f"{REGISTRY.waiting_count()} waiting, not {count}"
        time.sleep(0.01)


@pytest.fixture(autouse=True)
def no_waiters_left():
    yield
    assert REGISTRY.waiting_count() == 0


@pytest.mark.parametrize("wait", [61, -1, "5", True, None, [], "nan"])
def test_wait_is_a_number_of_seconds_from_0_to_60(writer, wait):
    response = writer.api.post(f"{S}/next", {"wait": wait})
    assert response.status_code == 422 and "wait" in response.json()["fields"]


def test_a_claim_by_number_does_not_wait(writer, steward, space):
    create_task(space=space, actor=steward.member, title="Retry policy")
    response = writer.api.post(f"{S}/next", {"number": 1, "wait": 5})
    assert response.status_code == 422 and "wait" in response.json()["fields"]


def test_ready_work_is_claimed_at_once_without_waiting(writer, steward, space):
    create_task(space=space, actor=steward.member, title="Retry policy")
    started = time.monotonic()
    body = writer.api.post(f"{S}/next", {"wait": 30}).json()
    assert body["task"]["id"] == 1 and time.monotonic() - started < 5


def test_nothing_within_the_wait_is_task_null(writer):
    agent = Waiting(writer, {"wait": 0.6})
    agent.start()
    assert agent.result() == {"task": None}
    assert 0.55 <= agent.elapsed < 5


def test_a_task_created_while_an_agent_waits_is_claimed_by_it(writer, steward, space):
    agent = Waiting(writer, {"wait": 30})
    agent.start()
    until_waiting(1)
    created_at = time.monotonic()
    create_task(space=space, actor=steward.member, title="Retry policy")
    body = agent.result()
    assert body["task"]["id"] == 1 and body["claim"]["member"]["name"] == "writer"
    assert agent.finished_at - created_at < 5  # well inside the wait: woken, not timed out
    assert Task.objects.get(number=1).status == "claimed"


def test_each_task_goes_to_exactly_one_of_many_waiters(space, steward):
    agents = [Waiting(make_persona(space, "writer", f"agent-{i}"), {"wait": 8}) for i in range(10)]
    for agent in agents:
        agent.start()
    until_waiting(10)
    steward.api.post(f"{S}/tasks/window", {"proposals": [{"title": f"Job number {i} of the batch"} for i in range(4)]})
    results = [agent.result() for agent in agents]
    handed = [r["task"]["id"] for r in results if r["task"] is not None]
    assert sorted(handed) == [1, 2, 3, 4]
    assert Claim.objects.filter(ended_at=None).count() == 4


def test_the_longest_waiter_is_served_first(space, steward):
    first, second, third = (make_persona(space, "writer", name) for name in ("first", "second", "third"))
    agents = []
    for persona in (first, second, third):
        agents.append(Waiting(persona, {"wait": 4}))
        agents[-1].start()
        until_waiting(len(agents))
    create_task(space=space, actor=steward.member, title="Retry policy")
    results = [agent.result() for agent in agents]
    assert results[0]["task"]["id"] == 1 and results[1] == results[2] == {"task": None}


def test_a_waiter_with_labels_waits_for_a_task_carrying_them(writer, steward, space):
    agent = Waiting(writer, {"wait": 10, "labels": ["gpu"]})
    agent.start()
    until_waiting(1)
    create_task(space=space, actor=steward.member, title="Retry policy")
    time.sleep(0.3)
    assert agent.is_alive()  # not for it
    create_task(space=space, actor=steward.member, title="Train the ranking model", labels=["gpu"])
    assert agent.result()["task"]["id"] == 2
    assert Task.objects.get(number=1).status == "open"


def test_a_checker_waits_for_an_attempt_to_check(writer, writer2, steward, space):
    create_task(space=space, actor=steward.member, title="Retry policy")
    writer.api.post(f"{S}/next")
    checker = Waiting(writer2, {"wait": 10, "kind": "check"})
    checker.start()
    until_waiting(1)
    post = writer.api.post(f"{S}/posts", {"body": "It runs."}).json()["id"]
    writer.api.post(f"{S}/tasks/1/done", {"post": post})
    body = checker.result()
    assert body["task"]["id"] == 1 and body["attempt"]["number"] == 1


def test_work_no_notification_announced_is_found_by_the_recheck(writer, writer2, steward, space):
    """A task made open behind the service's back (no NOTIFY) is found within the re-check."""
    create_task(space=space, actor=steward.member, title="Retry policy")
    writer2.api.post(f"{S}/next")
    agent = Waiting(writer, {"wait": 10})
    agent.start()
    until_waiting(1)
    silent = time.monotonic()
    Claim.objects.update(ended_at=timezone.now(), end_reason="gave_back")
    Task.objects.update(status="open")
    assert agent.result()["task"]["id"] == 1
    assert agent.finished_at - silent < 3


def test_a_claim_that_lapses_while_an_agent_waits_goes_to_it(writer, writer2, steward, space):
    create_task(space=space, actor=steward.member, title="Retry policy")
    claim = writer2.api.post(f"{S}/next").json()["claim"]
    agent = Waiting(writer, {"wait": 10})
    agent.start()
    until_waiting(1)
    Claim.objects.filter(pk=claim["id"]).update(expires_at=timezone.now() + timedelta(seconds=0.5))
    body = agent.result()
    assert body["task"]["id"] == 1 and body["claim"]["member"]["name"] == "writer"
    assert Claim.objects.get(pk=claim["id"]).end_reason == "lapsed"


def backends() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return cursor.fetchone()[0]


def test_waiting_holds_no_connection_and_no_transaction(space, steward):
    agents = [Waiting(make_persona(space, "writer", f"agent-{i}"), {"wait": 3}) for i in range(6)]
    before = backends()
    for agent in agents:
        agent.start()
    until_waiting(6)
    time.sleep(0.2)
    during = backends()
    assert during <= before + 1  # the process's one listener, not one connection per waiter
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND state LIKE 'idle in transaction%%'")
        assert cursor.fetchone()[0] == 0
    for agent in agents:
        assert agent.result() == {"task": None}


def test_a_waited_next_with_an_idempotency_key_is_answered_again_by_its_retry(writer, steward, space):
    agent = Waiting(writer, {"wait": 10}, headers={"Idempotency-Key": "wait-1"})
    agent.start()
    until_waiting(1)
    create_task(space=space, actor=steward.member, title="Retry policy")
    first = agent.result()
    retry = writer.api.post(f"{S}/next", {"wait": 10}, headers={"Idempotency-Key": "wait-1"})
    assert retry.headers.get("Idempotent-Replayed") == "true" and retry.json() == first
    assert Claim.objects.count() == 1


def test_the_listener_terminated_comes_back_and_waiters_still_get_work(writer, steward, space):
    agent = Waiting(writer, {"wait": 20})
    agent.start()
    until_waiting(1)
    listener = REGISTRY.listener
    assert listener.connected.wait(5)
    connects = listener.connects
    with connection.cursor() as cursor:
        # This database's listener only: a test running beside this one has its own.
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                       " WHERE application_name = %s AND datname = current_database()", [LISTENER_NAME])
        assert cursor.fetchall() == [(True,)]
    create_task(space=space, actor=steward.member, title="Retry policy")  # its NOTIFY may be lost
    made = time.monotonic()
    assert agent.result()["task"]["id"] == 1
    assert agent.finished_at - made < 4  # the reconnect re-checks at once; the re-check a second later at most
    deadline = time.monotonic() + 5
    while listener.connects == connects:
        assert time.monotonic() < deadline, "the listener did not come back"
        time.sleep(0.05)
    assert listener.connected.is_set()


def test_the_listener_comes_back_at_once_however_often_it_was_cut_before(writer, steward, space):
    """A database restart cuts the listener several times in a process's life: each reconnect
    starts from the shortest pause again, so the sixth comes back as fast as the first."""
    agent = Waiting(writer, {"wait": 30})
    agent.start()
    until_waiting(1)
    listener = REGISTRY.listener
    for _ in range(6):
        assert listener.connected.wait(5)
        connects = listener.connects
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                           " WHERE application_name = %s AND datname = current_database()", [LISTENER_NAME])
        cut = time.monotonic()
        while listener.connects == connects:
            assert time.monotonic() - cut < 5, "the listener did not come back"
            time.sleep(0.01)
        back = time.monotonic() - cut
    assert back < 1.0, f"the sixth reconnect took {back:.1f} s"
    create_task(space=space, actor=steward.member, title="Retry policy")
    assert agent.result()["task"]["id"] == 1


def test_a_key_waits_at_most_max_waits_per_key_at_once_and_others_are_not_held_back(writer, writer2, steward, space):
    """SPEC §15 Capacity: past the space's max_waits_per_key for one key, a waited next answers
    429 at once (the slots live in PostgreSQL: every server process counts them alike)."""
    from spaces.models import Space
    from tasks.models import WaitSlot

    Space.objects.filter(pk=space.pk).update(max_waits_per_key=2)
    agents = [Waiting(writer, {"wait": 20}) for _ in range(2)]
    for agent in agents:
        agent.start()
    until_waiting(2)
    started = time.monotonic()
    third = writer.api.post(f"{S}/next", {"wait": 20})
    assert time.monotonic() - started < 2
    assert third.status_code == 429 and third.json()["error"] == "rate_limited", third.content
    assert third.json()["max_waits_per_key"] == 2 and third["Retry-After"] == "1"
    other = Waiting(writer2, {"wait": 20})  # another key is not held back
    other.start()
    until_waiting(3)
    assert WaitSlot.objects.count() == 3
    for n in range(3):
        create_task(space=space, actor=steward.member, title=f"Job number {n} for a waiter")
    assert {agent.result()["task"] is not None for agent in [*agents, other]} == {True}
    assert WaitSlot.objects.count() == 0  # each wait gave its slot back
    # A slot a dead process left is taken over once its time is past.
    WaitSlot.objects.create(space=space, api_key=writer.member.api_keys.get(), slot=1, token="dead",
                            held_until=timezone.now() - timedelta(seconds=1))
    WaitSlot.objects.create(space=space, api_key=writer.member.api_keys.get(), slot=2, token="alive",
                            held_until=timezone.now() + timedelta(seconds=60))
    late = Waiting(writer, {"wait": 1})
    late.start()
    assert late.result() == {"task": None}
    assert list(WaitSlot.objects.values_list("token", flat=True)) == ["alive"]


def test_a_process_that_holds_all_the_waits_it_may_answers_503_at_once(writer, writer2, monkeypatch):
    """SPEC §15 Capacity: past the waits a server process may hold, a new wait is 503 with
    Retry-After at once (each holds a thread; the requests that run must find one)."""
    from tasks import waiting

    monkeypatch.setattr(waiting, "WAITS_PER_PROCESS", 1)
    first = Waiting(writer, {"wait": 3})
    first.start()
    until_waiting(1)
    started = time.monotonic()
    full = writer2.api.post(f"{S}/next", {"wait": 10})
    assert time.monotonic() - started < 2
    assert full.status_code == 503 and full.json()["error"] == "service_unavailable" and full["Retry-After"]
    assert writer2.api.post(f"{S}/next", {}).json() == {"task": None}  # not waiting: answered as usual
    assert first.result() == {"task": None}
    assert REGISTRY.admitted == 0


@pytest.mark.parametrize("value, status", [(0, 422), (1, 200), (100, 200), (101, 422), (None, 422), ("8", 422)])
def test_max_waits_per_key_is_1_to_100(steward, value, status):
    response = steward.api.patch(S, {"max_waits_per_key": value})
    assert response.status_code == status, response.content
    if status == 200:
        assert response.json()["max_waits_per_key"] == value


def test_a_place_freed_under_a_label_cap_wakes_a_waiting_agent(writer, writer2, steward, space):
    """SPEC §22: with `gpu` at its cap, a waited next waits; a steward withdraws the gpu task that
    held the place, and the waiter takes the other gpu task then, not at the end of its wait."""
    from spaces.models import Space

    for title in ("Train the small model", "Train the large model"):
        create_task(space=space, actor=steward.member, title=title, labels=["gpu"])
    Space.objects.filter(pk=space.pk).update(label_caps={"gpu": 1})
    assert writer.api.post(f"{S}/next").json()["task"]["id"] == 1
    waiting = Waiting(writer2, {"wait": 60})
    waiting.start()
    until_waiting(1)
    assert steward.api.post(f"{S}/tasks/1/withdraw", {"reason": "wrong model"}).status_code == 200
    waiting.join(45)  # far less than its wait: only a wake-up ends it this soon
    assert not waiting.is_alive() and waiting.result()["task"]["id"] == 2
