"""SPEC §17's feed: every change is an event, in commit order; a follower asking again with the
``next`` it was given sees every event once, none before its transaction committed."""
from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone

from events import feed
from fronts import feed as feed_http
from events.models import Event, FeedCounter
from tasks.lifecycle import record_event
from tests.factories import create_task

S = "/v1/spaces/agent-lab"


def last_seq(space_id: int) -> int:
    return FeedCounter.objects.filter(space_id=space_id).values_list("last_seq", flat=True).first() or 0


def events(persona, query: str = "") -> dict:
    response = persona.api.get(f"{S}/events{query}")
    assert response.status_code == 200, response.content
    return response.json()


def test_a_tasks_history_and_the_spaces_changes_are_its_feed(steward, writer):
    before = events(writer)["next"]
    task = writer.api.post(f"{S}/tasks", {"title": "Feed the follower"}).json()
    writer.api.post(f"{S}/next", {"number": task["id"]})
    steward.api.patch(S, {"similar_threshold": 0.5})
    page = events(writer, f"?after={before}")
    assert [e["type"] for e in page["events"]] == ["task.created", "task.claimed", "space.settings_changed"]
    created, claimed, changed = page["events"]
    assert created["task"] == claimed["task"] == task["id"] and changed["task"] is None
    assert created["actor"] == {"id": writer.member.pk, "name": "writer"}
    assert [e["seq"] for e in page["events"]] == list(range(before + 1, before + 4))
    assert page["next"] == before + 3 and created["id"].startswith("evt_")
    assert changed["data"] == {"changes": {"similar_threshold": 0.5}}
    assert events(writer, f"?after={page['next']}") == {"events": [], "next": page["next"]}
    assert [e["type"] for e in events(writer, f"?after={before}&types=task.claimed")["events"]] == ["task.claimed"]
    assert len(events(writer, f"?after={before}&task={task['id']}")["events"]) == 2
    assert [e["seq"] for e in events(writer, f"?after={before}&limit=1")["events"]] == [before + 1]


def test_a_key_issued_is_an_event_without_its_secret(steward):
    before = events(steward)["next"]
    issued = steward.api.post(f"{S}/members/{steward.member.pk}/keys", {}).json()
    [event] = events(steward, f"?after={before}")["events"]
    assert event["type"] == "key.issued" and event["data"]["prefix"] == issued["prefix"]
    assert issued["key"] not in str(event) and issued["key"].split("_")[-1] not in str(event)


@pytest.mark.parametrize("query", ["?after=-1", "?after=1.0", "?after=01", "?after=", "?after=x", "?limit=0",
                                   "?limit=501", "?task=0", "?types=", "?types=Task.Created", "?after=1&after=2",
                                   "?since=3"])
def test_a_bad_question_is_422_naming_it(writer, query):
    response = writer.api.get(f"{S}/events{query}")
    assert response.status_code == 422 and response.json()["error"] == "invalid_request", response.content


def test_members_only(outsider, anonymous):
    assert outsider.api.get(f"{S}/events").status_code == 404  # another space's key: SPEC §3
    assert anonymous.get(f"{S}/events").status_code == 401


def test_an_event_commits_with_its_change_or_not_at_all(space, steward):
    before = Event.objects.count()
    with pytest.raises(RuntimeError), transaction.atomic():
        create_task(space=space, actor=steward.member, title="Rolled back")
        raise RuntimeError
    assert Event.objects.count() == before


def test_seqs_follow_commit_order_not_the_order_events_were_written(space, steward, writer):
    """The first transaction writes its event, then waits; a second writes and commits; a
    reader reads; the first commits. The reader, asking again after the ``next`` it was given,
    still gets the first transaction's event: it is numbered when it commits."""
    first_wrote, second_done = threading.Event(), threading.Event()

    task = create_task(space=space, actor=steward.member, title="Watched")
    start = events(writer)["next"]

    def slow() -> None:
        try:
            with transaction.atomic():
                record_event(task=task, kind="held", actor=steward.member, note="written first, committed last")
                first_wrote.set()
                second_done.wait(10)
        finally:
            connection.close()

    thread = threading.Thread(target=slow)
    thread.start()
    assert first_wrote.wait(10)
    feed.record(space_id=space.pk, type="space.settings_changed", data={"note": "written second, committed first"})
    seen = events(writer, f"?after={start}")
    assert [e["data"]["note"] for e in seen["events"]] == ["written second, committed first"]
    second_done.set()
    thread.join(10)
    later = events(writer, f"?after={seen['next']}")
    assert [(e["type"], e["data"]["note"]) for e in later["events"]] == [("task.held", "written first, committed last")]
    assert later["events"][0]["seq"] == seen["next"] + 1 and later["events"][0]["task"] == task.number


def test_many_writers_and_a_follower_see_every_event_once_in_order(space, steward, writer):
    """Eight writers create tasks in transactions of random length while a follower follows;
    the follower's events are all of them, once each, in seq order."""
    task = create_task(space=space, actor=steward.member, title="Watched")
    start = events(writer)["next"]
    writers, per_writer = 8, 15
    stop = threading.Event()
    followed: list[dict] = []
    failures: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(per_writer):
                with transaction.atomic():
                    if i % 2:  # a task's history, through its trigger, or a change of the space
                        record_event(task=task, kind="held", actor=None, writer=n, i=i)
                    else:
                        feed.record(space_id=space.pk, type="space.settings_changed", data={"writer": n, "i": i})
                    time.sleep(0.001 * ((n * 7 + i * 3) % 5))  # commits in another order than writes
        except BaseException as error:
            failures.append(error)
        finally:
            connection.close()

    def follow() -> None:
        after = start
        try:
            while True:
                done = stop.is_set()
                page = feed.read(space_id=space.pk, after=after, types=[], task=None, limit=7)
                followed.extend({"seq": e.seq, "writer": (e.data["writer"], e.data["i"])} for e in page.events)
                after = page.next
                if done and not page.events:
                    return
        except BaseException as error:
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    follower = threading.Thread(target=follow)
    follower.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    stop.set()
    follower.join(60)
    assert not failures
    seqs = [e["seq"] for e in followed]
    assert seqs == sorted(seqs) and len(seqs) == len(set(seqs)) == writers * per_writer
    assert seqs == list(range(start + 1, start + 1 + writers * per_writer))
    stored = set(Event.objects.filter(space=space, seq__gt=start).values_list("seq", flat=True))
    assert set(seqs) == stored
    assert sorted(e["writer"] for e in followed) == [(n, i) for n in range(writers) for i in range(per_writer)]


def test_events_past_the_retention_are_purged_by_sweep_and_a_reader_behind_is_told(space, steward, writer):
    for n in range(3):
        create_task(space=space, actor=steward.member, title=f"old work {n}")
    kept = create_task(space=space, actor=steward.member, title="recent work")
    seqs = list(Event.objects.filter(space=space).order_by("seq").values_list("seq", flat=True))
    old = Event.objects.filter(space=space).exclude(task_number=kept.number)
    old.update(at=timezone.now() - timedelta(days=31))
    call_command("sweep")
    last_purged = seqs[-2]
    assert not Event.objects.filter(space=space, seq__lte=last_purged).exists()
    refused = writer.api.get(f"{S}/events?after=0")
    assert refused.status_code == 410 and refused.json()["error"] == "events_expired"
    assert refused.json()["oldest_seq"] == last_purged + 1
    assert [e["task"] for e in events(writer)["events"]] == [kept.number]  # from the start: what is kept
    assert [e["task"] for e in events(writer, f"?after={last_purged}")["events"]] == [kept.number]
    steward.api.patch(S, {"event_retention_days": 1})
    assert steward.api.patch(S, {"event_retention_days": 0}).status_code == 422


def test_a_waited_read_answers_the_moment_an_event_commits(space, steward, writer):
    start = events(writer)["next"]
    answers: list = []

    def follow() -> None:
        try:
            answers.append(writer.api.get(f"{S}/events?after={start}&wait=20"))
            answers.append(time.monotonic())
        finally:
            connection.close()

    follower = threading.Thread(target=follow)
    follower.start()
    time.sleep(0.5)
    create_task(space=space, actor=steward.member, title="Wake the follower")
    committed = time.monotonic()
    follower.join(20)
    response, answered = answers
    assert response.status_code == 200
    assert [e["type"] for e in response.json()["events"]] == ["task.created"]
    # Woken by the commit's notification: not by the end of its wait, nor by the re-check a second.
    assert answered - committed < 0.5


def test_a_waited_read_with_nothing_new_answers_empty_when_its_time_is_up(writer):
    start = events(writer)["next"]
    began = time.monotonic()
    assert events(writer, f"?after={start}&wait=0.5") == {"events": [], "next": start}
    assert 0.5 <= time.monotonic() - began < 3


@pytest.mark.parametrize("wait", ["61", "-1", "1e3", "x", "01"])
def test_a_bad_wait_is_422(writer, wait):
    assert writer.api.get(f"{S}/events?wait={wait}").status_code == 422


def test_a_waiting_reader_holds_no_connection_while_it_waits(space, steward):
    start = last_seq(space.pk)
    held: list = []

    def wait_for(space_id: int, after: int, timeout: float) -> feed.Woken:
        held.append(connection.connection)
        feed.record(space_id=space.pk, type="space.settings_changed", data={"woken": True})  # commits
        return feed.Woken.EVENT

    asked = feed.Question(after=start, types=[], task=None, limit=10, wait=5)
    page, woken = feed.read_waiting(space.pk, asked, wait_for, 5)
    assert held == [None] and [e.data for e in page.events] == [{"woken": True}] and woken is feed.Woken.EVENT


def test_a_waiting_reader_of_a_stopping_server_answers_at_once(space):
    """A server told to stop wakes its waits (tasks.waiting.Registry.close): the reader answers
    with what it has instead of reading again and again until its time is up."""
    start = last_seq(space.pk)
    calls: list[float] = []

    def stopping(space_id: int, after: int, timeout: float) -> feed.Woken:
        calls.append(timeout)
        return feed.Woken.STOPPING

    began = time.monotonic()
    page, woken = feed.read_waiting(space.pk, feed.Question(start, [], None, 10, 30), stopping, 30)
    assert (page.events, woken, len(calls)) == ([], feed.Woken.STOPPING, 1) and time.monotonic() - began < 2


def test_a_stream_sends_events_resumes_after_last_event_id_and_keeps_alive(space, steward, writer, monkeypatch):
    monkeypatch.setattr(feed, "STREAM_SECONDS", 1.5)
    monkeypatch.setattr(feed, "KEEPALIVE_SECONDS", 0.4)
    first = create_task(space=space, actor=steward.member, title="Seen before the stream")
    seen = Event.objects.get(task_number=first.number).seq
    create_task(space=space, actor=steward.member, title="Sent by the stream")
    response = writer.api.client.get(f"{S}/events", HTTP_ACCEPT="text/event-stream", HTTP_LAST_EVENT_ID=str(seen),
                                     HTTP_AUTHORIZATION=f"Bearer {writer.key}")
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    began = time.monotonic()
    text = b"".join(response.streaming_content).decode()
    assert time.monotonic() - began < 5
    blocks = [block for block in text.split("\n\n") if block]
    sent = [block for block in blocks if block.startswith("id:")]
    assert len(sent) == 1 and sent[0].startswith(f"id: {seen + 1}\nevent: task.created\ndata: {{")
    assert json.loads(sent[0].split("data: ", 1)[1])["seq"] == seen + 1
    assert any(block == ": keep-alive" for block in blocks)


def test_a_stream_with_a_bad_last_event_id_is_a_422_before_it_starts(writer):
    response = writer.api.client.get(f"{S}/events", HTTP_ACCEPT="text/event-stream", HTTP_LAST_EVENT_ID="abc",
                                     HTTP_AUTHORIZATION=f"Bearer {writer.key}")
    assert response.status_code == 422 and response.json()["error"] == "invalid_request"


def test_an_idle_stream_sends_no_statement_between_its_keep_alives(space, monkeypatch):
    """A stream whose waits time out (nothing committed) reads nothing: it only says it is alive."""
    from django.http import QueryDict
    from django.test.utils import CaptureQueriesContext

    monkeypatch.setattr(feed, "STREAM_SECONDS", 0.6)
    monkeypatch.setattr(feed, "KEEPALIVE_SECONDS", 0.1)

    def nothing_comes(space_id: int, after: int, timeout: float) -> feed.Woken:
        time.sleep(timeout)
        return feed.Woken.TIMEOUT

    lines = feed_http.stream(space_id=space.pk, params=QueryDict(), last_event_id=None, wait_for=nothing_comes)
    with CaptureQueriesContext(connection) as queries:
        sent = list(lines)
    assert queries.captured_queries == []
    assert sent[0].startswith("retry:") and sent.count(": keep-alive\n\n") >= 1  # how many: the machine's load


def test_the_reference_lists_the_feeds_types_from_the_code(anonymous):
    section = anonymous.get("/v1/reference?section=events").json()["events"]
    assert "task.created" in section["types"] and "task.claim_lapsed" in section["types"]
    assert set(feed.SPACE_TYPES) <= set(section["types"])
    assert section["refusals"][0]["code"] == "events_expired"
    with pytest.raises(ValueError):
        feed.record(space_id=1, type="made.up")


def test_the_wait_pattern_the_schema_documents_is_the_feeds_own_bound():
    """``?wait=`` is checked by a pattern (/v1/schema documents it): it must take MAX_WAIT and
    nothing past it, so a change to the bound that the pattern misses fails here."""
    import re

    from events.feed import MAX_WAIT
    from fronts.feed import SECONDS

    assert re.fullmatch(SECONDS, str(MAX_WAIT)) and re.fullmatch(SECONDS, f"{MAX_WAIT}.000")
    assert not re.fullmatch(SECONDS, f"{MAX_WAIT}.001") and not re.fullmatch(SECONDS, str(MAX_WAIT + 1))
    assert all(re.fullmatch(SECONDS, f"{s}.5") for s in range(MAX_WAIT))
