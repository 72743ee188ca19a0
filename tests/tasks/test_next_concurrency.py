"""16 agents call `next` at once over 200 open tasks (PostgreSQL, SKIP LOCKED)."""
from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from django.db import connection, transaction

from commands.unit import in_transaction
from tasks import claims
from tasks.models import Claim, Task, TaskEvent
from tests.factories import create_task
from tests.conftest import load_agent_lab
from tests.factories import member_with_key

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_sixteen_agents_never_get_the_same_task_and_none_is_lost():
    space = load_agent_lab()
    creator, _ = member_with_key(space, "steward")
    for i in range(200):
        create_task(space=space, actor=creator, title=f"job {i}")
    agents = [member_with_key(space, "writer", f"agent-{i}")[0] for i in range(16)]
    barrier = threading.Barrier(16)
    handed: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def agent(member):
        try:
            barrier.wait()
            while True:
                claimed = in_transaction(claims.claim_next_task, space=space, member=member)
                if claimed is None:
                    return
                with lock:
                    handed.append(claimed[0].number)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=agent, args=(m,)) for m in agents]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    assert sorted(handed) == list(range(1, 201))  # each task exactly once, none lost
    assert Counter(Claim.objects.values_list("task_id", flat=True)).most_common(1)[0][1] == 1
    assert not Task.objects.filter(status="open").exists()
    assert Task.objects.filter(status="claimed").count() == 200
    events = TaskEvent.objects.filter(kind="claimed")
    assert events.count() == 200 and all(e.details["claim"] and e.actor_id == e.details["member"] for e in events)
    per_agent = Counter(Claim.objects.values_list("member_id", flat=True))
    assert len(per_agent) > 1  # they really ran side by side


def hold_row_of(task: Task, *, claim: bool, locked: threading.Event, ended: threading.Event) -> None:
    """Hold ``task``'s row lock for a moment, as a heartbeat or a lapse does (``claim=False``) or
    as another ``next`` claiming it does (``claim=True``: the task is claimed when it ends)."""
    try:
        with transaction.atomic():
            Task.objects.select_for_update(no_key=True).get(pk=task.pk)
            locked.set()
            time.sleep(0.4)
            if claim:
                Task.objects.filter(pk=task.pk).update(status="claimed")
            ended.set()  # the last step before the commit that lets the row go
    finally:
        connection.close()


@pytest.mark.parametrize("claimed_meanwhile", [False, True])
def test_next_does_not_answer_nothing_while_the_ready_task_is_only_locked(claimed_meanwhile):
    """SKIP LOCKED passes over a row another transaction holds. A heartbeat or a lapse holds a
    ready task's row for a moment too, and that task is still there to do (SPEC §6.1: nothing to
    do is `{"task": null}`): next waits for the holder, then answers what is true once it ended."""
    space = load_agent_lab()
    creator, _ = member_with_key(space, "steward")
    task = create_task(space=space, actor=creator, title="the only job")
    agent = member_with_key(space, "writer", "agent")[0]
    locked, ended = threading.Event(), threading.Event()
    holder = threading.Thread(target=hold_row_of, args=(task,),
                              kwargs={"claim": claimed_meanwhile, "locked": locked, "ended": ended})
    holder.start()
    assert locked.wait(10)
    claimed = in_transaction(claims.claim_next_task, space=space, member=agent)
    assert ended.is_set()  # it waited for the holder rather than guessing
    holder.join()
    if claimed_meanwhile:
        assert claimed is None  # the other one took it: now there is nothing
    else:
        assert claimed is not None and claimed[0].number == task.number
        assert Claim.objects.get().member_id == agent.pk


def test_the_wait_for_a_held_ready_row_keeps_no_lock():
    """``ready_once_unlocked`` takes the row it waited for in a savepoint it rolls back: a next
    that kept it while it waited in a later round could wait for one that waits for it."""
    from django.db import connections

    space = load_agent_lab()
    creator, _ = member_with_key(space, "steward")
    task = create_task(space=space, actor=creator, title="the only job")

    def wait_then_look_from_elsewhere() -> None:
        assert claims.ready_once_unlocked(space=space, labels=[]) is True
        other = connections.create_connection("default")
        try:
            with other.cursor() as cursor:  # raises LockNotAvailable if this transaction kept the row
                cursor.execute(f'SELECT id FROM "{Task._meta.db_table}" WHERE id = %s FOR UPDATE NOWAIT', [task.pk])
                assert cursor.fetchone() == (task.pk,)
        finally:
            other.close()

    in_transaction(wait_then_look_from_elsewhere)


def test_two_nexts_waiting_on_each_others_rows_end_in_a_look_again_not_an_error():
    """ready_once_unlocked's wait (a next that found every ready row held): two such waits, each
    holding a row the other's queue reaches first (as a claim statement keeps a row it locked and
    did not claim), are a deadlock PostgreSQL breaks; the next it ends looks again instead of
    failing."""
    space = load_agent_lab()
    creator, _ = member_with_key(space, "steward")
    first = create_task(space=space, actor=creator, title="labelled a", labels=["a"])
    second = create_task(space=space, actor=creator, title="labelled b", labels=["b"])
    holding = threading.Barrier(2)
    answers: list[object] = []

    def agent(held: Task, asks: str) -> None:
        try:
            with transaction.atomic():
                Task.objects.select_for_update().get(pk=held.pk)  # the row it locked, not claimed
                holding.wait()
                answers.append(claims.ready_once_unlocked(space=space, labels=[asks]))
        except BaseException as error:  # noqa: BLE001  (the test reports it)
            answers.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=agent, args=(second, "a")), threading.Thread(target=agent, args=(first, "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert answers == [True, True]
