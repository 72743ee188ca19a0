"""SPEC §4.3–§4.8: creating tasks once, with exact 409 and 422 bodies."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from commands.unit import in_transaction
from allocation.conflict_keys import ConflictKey
from allocation.models import Occupancy, Reservation, SlotHold
from allocation.services import expire_reservations, reserve
from tasks.models import EventKind, Note, Task

S = "/v1/spaces/agent-lab"
T1_KEY = {"kind": "create_task", "target": "task:agent-lab:slot:T1", "delivery_mode": "result"}


def create(persona, title, **extra):
    return persona.api.post(f"{S}/tasks", {"title": title, **extra})


def test_the_winner_gets_201_with_the_task(writer):
    response = create(writer, "Build a benchmark for code review agents")
    assert response.status_code == 201
    body = response.json()
    assert body["id"] == 1 and body["status"] == "open" and body["work_item_id"] == "T1"
    assert body["conflict_key"] == T1_KEY
    task = Task.objects.get()
    assert Occupancy.objects.get().task == task
    assert not Reservation.objects.exists()
    assert task.events.get().kind == EventKind.CREATED


def test_a_second_phrasing_of_the_same_slot_is_409_occupied_with_the_exact_body(writer, writer2):
    create(writer, "Build a benchmark for code review agents")
    response = create(writer2, "  Evaluation   suite for REVIEW agents ")
    assert response.status_code == 409
    body = response.json()
    assert response["Content-Type"] == "application/problem+json"
    assert {k: body[k] for k in ["error", "code", "conflict_key", "outcome", "winner", "write_occurred"]} == {
        "error": "allocation_conflict",
        "code": "conflict_key_occupied",
        "conflict_key": T1_KEY,
        "outcome": "redirect",
        "winner": {"type": "task", "id": 1, "status": "open"},
        "write_occurred": False,
    }
    assert body["status"] == 409 and body["detail"]
    assert Task.objects.count() == 1


def test_title_fallback_duplicates_collide_after_normalization(writer, writer2):
    assert create(writer, "Write the onboarding guide").status_code == 201
    response = create(writer2, "  WRITE the\tonboarding\u00a0guide ")
    assert response.status_code == 409
    assert response.json()["conflict_key"]["target"] == "task:agent-lab:write the onboarding guide"


def test_another_delivery_mode_is_another_key(writer):
    assert create(writer, "Retry policy").status_code == 201
    assert create(writer, "Retry policy", delivery_mode="review").status_code == 201


def test_a_live_reservation_answers_409_reserved_with_retry_after(writer, writer2, space):
    reservation = in_transaction(reserve, operation=None, commits_alone=True, space=space, key=ConflictKey(**T1_KEY),
                                 member=writer2.member, payload_sha256="x")
    response = create(writer, "Benchmark harness for code-review agents")
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "conflict_key_reserved" and body["outcome"] == "idle"
    assert body["winner"] == {"type": "reserved_intent", "id": reservation.pk}
    assert body["retry_after_ms"] == 200 and body["write_occurred"] is False
    assert response["Retry-After"]
    assert not Task.objects.exists()


def test_a_stale_reservation_is_expired_lazily_by_the_next_create(writer, writer2, space):
    stale = in_transaction(reserve, operation=None, commits_alone=True, space=space, key=ConflictKey(**T1_KEY), member=writer2.member, payload_sha256="x")
    Reservation.objects.filter(pk=stale.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert create(writer, "Benchmark harness for code-review agents").status_code == 201
    assert not Reservation.objects.exists()


def test_a_held_slot_answers_409_held(steward, writer):
    assert steward.api.post(f"{S}/holds", {"work_item_id": "t1", "reason": "planning"}).status_code == 201
    response = create(writer, "Benchmark harness for code-review agents")
    body = response.json()
    assert response.status_code == 409 and body["code"] == "conflict_key_held"
    assert body["winner"] == {"type": "steward_hold", "work_item_id": "T1"} and body["outcome"] == "idle"
    assert steward.api.delete(f"{S}/holds/T1").status_code == 204
    assert not SlotHold.objects.exists()
    assert create(writer, "Benchmark harness for code-review agents").status_code == 201


def test_a_terminated_task_frees_its_key(writer):
    create(writer, "Retry policy")
    Task.objects.update(status="done")
    Occupancy.objects.all().delete()  # what terminating a task does to a sole occupant (§4.4)
    assert create(writer, "Retry policy").status_code == 201


@pytest.mark.parametrize("raw, expected", [("t01", "T1"), (" T3 ", "T3"), ("T002", "T2")])
def test_an_explicit_work_item_id_is_normalized(writer, raw, expected):
    response = create(writer, "anything at all", work_item_id=raw)
    assert response.status_code == 201 and response.json()["work_item_id"] == expected


def test_a_malformed_work_item_id_is_422_listing_the_valid_ids(writer):
    body = create(writer, "x", work_item_id="task-1").json()
    assert body["error"] == "invalid_work_item_id" and body["valid_work_item_ids"] == ["T1", "T2", "T3"]


def test_an_unknown_work_item_id_is_422_listing_the_valid_ids(writer):
    response = create(writer, "x", work_item_id="T99")
    assert response.status_code == 422
    assert response.json()["error"] == "unknown_work_item" and response.json()["valid_work_item_ids"] == ["T1", "T2", "T3"]


def test_a_title_empty_after_normalization_is_422(writer):
    response = create(writer, " \t\u00a0 ")
    assert response.status_code == 422 and "title" in response.json()["fields"]


def test_bind_preview_writes_nothing(reader):
    response = reader.api.post(f"{S}/bind", {"title": "T2 — Retry & backoff policy for tool calls"})
    assert response.status_code == 200
    body = response.json()
    assert body["work_item_id"] == "T3"
    assert body["scores"][0] == {"work_item_id": "T3", "jaccard": "5/9", "value": pytest.approx(5 / 9)}
    assert body["conflict_key"] == {"kind": "create_task", "target": "task:agent-lab:slot:T3", "delivery_mode": "result"}
    assert not Task.objects.exists() and not Reservation.objects.exists()


def test_the_window_creates_two_tasks_from_four_and_three_phrasings(writer):
    proposals = [
        {"title": "Benchmark harness for code-review agents"},
        {"title": "Build a benchmark for code review agents"},
        {"title": "Retry and backoff policy for tool calls"},
        {"title": "  Evaluation   suite for REVIEW agents "},
        {"title": "T2 — Retry & backoff policy for tool calls"},
        {"title": "review agent benchmark"},
        {"title": "tool call retries backoff strategy"},
    ]
    response = writer.api.post(f"{S}/tasks/window", {"proposals": proposals})
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["index"] for r in results] == list(range(7))
    assert [r["status"] for r in results] == [201, 409, 201, 409, 409, 409, 409]
    assert results[1]["body"]["winner"] == {"type": "task", "id": 1, "status": "open"}
    assert results[4]["body"]["winner"] == {"type": "task", "id": 2, "status": "open"}
    assert Task.objects.count() == 2


def test_the_window_answers_invalid_proposals_in_place(writer):
    results = writer.api.post(f"{S}/tasks/window", {"proposals": [{"title": 5}, {"title": "Retry policy"}]}).json()[
        "results"
    ]
    assert results[0]["status"] == 422 and results[0]["body"]["error"] == "invalid_request"
    assert results[1]["status"] == 201


def test_the_window_is_limited_to_500_proposals(writer):
    response = writer.api.post(f"{S}/tasks/window", {"proposals": [{"title": f"t{i}"} for i in range(501)]})
    assert response.status_code == 422


def test_a_repeated_note_is_409_with_the_note_as_winner(writer, writer2):
    create(writer, "Retry policy")
    first = writer.api.post(f"{S}/tasks/1/notes", {"criterion": 2, "body": "Needs  jitter"})
    assert first.status_code == 201
    again = writer.api.post(f"{S}/tasks/1/notes", {"criterion": 2, "body": " Needs jitter "})
    assert again.status_code == 409
    body = again.json()
    assert body["conflict_key"]["kind"] == "post_review_note" and body["conflict_key"]["delivery_mode"] == "message"
    assert body["winner"] == {"type": "note", "id": first.json()["id"]}
    assert Note.objects.count() == 1
    # Another criterion, another body (case counts), another member: new notes.
    assert writer.api.post(f"{S}/tasks/1/notes", {"criterion": None, "body": "Needs jitter"}).status_code == 201
    assert writer.api.post(f"{S}/tasks/1/notes", {"criterion": 2, "body": "needs jitter"}).status_code == 201
    assert writer2.api.post(f"{S}/tasks/1/notes", {"criterion": 2, "body": "Needs jitter"}).status_code == 201
    target = Note.objects.get(pk=first.json()["id"]).target
    assert target.startswith(f"note:agent-lab:task:1:criterion:2:principal:{writer.member.pk}:body:")


def test_history_lists_the_creation(writer, reader):
    create(writer, "Retry policy")
    events = reader.api.get(f"{S}/tasks/1/history").json()["results"]
    assert [e["kind"] for e in events] == ["created"] and events[0]["actor"]["name"] == "writer"


def test_expire_reservations_deletes_only_stale_ones(writer, space):
    live = in_transaction(reserve, operation=None, commits_alone=True, space=space, key=ConflictKey(**T1_KEY), member=writer.member, payload_sha256="x")
    other = ConflictKey("create_task", "task:agent-lab:x", "result")
    stale = in_transaction(reserve, operation=None, commits_alone=True, space=space, key=other, member=writer.member, payload_sha256="y")
    Reservation.objects.filter(pk=stale.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert expire_reservations(dry_run=True) == 1
    assert Reservation.objects.count() == 2
    assert expire_reservations() == 1
    assert list(Reservation.objects.values_list("pk", flat=True)) == [live.pk]


def test_task_lists_filter_and_paginate(writer, reader):
    for title in ["Retry policy", "Write the onboarding guide", "Benchmark harness for code-review agents"]:
        create(writer, title)
    page = reader.api.get(f"{S}/tasks?limit=2").json()
    assert [t["id"] for t in page["results"]] == [1, 2] and page["next"]
    assert [t["id"] for t in reader.api.get(page["next"]).json()["results"]] == [3]
    assert [t["id"] for t in reader.api.get(f"{S}/tasks?work_item_id=T1").json()["results"]] == [3]
    assert reader.api.get(f"{S}/tasks?status=bogus").status_code == 422
