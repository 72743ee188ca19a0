"""SPEC §7.1, §2: an answer carrying a secret is stored without it; its replay gets a fresh one
for the same member or share, and the secret of the lost answer stops working."""
from __future__ import annotations

import json

from idempotency.models import Operation
from spaces.models import ApiKey
from exports.services import drain_exports
from tests.conftest import ApiClient

S = "/v1/spaces/agent-lab"


def test_a_replayed_key_issue_answers_for_the_same_member_with_a_fresh_key(steward, writer):
    path = f"{S}/members/{writer.member.pk}/keys"
    first = steward.api.post(path, headers={"Idempotency-Key": "issue-1"})
    assert first.status_code == 201
    lost_key = first.json()["key"]
    stored = Operation.objects.get(key="issue-1")
    assert lost_key not in json.dumps(stored.response_body) and stored.response_body["key"] is None
    assert lost_key not in json.dumps(list(stored.observations.values_list("response_body", flat=True)))

    again = steward.api.post(path, headers={"Idempotency-Key": "issue-1"})
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    fresh_key = again.json()["key"]
    assert fresh_key and fresh_key != lost_key and again.json()["member"] == writer.member.pk
    assert ApiClient(lost_key).get(S).status_code == 401  # the lost answer's key is revoked
    assert ApiClient(fresh_key).get(S).status_code == 200
    assert ApiClient(writer.key).get(S).status_code == 200  # the member's earlier key is untouched
    assert ApiKey.objects.filter(member=writer.member, revoked_at=None).count() == 2


def test_a_replayed_share_answers_with_a_fresh_token_and_the_lost_one_stops_opening(steward, anonymous):
    export_id = steward.api.post(f"{S}/exports").json()["id"]
    assert [o.state for o in drain_exports()] == ["completed"]
    first = steward.api.post(f"{S}/exports/{export_id}/share", headers={"Idempotency-Key": "share-1"})
    lost = first.json()["token"]
    assert lost not in json.dumps(Operation.objects.get(key="share-1").response_body)
    again = steward.api.post(f"{S}/exports/{export_id}/share", headers={"Idempotency-Key": "share-1"})
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    token = again.json()["token"]
    assert token != lost and again.json()["url"].endswith(f"/v1/shares/{token}")
    assert anonymous.get(f"/v1/shares/{lost}").status_code == 404
    assert json.loads(b"".join(anonymous.get(f"/v1/shares/{token}").streaming_content))["space"] == "agent-lab"


def test_a_retried_join_answers_for_the_same_member_with_a_fresh_key_and_uses_the_link_once(steward, anonymous):
    from spaces.models import JoinLink, Member

    link = steward.api.post(f"{S}/join-links", {"role": "writer", "max_uses": 1}).json()["link"]
    first = anonymous.post("/v1/join", {"link": link, "name": "newbie"}, headers={"Idempotency-Key": "j-1"})
    again = anonymous.post("/v1/join", {"link": link, "name": "newbie"}, headers={"Idempotency-Key": "j-1"})
    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first
    assert again.json()["member"]["id"] == first.json()["member"]["id"]
    assert again.json()["key"] != first.json()["key"]
    assert ApiClient(first.json()["key"]).get(S).status_code == 401
    assert ApiClient(again.json()["key"]).get(S).status_code == 200
    assert JoinLink.objects.get().uses == 1 and Member.objects.filter(name="newbie").count() == 1
    assert not ApiKey.objects.filter(key_hash__in=[first.json()["key"], again.json()["key"]]).exists()
    other = anonymous.post("/v1/join", {"link": link, "name": "someone else"}, headers={"Idempotency-Key": "j-1"})
    assert other.status_code == 422 and other.json()["error"] == "idempotency_key_reused"
    exhausted = anonymous.post("/v1/join", {"link": link}, headers={"Idempotency-Key": "j-2"})
    assert exhausted.json()["error"] == "join_link_invalid"  # a new key is a new join: the link's one use is gone
