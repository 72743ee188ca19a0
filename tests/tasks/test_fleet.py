"""SPEC §22: caps on claims, priority aging and dead letters (parked work)."""
from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from tasks.models import Claim, Notification, Task
from tests.conftest import make_persona
from tests.factories import create_task
from tests.tasks.conftest import set_space

S = "/v1/spaces/agent-lab"


def tasks_with(space, steward, *labels_each: list[str]) -> None:
    for i, labels in enumerate(labels_each, start=1):
        create_task(space=space, actor=steward.member, title=f"Fleet work item {i}", labels=labels)


# --- Caps ----------------------------------------------------------------------------------


def test_the_settings_are_read_and_changed_over_the_api(steward, space):
    response = steward.api.patch(S, {"max_claims_per_member": 2, "label_caps": {"GPU": 3},
                                     "priority_aging_minutes": 30, "max_cycles": 3})
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["max_claims_per_member"], body["label_caps"], body["priority_aging_minutes"], body["max_cycles"]) == (
        2, {"gpu": 3}, 30, 3)
    for bad in ({"label_caps": {"gpu": 0}}, {"label_caps": {"no spaces": 1}}, {"label_caps": ["gpu"]},
                {"max_claims_per_member": 0}, {"priority_aging_minutes": 0}, {"max_cycles": 101}):
        refused = steward.api.patch(S, bad)
        assert refused.status_code == 422 and list(refused.json()["fields"]) == list(bad), bad
    off = steward.api.patch(S, {"max_claims_per_member": None, "label_caps": {}, "priority_aging_minutes": None,
                                "max_cycles": None}).json()
    assert (off["max_claims_per_member"], off["label_caps"], off["priority_aging_minutes"], off["max_cycles"]) == (
        None, {}, None, None)


def test_a_member_at_its_cap_is_refused_naming_its_claims(space, steward, writer):
    tasks_with(space, steward, [], [], [])
    set_space(space, max_claims_per_member=2)
    assert [writer.api.post(f"{S}/next").json()["task"]["id"] for _ in range(2)] == [1, 2]
    refused = writer.api.post(f"{S}/next")
    assert refused.status_code == 409
    body = refused.json()
    assert body["error"] == "claim_cap" and body["max_claims_per_member"] == 2
    assert [c["task"] for c in body["claims"]] == [1, 2]
    by_number = writer.api.post(f"{S}/next", {"number": 3})
    assert by_number.status_code == 409 and by_number.json()["error"] == "claim_cap"
    assigned = steward.api.post(f"{S}/tasks/3/assign", {"member": writer.member.pk})
    assert assigned.status_code == 409 and assigned.json()["error"] == "claim_cap"
    writer.api.post(f"{S}/tasks/1/give-back")
    assert writer.api.post(f"{S}/next", {"number": 3}).json()["task"]["id"] == 3
    assert Claim.objects.filter(ended_at=None, member=writer.member).count() == 2


def test_a_cap_counts_only_live_claims(space, steward, writer):
    tasks_with(space, steward, [], [])
    set_space(space, max_claims_per_member=1)
    assert writer.api.post(f"{S}/next").json()["task"]["id"] == 1
    Claim.objects.update(expires_at=timezone.now() - timedelta(seconds=1))  # past its expiry: ended
    assert writer.api.post(f"{S}/next").json()["task"]["id"] in (1, 2)


def test_next_skips_work_whose_label_is_at_its_cap(space, steward, writer, writer2):
    tasks_with(space, steward, ["gpu"], ["gpu", "docs"], [], ["gpu"])
    set_space(space, label_caps={"gpu": 1, "docs": 5})
    assert writer.api.post(f"{S}/next").json()["task"]["id"] == 1
    assert writer2.api.post(f"{S}/next").json()["task"]["id"] == 3  # 2 and 4 carry gpu, at its cap
    third = make_persona(space, "writer", "writer3")
    assert third.api.post(f"{S}/next").json() == {"task": None}
    refused = third.api.post(f"{S}/next", {"number": 2})
    assert refused.status_code == 409 and refused.json()["label_caps"] == {"gpu": 1}
    writer.api.post(f"{S}/tasks/1/give-back")
    assert third.api.post(f"{S}/next").json()["task"]["id"] == 1


@pytest.mark.django_db(transaction=True)
def test_sixteen_agents_never_pass_the_caps(space, steward):
    """Sixteen agents race next (threads, each its own connection) under a cap of 2 a member and
    3 on a label: at no commit is either passed, and the free work is all handed out."""
    from commands.unit import in_transaction
    from django.db import connection
    from tasks import claims
    from tests.factories import member_with_key

    for i in range(60):  # 20 on the gpu label, 40 without
        create_task(space=space, actor=steward.member, title=f"Race job {i}", labels=["gpu"] if i % 3 == 0 else [])
    set_space(space, max_claims_per_member=2, label_caps={"gpu": 3})
    agents = [member_with_key(space, "writer", f"racer-{i}")[0] for i in range(16)]
    barrier = threading.Barrier(len(agents))
    problems: list[BaseException] = []

    def agent(member) -> None:
        try:
            barrier.wait()
            for _ in range(4):
                try:
                    in_transaction(claims.claim_next_task, space=space, member=member)
                except Exception as error:  # a refusal is the cap working; anything else is a failure
                    if getattr(error, "code", None) != "claim_cap":
                        raise
        except BaseException as error:
            problems.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=agent, args=(m,)) for m in agents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not problems
    live = Claim.objects.filter(ended_at=None)
    assert max(Counter(live.values_list("member_id", flat=True)).values()) == 2
    assert live.filter(task__labels__contains=["gpu"]).count() == 3
    assert live.count() == 16 * 2  # every agent filled its cap: 3 gpu tasks and 29 others


# --- Priority aging ------------------------------------------------------------------------------


def test_aging_moves_a_long_ready_task_ahead(space, steward, writer):
    create_task(space=space, actor=steward.member, title="Old chore", priority=3)
    create_task(space=space, actor=steward.member, title="Fresh urgent work", priority=1)
    Task.objects.filter(number=1).update(ready_since=timezone.now() - timedelta(minutes=95))
    assert writer.api.get(f"{S}/tasks?ready=true&order=next").json()["results"][0]["id"] == 2  # aging off
    set_space(space, priority_aging_minutes=30)  # 95 minutes: three steps, 3 -> 0
    assert [t["id"] for t in writer.api.get(f"{S}/tasks?ready=true&order=next").json()["results"]] == [1, 2]
    assert writer.api.post(f"{S}/next").json()["task"]["id"] == 1
    assert Task.objects.get(number=1).priority == 3  # its own priority is unchanged


def test_next_takes_tasks_in_the_order_the_aged_list_shows(space, steward, writer):
    """next finds the aged queue's head by each priority's oldest task (tasks.filters.aged_head):
    it hands tasks out in exactly the order the list computes for every task."""
    import random

    rng = random.Random(7)
    now = timezone.now()
    for i in range(40):
        create_task(space=space, actor=steward.member, title=f"Aged job {i}", priority=rng.randrange(5))
        # Ages a quarter step past a multiple of the aging step: no task changes step during the test.
        Task.objects.filter(number=i + 1).update(ready_since=now - timedelta(minutes=30 * rng.randrange(8) + 7))
    set_space(space, priority_aging_minutes=30)
    listed = [t["id"] for t in writer.api.get(f"{S}/tasks?ready=true&order=next&limit=100").json()["results"]]
    handed = [writer.api.post(f"{S}/next").json()["task"]["id"] for _ in range(40)]
    assert handed == listed and len(set(handed)) == 40
    assert listed != sorted(listed, key=lambda n: (Task.objects.get(number=n).priority, n))  # aging changed it


def test_aging_never_passes_zero_and_ties_go_to_the_lower_number(space, steward, writer):
    create_task(space=space, actor=steward.member, title="Urgent from the start", priority=0)
    create_task(space=space, actor=steward.member, title="Aged for days", priority=4)
    Task.objects.filter(number=2).update(ready_since=timezone.now() - timedelta(days=3))
    set_space(space, priority_aging_minutes=1)
    assert writer.api.post(f"{S}/next").json()["task"]["id"] == 1


def test_a_task_ages_from_when_it_became_ready_unblocked_included(space, steward, writer):
    create_task(space=space, actor=steward.member, title="Ship the release")
    create_task(space=space, actor=steward.member, title="Write the release notes", blocked_by=[1])
    Task.objects.update(ready_since=timezone.now() - timedelta(hours=5))
    before = timezone.now()
    steward.api.post(f"{S}/tasks/1/withdraw", {"reason": "not needed"})
    assert Task.objects.get(number=2).ready_since >= before  # ready from its blocker's end, not its open


def test_a_task_ages_from_when_it_last_opened(space, steward, writer):
    create_task(space=space, actor=steward.member, title="Given back later", priority=3)
    Task.objects.filter(number=1).update(ready_since=timezone.now() - timedelta(hours=5))
    writer.api.post(f"{S}/next")
    before = timezone.now()
    writer.api.post(f"{S}/tasks/1/give-back")
    assert Task.objects.get(number=1).ready_since >= before  # the database set it, on this path as on any


# --- Dead letters ------------------------------------------------------------------------------


def test_a_task_set_back_max_cycles_times_is_parked_until_a_steward_unparks_it(space, steward, writer):
    create_task(space=space, actor=steward.member, title="Flaky migration")
    set_space(space, max_cycles=2)
    writer.api.post(f"{S}/next")
    writer.api.post(f"{S}/tasks/1/give-back")  # one
    assert Task.objects.get(number=1).status == "open"
    writer.api.post(f"{S}/next")
    Claim.objects.filter(ended_at=None).update(expires_at=timezone.now() - timedelta(seconds=1))
    call_command("expire_claims")  # two: a lapse
    task = writer.api.get(f"{S}/tasks/1").json()
    assert task["status"] == "parked" and not task["ready"]
    assert writer.api.post(f"{S}/next").json() == {"task": None}
    assert writer.api.post(f"{S}/next", {"number": 1}).json()["error"] == "task_not_open"
    again = writer.api.post(f"{S}/tasks", {"title": "Flaky migration"})
    assert again.status_code == 409 and again.json()["winner"]["status"] == "parked"  # it keeps its key
    kinds = [e["kind"] for e in writer.api.get(f"{S}/tasks/1/history").json()["results"]]
    assert kinds[-1] == "parked"
    assert Notification.objects.filter(member=steward.member, kind="task_parked").count() == 1
    assert [e["type"] for e in steward.api.get(f"{S}/events?types=task.parked").json()["events"]] == ["task.parked"]
    assert writer.api.post(f"{S}/tasks/1/unpark").status_code == 403
    unparked = steward.api.post(f"{S}/tasks/1/unpark")
    assert unparked.status_code == 200 and unparked.json()["status"] == "open"
    assert steward.api.post(f"{S}/tasks/1/unpark").json()["error"] == "task_not_parked"
    assert Task.objects.get(number=1).setbacks == 0
    assert writer.api.post(f"{S}/next").json()["task"]["id"] == 1


def test_rejected_attempts_count_and_a_parked_task_can_be_withdrawn(space, steward, writer, writer2):
    create_task(space=space, actor=steward.member, title="Write the changelog")
    set_space(space, max_cycles=1, confirmations_required=1)
    writer.api.post(f"{S}/next")
    post = writer.api.post(f"{S}/posts", {"body": "Changelog draft"}).json()
    attempt = writer.api.post(f"{S}/tasks/1/done", {"post": post["id"]}).json()
    number = attempt["attempt"]["number"] if "attempt" in attempt else attempt["number"]
    writer2.api.post(f"{S}/tasks/1/attempts/{number}/reject", {"reason": "wrong file"})
    assert Task.objects.get(number=1).status == "parked"
    assert steward.api.post(f"{S}/tasks/1/withdraw", {"reason": "not worth it"}).json()["status"] == "withdrawn"
    assert writer.api.post(f"{S}/tasks", {"title": "Write the changelog"}).status_code == 201  # key freed


def test_without_max_cycles_nothing_is_parked(space, steward, writer):
    create_task(space=space, actor=steward.member, title="Keeps coming back")
    for _ in range(4):
        writer.api.post(f"{S}/next")
        writer.api.post(f"{S}/tasks/1/give-back")
    assert Task.objects.get(number=1).status == "open" and Task.objects.get(number=1).setbacks == 4


@pytest.mark.django_db(transaction=True)
def test_sixteen_agents_on_two_server_hosts_never_pass_the_caps(space, steward):
    """The same race over HTTP: two gunicorn servers (two hosts' worth of processes), eight
    agents on each, each calling next four times."""
    import httpx

    from tests.live_server import gunicorn

    for i in range(60):
        create_task(space=space, actor=steward.member, title=f"Host race job {i}", labels=["gpu"] if i % 3 == 0 else [])
    set_space(space, max_claims_per_member=2, label_caps={"gpu": 3})
    agents = [make_persona(space, "writer", f"host-racer-{i}") for i in range(16)]
    statuses: list[int] = []
    with gunicorn(workers=2) as first, gunicorn(workers=2) as second:
        barrier = threading.Barrier(len(agents))

        def agent(index: int) -> None:
            base = first if index % 2 else second
            barrier.wait()
            for _ in range(4):
                response = httpx.post(f"{base}{S}/next", json={}, timeout=60,
                                      headers={"Authorization": f"Bearer {agents[index].key}"})
                statuses.append(response.status_code)

        threads = [threading.Thread(target=agent, args=(i,)) for i in range(len(agents))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    assert set(statuses) <= {200, 409} and len(statuses) == 64
    live = Claim.objects.filter(ended_at=None)
    assert max(Counter(live.values_list("member_id", flat=True)).values()) == 2
    assert live.filter(task__labels__contains=["gpu"]).count() == 3
    assert live.count() == 32


@pytest.mark.django_db(transaction=True)
def test_with_every_head_of_the_aged_queue_held_next_still_finds_the_work_behind(space, steward, writer):
    """More agents taking work at once than the heads next reads (AGED_CANDIDATES): with all of
    them locked by other transactions, next hands out the next task of the queue instead of
    finding none."""
    from django.db import connection as main_connection

    from tasks.filters import AGED_CANDIDATES

    for i in range(AGED_CANDIDATES + 4):
        create_task(space=space, actor=steward.member, title=f"Aged batch job {i}")
    set_space(space, priority_aging_minutes=30)
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        from django.db import connection, transaction

        try:
            with transaction.atomic():
                list(Task.objects.select_for_update().filter(number__lte=AGED_CANDIDATES).values_list("pk"))
                held.set()
                release.wait(60)
        finally:
            connection.close()

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(30)
        assert writer.api.post(f"{S}/next").json()["task"]["id"] == AGED_CANDIDATES + 1
    finally:
        release.set()
        thread.join(60)
        main_connection.close()
