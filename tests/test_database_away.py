"""SPEC §3: while the database cannot be reached every API route answers 503
service_unavailable with Retry-After, never 500, so clients retry (safely, with a key)."""
from __future__ import annotations

import httpx

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
