"""SPEC §6.1: next, claim by number, join, give back, lapse."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from tasks.claims import expire_claims
from tasks.models import Claim, Notification, Task

S = "/v1/spaces/agent-lab"


def test_next_claims_the_lowest_open_task(writer, tasks3):
    body = writer.api.post(f"{S}/next", {}).json()
    assert body["task"]["id"] == 1 and body["task"]["status"] == "claimed"
    assert body["claim"]["member"]["name"] == "writer" and body["claim"]["origin"] == "next"
    claim = Claim.objects.get()
    assert claim.cycle == 1 and claim.expires_at > timezone.now() + timedelta(hours=3, minutes=59)


def test_next_never_hands_out_a_task_another_key_holds(writer, writer2, tasks3):
    assert writer.api.post(f"{S}/next").json()["task"]["id"] == 1
    assert writer2.api.post(f"{S}/next").json()["task"]["id"] == 2


def test_nothing_to_do_is_200_task_null(writer, writer2, tasks3):
    for _ in range(3):
        writer.api.post(f"{S}/next")
    response = writer2.api.post(f"{S}/next")
    assert response.status_code == 200 and response.json() == {"task": None}


def test_claiming_a_held_task_by_number_names_join(writer, writer2, tasks3):
    writer.api.post(f"{S}/next", {"number": 2})
    response = writer2.api.post(f"{S}/next", {"number": 2})
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "task_not_open" and "join" in body["detail"]


def test_join_holds_the_task_beside_others_up_to_three(writer, writer2, writer3, writer4, tasks3):
    writer.api.post(f"{S}/next", {"number": 2})
    assert writer2.api.post(f"{S}/next", {"number": 2, "join": True}).json()["claim"]["origin"] == "join"
    assert writer3.api.post(f"{S}/next", {"number": 2, "join": True}).status_code == 200
    response = writer4.api.post(f"{S}/next", {"number": 2, "join": True})
    assert response.status_code == 409 and response.json()["error"] == "claim_limit"
    assert Claim.objects.filter(task__number=2, ended_at=None).count() == 3


def test_claiming_again_changes_nothing(writer, tasks3):
    first = writer.api.post(f"{S}/next", {"number": 1}).json()["claim"]
    again = writer.api.post(f"{S}/next", {"number": 1}).json()["claim"]
    assert first["id"] == again["id"] and Claim.objects.count() == 1


def test_give_back_ends_only_the_callers_claim(writer, writer2, tasks3):
    writer.api.post(f"{S}/next", {"number": 1})
    writer2.api.post(f"{S}/next", {"number": 1, "join": True})
    response = writer.api.post(f"{S}/tasks/1/give-back")
    assert response.status_code == 200 and response.json()["claim"]["end_reason"] == "gave_back"
    assert response.json()["task"]["status"] == "claimed"
    assert list(Claim.objects.filter(ended_at=None).values_list("member__name", flat=True)) == ["writer2"]
    writer2.api.post(f"{S}/tasks/1/give-back")
    assert Task.objects.get(number=1).status == "open"
    assert [e["kind"] for e in writer.api.get(f"{S}/tasks/1/history").json()["results"]] == [
        "created", "claimed", "joined", "given_back", "given_back"]


def test_give_back_without_a_claim_is_409(writer, tasks3):
    assert writer.api.post(f"{S}/tasks/1/give-back").json()["error"] == "not_holding"


def test_a_claimed_task_is_not_open_to_readers_or_unknown_numbers(reader, writer, tasks3):
    assert reader.api.post(f"{S}/next").status_code == 403
    assert writer.api.post(f"{S}/next", {"number": 99}).status_code == 404


def test_expired_claims_lapse_notify_and_reopen(writer, tasks3):
    writer.api.post(f"{S}/next")
    Claim.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert expire_claims(dry_run=True) == 1
    assert Claim.objects.get().ended_at is None
    call_command("expire_claims")
    claim = Claim.objects.get()
    assert claim.end_reason == "lapsed" and Task.objects.get(number=1).status == "open"
    assert Notification.objects.get().kind == "claim_lapsed"
    assert expire_claims() == 0  # a second run changes nothing


def test_task_detail_lists_live_claims_and_attempts(writer, reader, tasks3):
    writer.api.post(f"{S}/next")
    body = reader.api.get(f"{S}/tasks/1").json()
    assert [c["member"]["name"] for c in body["claims"]] == ["writer"] and body["attempts"] == []


@pytest.mark.parametrize("ending", ["withdraw", "reject"])
def test_claiming_a_task_that_ended_answers_task_closed_whichever_way_it_ended(steward, writer, tasks3, ending):
    assert steward.api.post(f"{S}/tasks/2/{ending}", {}).status_code == 200
    response = writer.api.post(f"{S}/next", {"number": 2})
    assert response.status_code == 409 and response.json()["error"] == "task_closed", response.json()
