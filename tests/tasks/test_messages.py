"""SPEC §21: messages — a task's thread and direct messages, once per sender, thread and body in
24 hours — and the inbox: what waits on a member."""
from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from events.models import Event
from tasks.models import Message, Notification
from tests.conftest import make_persona
from tests.factories import create_task

S = "/v1/spaces/agent-lab"
pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def task(space, steward, writer):
    """Task 1, created by the steward, held by the writer."""
    create_task(space=space, actor=steward.member, title="Pick the queue library")
    assert writer.api.post(f"{S}/next", {}).json()["task"]["id"] == 1


def test_a_message_on_a_task_reaches_its_thread(task, writer, writer2, steward, reader):
    posted = writer.api.post(f"{S}/tasks/1/messages", {"body": "I skipped the flaky test on purpose."})
    assert posted.status_code == 201, posted.json()
    message = posted.json()
    assert message["task"] == 1 and message["to"] == [steward.member.pk]  # the creator; the sender is not told
    assert Notification.objects.filter(member=steward.member, kind="message").count() == 1
    assert not Notification.objects.filter(member=writer2.member).exists()
    named = writer.api.post(f"{S}/tasks/1/messages", {"body": "Can you check it?", "to": [writer2.member.pk]})
    assert sorted(named.json()["to"]) == sorted([steward.member.pk, writer2.member.pk])
    thread = writer2.api.get(f"{S}/tasks/1/messages")  # named once, now in the thread
    assert thread.status_code == 200 and [m["id"] for m in thread.json()["results"]] == [message["id"], named.json()["id"]]
    assert reader.api.get(f"{S}/tasks/1/messages").json()["error"] == "not_in_thread"
    assert reader.api.get(f"{S}/tasks/1/questions").json()["error"] == "not_in_thread"
    assert steward.api.get(f"{S}/tasks/1/questions").json() == {"results": []}
    assert list(Event.objects.filter(type="message.posted").values_list("data__message", flat=True)) == [
        message["id"], named.json()["id"]]


def test_the_same_message_twice_in_a_day_is_one(task, writer):
    first = writer.api.post(f"{S}/tasks/1/messages", {"body": "Done with the parser."}).json()
    again = writer.api.post(f"{S}/tasks/1/messages", {"body": "Done with the parser."})
    assert again.status_code == 409 and again.json()["error"] == "allocation_conflict"
    assert again.json()["conflict_key"]["kind"] == "post_message"
    assert again.json()["winner"] == {"type": "message", "id": first["id"]}
    Message.objects.filter(pk=first["id"]).update(created_at=timezone.now() - timedelta(hours=24, seconds=1))
    assert writer.api.post(f"{S}/tasks/1/messages", {"body": "Done with the parser."}).status_code == 201


def test_the_same_message_sent_at_once_is_made_once(task, writer):
    barrier = threading.Barrier(4)
    statuses: list[int] = []

    def send():
        try:
            barrier.wait()
            statuses.append(writer.api.post(f"{S}/tasks/1/messages", {"body": "Racing hello"}).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(statuses) == [201, 409, 409, 409]
    assert Message.objects.count() == 1


def test_direct_messages_and_the_inbox(space, writer, writer2, outsider):
    sent = writer.api.post(f"{S}/messages", {"body": "Lunch sync at noon?", "to": [writer2.member.pk]})
    assert sent.status_code == 201 and sent.json()["task"] is None and sent.json()["to"] == [writer2.member.pk]
    assert writer.api.post(f"{S}/messages", {"body": "x", "to": []}).status_code == 422
    assert writer.api.post(f"{S}/messages", {"body": "x", "to": [10**9]}).status_code == 422
    assert writer.api.post(f"{S}/messages", {"body": "x", "to": [outsider.member.pk]}).status_code == 422
    inbox = writer2.api.get("/v1/inbox").json()
    assert [m["id"] for m in inbox["messages"]] == [sent.json()["id"]]
    assert writer.api.get("/v1/inbox").json()["messages"] == []
    assert outsider.api.get("/v1/inbox").json()["messages"] == []
    marked = writer2.api.post("/v1/inbox/read", {"ids": [sent.json()["id"]]})
    assert marked.status_code == 200 and marked.json() == {"marked_read": 1}
    assert writer2.api.get("/v1/inbox").json()["messages"] == []


def test_the_inbox_holds_the_approvals_a_member_may_give(space, writer, writer2, steward):
    proposal = writer.api.post(f"{S}/tasks", {"title": "Rotate the signing keys", "approval": True,
                                              "approver": writer2.member.pk}).json()
    assert [t["number"] for t in writer2.api.get("/v1/inbox").json()["approvals"]] == [proposal["number"]]
    assert [t["number"] for t in steward.api.get("/v1/inbox").json()["approvals"]] == [proposal["number"]]
    assert writer.api.get("/v1/inbox").json()["approvals"] == []
    assert set(writer.api.get("/v1/inbox").json()) == {"questions", "approvals", "checks", "messages"}


def test_a_reader_person_may_message(space, writer):
    person = make_persona(space, "reader", "ana")
    sent = person.api.post(f"{S}/messages", {"body": "Please pause the deploys.", "to": [writer.member.pk]})
    assert sent.status_code == 201
