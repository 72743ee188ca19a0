"""Racing agents create each piece of work once: real gunicorn workers on PostgreSQL (SPEC §4.5)."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
from collections import Counter, defaultdict

import httpx
import pytest

from allocation.models import Occupancy, Reservation
from idempotency.models import Operation
from spaces.models import Space
from tasks.models import Task
from tests.conftest import load_agent_lab
from tests.factories import member_with_key
from tests.live_server import ROOT, gunicorn, server_env

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

S = "/v1/spaces/agent-lab"
PHRASINGS = {
    "task:agent-lab:slot:T1": [
        "Benchmark harness for code-review agents",
        "Build a benchmark for code review agents",
        "  Evaluation   suite for REVIEW agents ",
        "review agent benchmark",
    ],
    "task:agent-lab:slot:T2": ["Token spend dashboard (per model)", "Cost tracking dashboard for model calls"],
    "task:agent-lab:slot:T3": ["T2 — Retry & backoff policy for tool calls", "Retry and backoff policy for tool calls"],
    "task:agent-lab:write the onboarding guide": ["Write the onboarding guide", "  WRITE the\tonboarding guide"],
    "task:agent-lab:retry policy": ["Retry policy", "retry   POLICY"],
}
EXPECTED_KEYS = set(PHRASINGS)


def run_clients(count: int, work) -> list:
    barrier = threading.Barrier(count)
    results: list = []
    lock = threading.Lock()

    def client(index: int) -> None:
        barrier.wait()
        out = work(index)
        with lock:
            results.extend(out)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results


def test_32_clients_on_4_workers_create_each_task_once():
    load_agent_lab()
    space = Space.objects.get(slug="agent-lab")
    keys = [member_with_key(space, "writer", f"agent-{i}")[1] for i in range(32)]
    titles = [(target, title) for target, phrasings in PHRASINGS.items() for title in phrasings]

    with gunicorn(workers=4) as base:

        def work(index: int) -> list:
            rng = random.Random(index)
            mine = titles[:]
            rng.shuffle(mine)
            out = []
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {keys[index]}"}, timeout=60) as http:
                for target, title in mine:
                    response = http.post(f"{S}/tasks", json={"title": title})
                    out.append((target, response.status_code, response.json()))
            return out

        results = run_clients(32, work)

    assert len(results) == 32 * len(titles)
    statuses = Counter(status for _, status, _ in results)
    assert set(statuses) <= {201, 409}, statuses  # no 5xx, nothing else
    tasks = list(Task.objects.all())
    assert {t.conflict_target for t in tasks} == EXPECTED_KEYS
    assert len(tasks) == len(EXPECTED_KEYS)  # exactly one task per key
    assert statuses[201] == len(EXPECTED_KEYS)
    number_of = {t.conflict_target: t.number for t in tasks}
    for target, status, body in results:
        if status == 201:
            assert body["conflict_key"]["target"] == target
            continue
        assert body["error"] == "allocation_conflict" and body["write_occurred"] is False
        assert body["conflict_key"] == {"kind": "create_task", "target": target, "delivery_mode": "result"}
        if body["code"] == "conflict_key_occupied":
            assert body["outcome"] == "redirect"
            assert body["winner"] == {"type": "task", "id": number_of[target], "status": "open"}
        else:
            assert body["code"] == "conflict_key_reserved" and body["outcome"] == "idle"
            assert body["winner"]["type"] == "reserved_intent" and body["retry_after_ms"] == 200
    assert Occupancy.objects.count() == len(EXPECTED_KEYS)
    assert not Reservation.objects.exists()


CRASH_AFTER_RESERVE = """
import os, sys, time
import django
django.setup()
from spaces.models import Member
from tasks import services
from tests.factories import create_task

real_reserve = services.reserve_task

def reserve_then_hang(**arguments):
    intent = real_reserve(**arguments)
    print("reserved", flush=True)
    time.sleep(600)  # killed here, its reservation written and not committed

services.reserve_task = reserve_then_hang
member = Member.objects.get(pk=int(sys.argv[1]))
create_task(space=member.space, actor=member, title="Retry policy")
"""


def test_a_process_killed_between_reserve_and_mutate_leaves_nothing_in_the_way():
    """SPEC §4.5 as amended: a create's reservation commits with its work, so a create killed after
    reserving leaves nothing behind — no reservation to wait out, no task — and the next create
    of the key is answered at once."""
    load_agent_lab()
    space = Space.objects.get(slug="agent-lab")
    victim, _ = member_with_key(space, "writer", "victim")
    _, key = member_with_key(space, "writer", "survivor")

    with gunicorn(workers=2) as base, httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as http:
        process = subprocess.Popen([sys.executable, "-c", CRASH_AFTER_RESERVE, str(victim.pk)], cwd=ROOT,
                                   env=server_env(), stdout=subprocess.PIPE, text=True)
        answers: list[httpx.Response] = []
        rival = threading.Thread(target=lambda: answers.append(httpx.post(
            f"{base}{S}/tasks", json={"title": "retry policy"}, headers={"Authorization": f"Bearer {key}"},
            timeout=60)))
        try:
            line = process.stdout.readline()
            assert line.startswith("reserved"), line
            assert not Reservation.objects.exists()  # written, not committed: nobody else sees it
            rival.start()
            rival.join(timeout=1)
            assert rival.is_alive()  # it waits on the reservation's index entry: no answer while it lives
        finally:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
        rival.join(timeout=60)
        created = answers[0]  # answered by what committed: nothing was in its way
        assert created.status_code == 201, created.text
        again = http.post(f"{S}/tasks", json={"title": "retry policy"})
        assert again.status_code == 409 and again.json()["winner"]["id"] == created.json()["id"]
    assert Task.objects.count() == 1 and not Reservation.objects.exists()


def test_eight_identical_idempotent_requests_across_processes_have_one_effect():
    load_agent_lab()
    space = Space.objects.get(slug="agent-lab")
    _, key = member_with_key(space, "writer", "retrier")
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": "one-effect"}

    with gunicorn(workers=4) as base:

        def work(index: int) -> list:
            with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
                response = http.post(f"{S}/tasks", json={"title": "Write the onboarding guide"})
                return [(response.status_code, response.headers.get("Idempotent-Replayed"), response.json())]

        results = run_clients(8, work)

    assert Task.objects.count() == 1
    kinds = defaultdict(int)
    for status, replayed, body in results:
        assert status < 500
        if status == 201:
            kinds["replayed" if replayed == "true" else "original"] += 1
            assert body["id"] == 1
        else:
            assert status == 409 and body["error"] == "idempotency_in_progress", body
            kinds["in_progress"] += 1
    assert kinds["original"] == 1
    assert Operation.objects.get().response_status == 201


def test_a_first_attempt_is_never_overtaken_by_a_request_refused_anyway():
    """Seven requests with one Idempotency-Key at once, each with a body of its own: the one
    whose touch stored the operation creates its task, and the six others are refused (422
    idempotency_key_reused, or 409 in progress while it runs). A refused request never takes
    the operation's lock (the first touch locks only for a request whose tuple matches the
    operation's), so every round has its 201."""
    load_agent_lab()
    space = Space.objects.get(slug="agent-lab")
    _, key = member_with_key(space, "writer", "agent")
    rounds = 30
    with gunicorn(workers=4) as base:
        answers: list[list[tuple[int, str]]] = []
        for round_ in range(rounds):
            def work(index: int, round_: int = round_) -> list:
                response = httpx.post(f"{base}{S}/tasks", json={"title": f"round {round_} body {index}"}, timeout=60,
                                      headers={"Authorization": f"Bearer {key}", "Idempotency-Key": f"k{round_}"})
                body = response.json()
                return [(response.status_code, body.get("code") or body.get("error"))]

            answers.append(run_clients(7, work))
    assert [sum(status == 201 for status, _ in round_) for round_ in answers] == [1] * rounds, answers
    refused = Counter(answer for round_ in answers for answer in round_ if answer[0] != 201)
    assert set(refused) <= {(422, "idempotency_key_reused"), (409, "idempotency_in_progress")}, refused
    assert Task.objects.count() == rounds and not Reservation.objects.exists()
