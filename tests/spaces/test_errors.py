"""SPEC §3: every refusal is problem+json; bad input is a 4xx, never a 500."""
from __future__ import annotations

import pytest
from django.test import Client

from common.refusals import REFUSALS

TASKS = "/v1/spaces/agent-lab/tasks"


def assert_problem(response, status: int, error: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["error"] == error
    assert body["status"] == status
    assert body["title"] and body["type"] and body["detail"]
    return body


def test_malformed_json_is_400(writer):
    assert_problem(writer.api.post(TASKS, raw='{"title": '), 400, "malformed_json")


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "title"),
        ({"title": 12}, "title"),
        ({"title": ["a"]}, "title"),
        ({"title": "x" * 501}, "title"),
        ({"title": "ok", "body": "x" * (64 * 1024 + 1)}, "body"),
        ({"title": "ok", "delivery_mode": "carrier-pigeon"}, "delivery_mode"),
    ],
)
def test_invalid_fields_are_422_with_field_details(writer, body, field):
    problem = assert_problem(writer.api.post(TASKS, body), 422, "invalid_request")
    assert field in problem["fields"]


def test_a_json_array_body_is_422(writer):
    assert_problem(writer.api.post(TASKS, raw="[1, 2]"), 422, "invalid_request")


def test_bodies_over_one_mebibyte_are_413(writer):
    huge = '{"title": "x", "body": "' + "y" * (1024 * 1024 + 10) + '"}'
    assert_problem(writer.api.post(TASKS, raw=huge), 413, "payload_too_large")


def test_unknown_routes_are_json_404(writer, anonymous):
    assert_problem(anonymous.get("/v1/no/such/route"), 404, "not_found")
    assert_problem(writer.api.get("/v1/spaces/agent-lab/tasks/1/nothing"), 404, "not_found")


def test_wrong_method_is_json_405(writer):
    assert_problem(writer.api.delete(TASKS), 405, "method_not_allowed")


def test_non_numeric_and_huge_ids_are_404(writer):
    assert_problem(writer.api.get(f"{TASKS}/abc"), 404, "not_found")
    assert_problem(writer.api.get(f"{TASKS}/99999999999999999999999"), 404, "not_found")


def test_wrong_content_type_is_415(writer):
    response = writer.api.client.post(TASKS, "title=x", content_type="text/plain", HTTP_AUTHORIZATION=f"Bearer {writer.key}")
    assert_problem(response, 415, "unsupported_media_type")


def test_every_refusal_code_is_in_the_registry_with_its_status(anonymous):
    listed = anonymous.get("/v1/reference?section=refusals").json()["refusals"]["refusals"]
    assert {r["code"]: r["status"] for r in listed} == {c: r.http_status for c, r in REFUSALS.items()}
    for code in ["invalid_request", "malformed_json", "conflict_key_occupied", "idempotency_key_reused"]:
        assert code in REFUSALS


def test_api_routes_answer_clients_that_send_no_csrf_token(writer):
    """Agents send a bearer key and no cookie: CSRF must never stand between them and the API."""
    client = Client(enforce_csrf_checks=True)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {writer.key}"}
    assert_problem(client.post("/v1/no/such/route", {}, content_type="application/json", **auth), 404, "not_found")
    created = client.post(TASKS, {"title": "Write the CSRF note"}, content_type="application/json", **auth)
    assert created.status_code == 201, created.content
    assert not created.cookies  # no session or CSRF cookie on the API
