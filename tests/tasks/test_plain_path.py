"""The plain path (spaces.api.plain): next and create answer ordinary requests without DRF's
request machinery; they must answer exactly as the full views do, and leave every refusal to them."""
from __future__ import annotations

import pytest

from tasks.api import NextView

S = "/v1/spaces/agent-lab"


def shape(value):
    """Keys and value types, recursively: what two claims of different tasks share."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    return type(value).__name__


@pytest.fixture
def full_view_calls(monkeypatch) -> list:
    calls = []
    post = NextView.post

    def counted(self, request, *args, **kwargs):
        calls.append(request.path)
        return post(self, request, *args, **kwargs)

    monkeypatch.setattr(NextView, "post", counted)
    return calls


def test_plain_next_answers_as_the_full_view_does(writer, tasks3, full_view_calls):
    plain = writer.api.post(f"{S}/next")
    assert full_view_calls == []  # served by the plain path
    full = writer.api.post(f"{S}/next", {"kind": "task"})
    assert len(full_view_calls) == 1  # a body goes through DRF
    assert plain.status_code == full.status_code == 200
    assert plain["Content-Type"] == full["Content-Type"] == "application/json"
    assert plain["Allow"] == full["Allow"]
    assert (plain.json()["task"]["id"], full.json()["task"]["id"]) == (1, 2)
    assert shape(plain.json()) == shape(full.json())
    assert plain.json()["claim"]["member"] == {"id": writer.member.pk, "name": "writer"}


def test_plain_next_with_nothing_open_is_task_null(writer, full_view_calls):
    response = writer.api.post(f"{S}/next")
    assert response.status_code == 200 and response.json() == {"task": None} and full_view_calls == []


def test_plain_next_under_an_idempotency_key_replays(writer, tasks3):
    first = writer.api.post(f"{S}/next", headers={"Idempotency-Key": "next-1"})
    again = writer.api.post(f"{S}/next", headers={"Idempotency-Key": "next-1"})
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json() and first.json()["task"]["id"] == 1


@pytest.mark.parametrize(
    "who, path, headers, status, error",
    [
        ("anonymous", f"{S}/next", {}, 401, "unauthenticated"),
        ("bad key", f"{S}/next", {}, 401, "unauthenticated"),
        ("reader", f"{S}/next", {}, 403, "forbidden"),
        ("outsider", f"{S}/next", {}, 404, "not_found"),
        ("writer", "/v1/spaces/elsewhere/next", {}, 404, "not_found"),
        ("writer", f"{S}/next", {"Accept": "text/html"}, 422, "invalid_request"),  # "JSON only"
    ],
)
def test_refusals_of_plain_next_come_from_the_full_view(
    request, anonymous, writer, reader, outsider, tasks3, full_view_calls, who, path, headers, status, error
):
    client = {"anonymous": anonymous, "writer": writer.api, "reader": reader.api, "outsider": outsider.api}.get(who)
    if who == "bad key":
        client = type(anonymous)("sk_abcdefgh_notakey")
    response = client.post(path, headers=headers)
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["error"] == error


# The create route's plain path: a query string sends the same request through DRF.

def test_a_refused_create_is_the_same_bytes_on_both_paths(writer, steward):
    first = writer.api.post(f"{S}/tasks", {"title": "Retry policy for tool calls"})
    assert first.status_code == 201
    plain = writer.api.post(f"{S}/tasks", {"title": "Retry policy for tool calls"})
    full = writer.api.post(f"{S}/tasks?via=drf", {"title": "Retry policy for tool calls"})
    assert plain.status_code == full.status_code == 409
    assert plain.content == full.content
    assert {h: plain[h] for h in ("Content-Type", "Allow")} == {h: full[h] for h in ("Content-Type", "Allow")}


def test_a_create_answers_the_same_on_both_paths(writer):
    plain = writer.api.post(f"{S}/tasks", {"title": "A plain one", "body": " text "})
    full = writer.api.post(f"{S}/tasks?via=drf", {"title": "A full one", "body": " text "})
    assert plain.status_code == full.status_code == 201
    assert shape(plain.json()) == shape(full.json())
    assert plain.json()["body"] == full.json()["body"] == "text"
    assert plain["Allow"] == full["Allow"] and plain["Content-Type"] == full["Content-Type"]


@pytest.mark.parametrize("raw, status, error", [
    ('{"title": NaN}', 400, "malformed_json"),
    ('{"title": ', 400, "malformed_json"),
    ('{"title": ""}', 422, "invalid_request"),
    ('{"title": "ok", "delivery_mode": "pigeon"}', 422, "invalid_request"),
])
def test_bodies_the_plain_path_declines_get_the_full_views_answer(writer, raw, status, error):
    response = writer.api.post(f"{S}/tasks", raw=raw)
    assert response.status_code == status, response.content
    assert response.json()["error"] == error
