"""SPEC §14: GET …/summary, the figures of the board, and the duplicates counter."""
from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from allocation.models import ConflictCount
from tasks.models import Task
from tests.tasks.test_attempts import done
from tests.tasks.conftest import set_space

S = "/v1/spaces/agent-lab"


def summary(persona) -> dict:
    response = persona.api.get(f"{S}/summary")
    assert response.status_code == 200, response.json()
    return response.json()


def test_the_summary_counts_live_work_claims_checks_and_slots(writer, writer2, reader, space):
    for title in ("Build a benchmark for code review agents", "Token spend dashboard", "Retry and backoff policy for tool calls", "free work"):
        writer.api.post(f"{S}/tasks", {"title": title})
    writer.api.post(f"{S}/tasks", {"title": "waits", "blocked_by": [4]})
    writer2.api.post(f"{S}/next", {"number": 1})
    writer2.api.post(f"{S}/next", {"number": 2})
    assert done(writer2, 2).status_code == 201  # 2 waits for a check
    figures = summary(reader)
    assert figures["by_status"] == {"proposed": 0, "waiting": 0, "parked": 0, "open": 3, "claimed": 1, "assigned": 0, "in_review": 1}
    assert figures["live"] == 5 and figures["ready"] == 2 and figures["blocked"] == 1
    assert figures["awaiting_check"] == 1 and figures["done_last_7_days"] == 0
    assert figures["claims_by_member"] == [{"member": writer2.member.pk, "name": "writer2", "tasks": [1]}]
    assert figures["oldest_ready"]["task"] == 3 and figures["oldest_ready"]["age_seconds"] >= 0
    slots = {s["work_item_id"]: (s["live"], s["done"]) for s in figures["slots"]}
    assert slots == {"T1": (1, 0), "T2": (1, 0), "T3": (1, 0)}


def test_done_work_counts_for_its_slot_and_the_last_seven_days(writer, writer2, space):
    set_space(space, confirmations_required=0)
    writer.api.post(f"{S}/tasks", {"title": "Retry and backoff policy for tool calls"})
    writer2.api.post(f"{S}/next")
    done(writer2, 1)
    writer.api.post(f"{S}/tasks", {"title": "Retry and backoff policy for tool calls"})  # the slot is free again: a second round
    figures = summary(writer)
    assert figures["done_last_7_days"] == 1
    assert {s["work_item_id"]: (s["live"], s["done"]) for s in figures["slots"]} == {"T3": (1, 1)}
    Task.objects.filter(number=1).update(updated_at=timezone.now() - timedelta(days=8))
    assert summary(writer)["done_last_7_days"] == 0


def test_duplicates_prevented_counts_each_occupied_refusal_once_and_not_replays(writer, writer2, steward):
    writer.api.post(f"{S}/tasks", {"title": "Build a benchmark for code review agents"})
    for title in ("review agent benchmark", "code review evaluation suite"):
        assert writer2.api.post(f"{S}/tasks", {"title": title}).status_code == 409
    key = {"Idempotency-Key": "dup-1"}
    assert writer2.api.post(f"{S}/tasks", {"title": "review agent benchmark"}, headers=key).status_code == 409
    replay = writer2.api.post(f"{S}/tasks", {"title": "review agent benchmark"}, headers=key)
    assert replay.status_code == 409 and replay.headers.get("Idempotent-Replayed") == "true"
    window = writer2.api.post(f"{S}/tasks/window", {"proposals": [{"title": "Token spend dashboard"},
                                                                   {"title": "model cost report"}]})
    assert [r["status"] for r in window.json()["results"]] == [201, 409]
    assert summary(writer)["duplicates_prevented_24h"] == 4  # two plain, one keyed (its replay not), one in a window
    steward.api.post(f"{S}/holds", {"work_item_id": "T3"})
    assert writer.api.post(f"{S}/tasks", {"title": "Retry and backoff policy for tool calls"}).status_code == 409  # held: not a duplicate
    assert summary(writer)["duplicates_prevented_24h"] == 4
    ConflictCount.objects.update(hour=timezone.now() - timedelta(hours=25))
    assert summary(writer)["duplicates_prevented_24h"] == 0


def test_the_summary_is_the_members_own_space_only(writer, outsider):
    assert outsider.api.get(f"{S}/summary").status_code == 404
    assert writer.api.get("/v1/spaces/elsewhere/summary").status_code == 404
