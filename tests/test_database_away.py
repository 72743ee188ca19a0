"""SPEC §3: while the database cannot be reached every API route answers 503
service_unavailable with Retry-After, never 500, so clients retry (safely, with a key)."""
from __future__ import annotations

from unittest import mock

import httpx
import pytest
from django.db import InternalError

from tests.live_server import gunicorn

S = "/v1/spaces/agent-lab"
NOWHERE = "postgres://postgres@127.0.0.1:9/spaces"  # nothing listens on the discard port


def test_every_kind_of_route_answers_503_with_retry_after_while_the_database_is_away():
    key = {"Authorization": "Bearer sk_abcdefghijkl_0123456789abcdef0123456789abcdef"}  # key-shaped: looked up
    requests = [
        ("GET", f"{S}", {}, None),
        ("GET", f"{S}/tasks?ready=true", {}, None),
        ("POST", f"{S}/tasks", {}, {"title": "Retry policy"}),
        ("POST", f"{S}/tasks", {"Idempotency-Key": "k1"}, {"title": "Retry policy"}),
        ("POST", f"{S}/next", {}, {}),
        ("PATCH", f"{S}/tasks/1", {}, {"priority": 1}),
        ("POST", "/v1/join", {}, {"link": "nothing"}),
    ]
    with gunicorn(workers=1, DATABASE_URL=NOWHERE) as base:
        for method, path, headers, body in requests:
            response = httpx.request(method, base + path, json=body, headers={**key, **headers}, timeout=30)
            assert response.status_code == 503, (method, path, response.status_code, response.text[:300])
            assert response.headers["Retry-After"] == "2"
            assert response.headers["Content-Type"] == "application/problem+json"
            assert response.json()["error"] == "service_unavailable"
        # a malformed key names no key: it is refused without the database
        malformed = httpx.get(base + S, headers={"Authorization": "Bearer sk_short_0123"}, timeout=30)
        assert malformed.status_code == 401


@pytest.mark.django_db(transaction=True)
def test_a_connection_whose_protocol_state_went_wrong_answers_503_not_500(steward):
    """Through a pooler whose server connection went away mid-exchange, psycopg raises
    InternalError ("received 2 results from command 'BEGIN'"): SPEC §3's 503, never 500."""
    broken = InternalError("received 2 results from command 'BEGIN'")
    with mock.patch("commands.unit.touch_first", side_effect=broken):
        keyed = steward.api.post(f"{S}/tasks", {"title": "Retry policy"}, headers={"Idempotency-Key": "k1"})
    assert keyed.status_code == 503 and keyed.json()["error"] == "service_unavailable", keyed.content
    assert keyed.headers["Retry-After"] == "2"
    with mock.patch("tasks.selectors.task_with_work", side_effect=broken):
        read = steward.api.get(f"{S}/tasks/1")
    assert read.status_code == 503 and read.json()["error"] == "service_unavailable", read.content
    # The next request gets a working connection and goes on as usual.
    assert steward.api.post(f"{S}/tasks", {"title": "Retry policy"}, headers={"Idempotency-Key": "k1"}).status_code == 201
