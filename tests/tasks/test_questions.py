"""SPEC §21: questions that pause work. While a question is open its task is waiting (occupies,
not ready); the asker's claim is kept with its lease paused or given back; the first answer
closes it, once; deadlines, withdrawals and a waited ask."""
from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from events.models import Event
from tasks.claims import expire_claims
from tasks.models import PAUSED_UNTIL, Claim, Notification, Question, Task
from tasks.waiting import REGISTRY
from tests.conftest import make_persona
from tests.factories import create_task

S = "/v1/spaces/agent-lab"
pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def held(space, steward, writer):
    """Task 1, created by the steward, held by the writer."""
    create_task(space=space, actor=steward.member, title="Pick the queue library")
    claimed = writer.api.post(f"{S}/next", {}).json()
    assert claimed["task"]["id"] == 1
    return claimed


def ask(persona, number=1, **body):
    return persona.api.post(f"{S}/tasks/{number}/questions", {"body": "Which of the two APIs?", "to": "creator",
                                                             **body})


def test_a_holder_asks_the_creator_and_its_claim_waits_paused(held, writer, writer2, steward):
    asked = ask(writer, options=["v1", "v2"])
    assert asked.status_code == 201, asked.json()
    question = asked.json()
    assert question["state"] == "open" and question["hold"] is True and question["addressee"] == steward.member.pk
    assert steward.api.get(f"{S}/tasks/1").json()["status"] == "waiting"
    assert writer2.api.post(f"{S}/next", {}).json() == {"task": None}  # waiting is not ready
    claim = Claim.objects.get(member=writer.member)
    assert claim.expires_at == PAUSED_UNTIL
    assert expire_claims(now=timezone.now() + timedelta(days=30)) == 0  # a paused lease does not lapse
    beat = writer.api.post(f"{S}/tasks/1/heartbeat", {})
    assert beat.status_code == 200 and Claim.objects.get(pk=claim.pk).expires_at == PAUSED_UNTIL
    assert writer.api.post(f"{S}/tasks/1/done", {"post": 1}).json()["error"] in ("task_not_open", "task_post_not_found")
    assert Notification.objects.filter(member=steward.member, kind="question_asked").count() == 1

    answered = steward.api.post(f"{S}/tasks/1/questions/{question['id']}/answer", {"option": "v2", "body": "v2."})
    assert answered.status_code == 200, answered.json()
    assert answered.json()["state"] == "answered" and answered.json()["option"] == "v2"
    task = steward.api.get(f"{S}/tasks/1").json()
    assert task["status"] == "claimed"
    lease = Claim.objects.get(pk=claim.pk)
    assert lease.ended_at is None and lease.expires_at < PAUSED_UNTIL and lease.expires_at > timezone.now()
    assert Notification.objects.filter(member=writer.member, kind="question_answered").count() == 1

    late = steward.api.post(f"{S}/tasks/1/questions/{question['id']}/answer", {"body": "v1 after all"})
    assert late.status_code == 409 and late.json()["error"] == "question_closed"
    assert late.json()["question"]["answer"] == "v2."  # the first answer stands
    types = list(Event.objects.values_list("type", flat=True))
    assert types.count("question.asked") == 1 and types.count("question.answered") == 1
    history = [e["kind"] for e in steward.api.get(f"{S}/tasks/1/history").json()["results"]]
    assert "asked" in history and "answered" in history


def test_a_question_without_hold_gives_the_claim_back_and_the_answer_opens_the_task(held, writer, writer2, steward):
    question = ask(writer, hold=False).json()
    assert question["hold"] is False
    assert Claim.objects.get(member=writer.member).end_reason == "gave_back"
    steward.api.post(f"{S}/tasks/1/questions/{question['id']}/answer", {"body": "Use v2."})
    assert steward.api.get(f"{S}/tasks/1").json()["status"] == "open"
    assert writer2.api.post(f"{S}/next", {}).json()["task"]["id"] == 1


def test_one_open_question_an_asker_a_task(held, writer):
    first = ask(writer).json()
    again = ask(writer)
    assert again.status_code == 409 and again.json()["error"] == "allocation_conflict"
    assert again.json()["conflict_key"]["kind"] == "ask_question"
    assert again.json()["winner"] == {"type": "question", "id": first["id"], "state": "open"}
    other = ask(writer, body="Something else entirely")
    assert other.status_code == 409 and Question.objects.count() == 1


def test_who_may_ask_and_answer(held, writer, writer2, steward, reader):
    assert ask(writer2).json()["error"] == "not_asker"  # holds nothing, did not create it
    assert ask(writer, to=writer.member.pk).status_code == 422  # not of oneself
    assert ask(writer, to=10**9).status_code == 422
    question = ask(writer, to=writer2.member.pk).json()
    assert reader.api.post(f"{S}/tasks/1/questions/{question['id']}/answer", {"body": "x"}).json()["error"] == \
        "not_addressee"
    assert writer2.api.post(f"{S}/tasks/1/questions/{question['id']}/answer", {}).status_code == 422  # no answer
    assert writer2.api.post(f"{S}/tasks/1/questions/{question['id']}/answer", {"body": "yes"}).status_code == 200


def test_another_space_sees_no_question(held, writer, outsider):
    question = ask(writer).json()
    response = outsider.api.post(f"{S}/tasks/1/questions/{question['id']}/answer", {"body": "x"})
    assert response.status_code in (403, 404)
    assert Question.objects.get().state == "open"


def test_a_question_past_its_deadline_expires_and_the_claim_goes_on(held, writer, steward):
    soon = timezone.now() + timedelta(seconds=2)
    question = ask(writer, expires_at=soon.isoformat()).json()
    Question.objects.filter(pk=question["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    late = steward.api.post(f"{S}/tasks/1/questions/{question['id']}/answer", {"body": "too late"})
    assert late.status_code == 409 and late.json()["question"]["state"] == "expired"
    assert steward.api.get(f"{S}/tasks/1").json()["status"] == "claimed"
    assert Notification.objects.filter(member=writer.member, kind="question_expired").count() == 1


def test_the_sweep_expires_questions_past_their_deadline(held, writer, steward):
    question = ask(writer, expires_at=(timezone.now() + timedelta(hours=1)).isoformat()).json()
    Question.objects.filter(pk=question["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    call_command("sweep")
    assert Question.objects.get().state == "expired"
    assert Task.objects.get().status == "claimed"
    assert "question.expired" in Event.objects.values_list("type", flat=True)


def test_the_asker_withdraws_its_question(held, writer, writer2, steward):
    question = ask(writer).json()
    assert writer2.api.post(f"{S}/tasks/1/questions/{question['id']}/withdraw").json()["error"] == "not_asker"
    withdrawn = writer.api.post(f"{S}/tasks/1/questions/{question['id']}/withdraw")
    assert withdrawn.status_code == 200 and withdrawn.json()["state"] == "withdrawn"
    assert steward.api.get(f"{S}/tasks/1").json()["status"] == "claimed"
    answer = steward.api.post(f"{S}/tasks/1/questions/{question['id']}/answer", {"body": "x"})
    assert answer.status_code == 409 and answer.json()["question"]["state"] == "withdrawn"


def test_a_task_closed_by_a_steward_takes_its_open_questions_with_it(held, writer, steward):
    ask(writer)
    assert steward.api.post(f"{S}/tasks/1/reject", {"reason": "not needed"}).status_code == 200
    assert Question.objects.get().state == "withdrawn"


def test_the_creator_asks_the_stewards_about_open_work(space, writer, writer2, steward):
    create_task(space=space, actor=writer.member, title="Pick the queue library")
    question = ask(writer, to="stewards").json()
    assert question["hold"] is False and question["addressee"] is None
    assert Task.objects.get().status == "waiting"
    assert writer2.api.post(f"{S}/next", {}).json() == {"task": None}
    assert steward.api.get("/v1/inbox").json()["questions"][0]["id"] == question["id"]
    assert writer2.api.get("/v1/inbox").json()["questions"] == []
    steward.api.post(f"{S}/tasks/1/questions/{question['id']}/answer", {"body": "the first"})
    assert writer2.api.post(f"{S}/next", {}).json()["task"]["id"] == 1


def test_two_answers_at_once_one_wins_and_the_other_is_told_who(held, writer, writer2, steward):
    question = ask(writer, to=writer2.member.pk).json()
    barrier = threading.Barrier(2)
    results: dict[str, object] = {}

    def answer(persona, body):
        try:
            barrier.wait()
            results[body] = persona.api.post(f"{S}/tasks/1/questions/{question['id']}/answer", {"body": body})
        finally:
            connection.close()

    threads = [threading.Thread(target=answer, args=(writer2, "agent")),
               threading.Thread(target=answer, args=(steward, "person"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    statuses = sorted(r.status_code for r in results.values())
    assert statuses == [200, 409]
    loser = next(r for r in results.values() if r.status_code == 409).json()
    stored = Question.objects.get()
    assert loser["question"]["answer"] == stored.answer and stored.answer in ("agent", "person")


def test_a_waited_ask_returns_the_answer_when_it_comes(held, writer, steward):
    out: dict[str, object] = {}

    def waited():
        try:
            out["response"] = ask(writer, wait=30)
        finally:
            connection.close()

    thread = threading.Thread(target=waited, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while REGISTRY.waiting_count() < 1:  # asked, committed, waiting
        assert time.monotonic() < deadline
        time.sleep(0.01)
    question = Question.objects.get()
    assert steward.api.post(f"{S}/tasks/1/questions/{question.pk}/answer", {"body": "v2"}).status_code == 200
    thread.join(30)
    response = out["response"]
    assert response.status_code == 201 and response.json()["state"] == "answered"
    assert response.json()["answer"] == "v2"
    assert REGISTRY.waiting_count() == 0


def test_a_waited_ask_whose_time_runs_out_answers_the_open_question(held, writer):
    response = ask(writer, wait=0.3)
    assert response.status_code == 201 and response.json()["state"] == "open"
    assert Question.objects.get().state == "open"  # asked once, whatever the wait


def test_a_person_member_answers_from_the_inbox(held, writer, space):
    person = make_persona(space, "reader", "ana")
    question = ask(writer, to=person.member.pk).json()
    inbox = person.api.get("/v1/inbox").json()
    assert [q["id"] for q in inbox["questions"]] == [question["id"]] and inbox["questions"][0]["task"] == 1
    assert person.api.post(f"{S}/tasks/1/questions/{question['id']}/answer", {"body": "v2"}).status_code == 200
    assert person.api.get("/v1/inbox").json()["questions"] == []


def test_an_asker_whose_connection_drops_loses_nothing(space, steward, writer):
    """A waited ask over real gunicorn whose caller hangs up: the question stays asked, and the
    answer, when it comes, is in the asker's notifications and the question's reads."""
    import httpx

    from tests.live_server import gunicorn

    create_task(space=space, actor=steward.member, title="Pick the queue library")
    assert writer.api.post(f"{S}/next", {}).json()["task"]["id"] == 1
    with gunicorn(workers=1) as base:
        with pytest.raises(httpx.TimeoutException):
            httpx.post(f"{base}{S}/tasks/1/questions", json={"body": "A or B?", "to": "stewards", "wait": 30},
                       headers={"Authorization": f"Bearer {writer.key}"}, timeout=2)
        question = Question.objects.get()
        assert question.state == "open"
        answered = httpx.post(f"{base}{S}/tasks/1/questions/{question.pk}/answer", json={"body": "B"},
                              headers={"Authorization": f"Bearer {steward.key}"}, timeout=30)
        assert answered.status_code == 200
    assert writer.api.get(f"{S}/tasks/1/questions").json()["results"][0]["answer"] == "B"
    assert Notification.objects.filter(member=writer.member, kind="question_answered").count() == 1
    assert Question.objects.count() == 1


def test_an_answer_wakes_its_own_asker_across_server_processes(space, steward):
    """Over real gunicorn (2 workers): askers wait in the space; an answer given through any
    process reaches its own asker (the listener's targeted check), and the others go on waiting."""
    import httpx

    from tests.live_server import gunicorn

    askers = [make_persona(space, "writer", f"asker-{i}") for i in range(3)]
    for i, asker in enumerate(askers, start=1):
        create_task(space=space, actor=steward.member, title=f"Work item number {i}")
        assert asker.api.post(f"{S}/next", {"number": i}).status_code == 200
    answers: dict[int, httpx.Response] = {}
    with gunicorn(workers=2) as base:
        def waited(number: int, key: str) -> None:
            answers[number] = httpx.post(f"{base}{S}/tasks/{number}/questions", timeout=60,
                                         json={"body": f"Which way for {number}?", "to": "stewards", "wait": 20},
                                         headers={"Authorization": f"Bearer {key}"})

        threads = [threading.Thread(target=waited, args=(i, a.key), daemon=True) for i, a in enumerate(askers, 1)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 20
        while Question.objects.count() < 3:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        second = Question.objects.get(task__number=2)
        answer = httpx.post(f"{base}{S}/tasks/2/questions/{second.pk}/answer", json={"body": "north"},
                            headers={"Authorization": f"Bearer {steward.key}"}, timeout=30)
        assert answer.status_code == 200
        threads[1].join(30)
        assert answers[2].json()["answer"] == "north"  # answered in its wait, not at its end (still open)
        assert 1 not in answers and 3 not in answers  # the others still wait
        for thread in threads:
            thread.join(30)
    assert answers[1].json()["state"] == answers[3].json()["state"] == "open"


def test_a_deadline_racing_an_answer_closes_the_question_once(held, writer, steward):
    """The sweep expiring a question at its deadline while its answer comes: one of them closes
    it, the other finds it closed (409 question_closed, or nothing to expire)."""
    from tasks.questions import expire_questions

    question = ask(writer, expires_at=(timezone.now() + timedelta(hours=1)).isoformat()).json()
    barrier = threading.Barrier(2)
    outcome: dict[str, object] = {}

    def sweep():
        try:
            barrier.wait()
            outcome["expired"] = expire_questions(now=timezone.now() + timedelta(hours=2))
        finally:
            connection.close()

    def answer():
        try:
            barrier.wait()
            outcome["answer"] = steward.api.post(f"{S}/tasks/1/questions/{question['id']}/answer", {"body": "now"})
        finally:
            connection.close()

    threads = [threading.Thread(target=sweep), threading.Thread(target=answer)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    stored = Question.objects.get()
    if stored.state == "answered":
        assert outcome["answer"].status_code == 200 and outcome["expired"] == 0
    else:
        assert stored.state == "expired" and outcome["expired"] == 1
        assert outcome["answer"].status_code == 409 and outcome["answer"].json()["question"]["state"] == "expired"
    kinds = list(Event.objects.filter(type__in=["question.answered", "question.expired"]).values_list("type", flat=True))
    assert len(kinds) == 1
    assert Task.objects.get().status == "claimed"
