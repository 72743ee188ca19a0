"""SPEC §13 under concurrency, with real threads on PostgreSQL (every step commits)."""
from __future__ import annotations

import random
import threading
import time
from collections import Counter, defaultdict
from typing import Callable

import pytest
from django.db import connection, models

from commands.unit import in_transaction
from common.refusals import DomainError
from tasks import attempts, claims, graph
from tasks.models import Dependency, Task, TaskEvent
from tests.factories import create_task
from tests.conftest import load_agent_lab
from tests.factories import member_with_key
from tests.tasks.conftest import set_space

pytestmark = [pytest.mark.django_db(transaction=True)]


def run_together(workers: list[Callable[[], None]], timeout: float = 120) -> list[BaseException]:
    """Start the workers at one barrier; the exceptions they raised (DomainErrors are answers, not failures)."""
    barrier = threading.Barrier(len(workers))
    failures: list[BaseException] = []

    def wrap(work):
        try:
            barrier.wait()
            work()
        except BaseException as exc:  # surfaced to the test
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=wrap, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a worker hung"
    return failures


def assert_acyclic(space) -> None:
    """Kahn's algorithm over every stored edge: all tasks drain, or a cycle was stored."""
    edges = list(Dependency.objects.filter(space=space).values_list("task_id", "blocker_id"))
    waiting_on: dict[int, set[int]] = defaultdict(set)
    nodes = set()
    for task, blocker in edges:
        waiting_on[task].add(blocker)
        nodes |= {task, blocker}
    free = [n for n in nodes if not waiting_on[n]]
    drained = 0
    while free:
        node = free.pop()
        drained += 1
        for task in nodes:
            if node in waiting_on[task]:
                waiting_on[task].discard(node)
                if not waiting_on[task]:
                    free.append(task)
    assert drained == len(nodes), "a cycle was stored"


def test_two_writers_crossing_blockers_never_store_a_cycle():
    space = load_agent_lab()
    writer, _ = member_with_key(space, "writer")
    for round_ in range(15):
        a = create_task(space=space, actor=writer, title=f"a {round_}")
        b = create_task(space=space, actor=writer, title=f"b {round_}")
        outcomes: list[str] = []

        def add(task, blocker):
            def work():
                try:
                    graph.add_blocker(space=space, number=task.number, blocker_number=blocker.number, actor=writer)
                    outcomes.append("added")
                except DomainError as error:
                    outcomes.append(error.code)
            return work

        assert run_together([add(a, b), add(b, a)]) == []
        assert sorted(outcomes) == ["added", "dependency_cycle"]
    assert_acyclic(space)


def test_a_random_storm_of_blockers_stores_no_cycle():
    space = load_agent_lab()
    writers = [member_with_key(space, "writer", f"w{i}")[0] for i in range(6)]
    numbers = [create_task(space=space, actor=writers[0], title=f"node {i}").number for i in range(10)]
    refused = Counter()

    def storm(member, seed):
        rng = random.Random(seed)

        def work():
            for _ in range(40):
                task, blocker = rng.sample(numbers, 2)
                try:
                    if rng.random() < 0.2:
                        graph.remove_blocker(space=space, number=task, blocker_number=blocker, actor=member)
                    else:
                        graph.add_blocker(space=space, number=task, blocker_number=blocker, actor=member)
                except DomainError as error:
                    refused[error.code] += 1
        return work

    assert run_together([storm(m, i) for i, m in enumerate(writers)]) == []
    assert refused["dependency_cycle"] > 0  # the storm really tried to close cycles
    assert Dependency.objects.filter(space=space).exists()
    assert_acyclic(space)


def test_a_blocker_finishing_while_agents_call_next_hands_each_dependent_out_once_and_never_early():
    space = load_agent_lab()
    set_space(space, confirmations_required=0)
    creator, _ = member_with_key(space, "steward")
    doer, _ = member_with_key(space, "writer", "doer")
    agents = [member_with_key(space, "writer", f"agent-{i}")[0] for i in range(6)]
    from spaces.models import Post

    for round_ in range(4):
        blocker = create_task(space=space, actor=creator, title=f"blocker {round_}")
        claims.claim_task(space=space, member=doer, number=blocker.number)
        dependents = {create_task(space=space, actor=creator, title=f"dep {round_}.{i}",
                                  blocked_by=[blocker.number]).number for i in range(8)}
        post = Post.objects.create(space=space, author=doer, body=f"result {round_}")
        handed: list[int] = []
        early: list[int] = []
        stop = threading.Event()

        def agent(member):
            def work():
                while True:
                    finished = stop.is_set()  # read before the call: a call begun earlier may miss the commit
                    claimed = in_transaction(claims.claim_next_task, space=space, member=member)
                    if claimed is None:
                        if finished:
                            return
                        continue
                    number = claimed[0].number
                    handed.append(number)
                    if number in dependents and Task.objects.get(pk=blocker.pk).status != "done":
                        early.append(number)
            return work

        def finish():
            attempts.mark_done(task=Task.objects.get(pk=blocker.pk), member=doer, post_id=post.pk)
            stop.set()

        assert run_together([agent(m) for m in agents] + [finish]) == []
        assert early == []
        assert sorted(n for n in handed if n in dependents) == sorted(dependents)  # each exactly once
        assert Counter(handed).most_common(1)[0][1] == 1
        assert TaskEvent.objects.filter(task__number__in=dependents, kind="unblocked").count() == len(dependents)


def test_many_agents_with_and_without_labels_take_ready_work_in_order_and_each_once():
    space = load_agent_lab()
    creator, _ = member_with_key(space, "steward")
    rng = random.Random(13)
    label_sets = [[], ["api"], ["db"], ["api", "db"]]
    for i in range(90):
        blocked_by = [rng.randint(1, i)] if i and rng.random() < 0.3 else []
        create_task(space=space, actor=creator, title=f"job {i}", priority=rng.randint(0, 4),
                    labels=rng.choice(label_sets), blocked_by=blocked_by)
    # Ready as the lists read it (tasks.filters): `next`'s own statement must agree with it.
    from tasks.filters import ready_condition

    ready = {t.pk: t for t in Task.objects.filter(space=space).filter(ready_condition())}
    assert 0 < len(ready) < 90
    filters = [[], [], ["api"], ["db"], ["api", "db"], []]
    agents = [member_with_key(space, "writer", f"agent-{i}")[0] for i in range(len(filters))]
    handed: list[tuple[int, tuple[str, ...], float, float]] = []  # task, filter, call began, call returned

    def agent(member, labels):
        def work():
            while True:
                began = time.monotonic()
                claimed = in_transaction(claims.claim_next_task, space=space, member=member, labels=labels)
                if claimed is None:
                    return
                handed.append((claimed[0].pk, tuple(labels), began, time.monotonic()))
        return work

    assert run_together([agent(m, f) for m, f in zip(agents, filters)]) == []
    taken = [pk for pk, *_ in handed]
    assert len(taken) == len(set(taken))  # no task handed out twice
    assert set(taken) == set(ready)  # every ready task was handed out, and no blocked one
    began = {pk: start for pk, _, start, _ in handed}
    for pk, labels, _, returned in handed:
        task = ready[pk]
        for other in ready.values():
            earlier = (other.priority, other.number) < (task.priority, task.number)
            # An earlier task its filter admits must already have been taken, or been being taken
            # (SKIP LOCKED passes over it then), when this call returned; else it sat there ready.
            if earlier and set(labels) <= set(other.labels):
                assert began[other.pk] < returned, (
                    f"task {other.number} was ready throughout but task {task.number} went first")


def test_a_storm_of_every_graph_writer_deadlocks_never_and_keeps_edges_between_live_tasks():
    """Blockers added and removed, tasks withdrawn, superseded and claimed, all at once: no deadlock
    or other error, no cycle, and every stored edge joins two live tasks (an ending task takes its
    edges with it)."""
    from tasks import stewardship
    from tasks.models import LIVE_STATUSES

    space = load_agent_lab()
    steward, _ = member_with_key(space, "steward", "boss")
    writers = [member_with_key(space, "writer", f"w{i}")[0] for i in range(5)]
    numbers = [create_task(space=space, actor=steward, title=f"node {i}").number for i in range(16)]
    refused = Counter()

    def storm(member, seed):
        rng = random.Random(seed)

        def work():
            for _ in range(30):
                a, b = rng.sample(numbers, 2)
                roll = rng.random()
                try:
                    if roll < 0.45:
                        graph.add_blocker(space=space, number=a, blocker_number=b, actor=member)
                    elif roll < 0.6:
                        graph.remove_blocker(space=space, number=a, blocker_number=b, actor=member)
                    elif roll < 0.7:
                        in_transaction(claims.claim_next_task, space=space, member=member)
                    elif roll < 0.8:
                        stewardship.withdraw_task(task=Task.objects.get(space=space, number=a), actor=steward)
                    elif roll < 0.9:
                        stewardship.supersede_task(task=Task.objects.get(space=space, number=a),
                                                   survivor=Task.objects.get(space=space, number=b), actor=steward,
                                                   reason="storm")
                    else:
                        claims.claim_task(space=space, member=member, number=a)
                except DomainError as error:
                    refused[error.code] += 1
        return work

    assert run_together([storm(m, i) for i, m in enumerate(writers + [steward])]) == []
    assert sum(refused.values()) > 0
    assert_acyclic(space)
    live = set(Task.objects.filter(space=space, status__in=LIVE_STATUSES).values_list("pk", flat=True))
    for task_id, blocker_id in Dependency.objects.filter(space=space).values_list("task_id", "blocker_id"):
        assert task_id in live and blocker_id in live, (task_id, blocker_id)
    assert TaskEvent.objects.filter(kind="unblocked").values("task").annotate(n=models.Count("id")).filter(
        n__gt=len(numbers)).count() == 0
