"""SPEC §3: no input makes the server answer 500; each breach is a clear 4xx and writes nothing."""
from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from idempotency.models import Operation
from spaces.models import ApiKey, Space
from tasks.models import Task
from tests.live_server import gunicorn

S = "/v1/spaces/agent-lab"
DEEP = "[" * 1000 + "]" * 1000


@pytest.mark.parametrize("path", [f"{S}/tasks", f"{S}/next", "/v1/join", f"{S}/tasks/window"])
@pytest.mark.parametrize("idempotency_key", [None, "k1"])
def test_json_nested_too_deep_is_400_malformed_json(writer, path, idempotency_key):
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
    response = writer.api.post(path, raw=f'{{"title": {DEEP}}}', headers=headers)
    assert response.status_code == 400 and response.json()["error"] == "malformed_json"
    assert not Task.objects.exists() and not Operation.objects.exists()


def test_json_64_levels_deep_is_read_as_usual(writer):
    nested = "[" * 63 + "]" * 63  # with the body's own object: 64 levels
    response = writer.api.post(f"{S}/tasks", raw=f'{{"title": {nested}}}')
    assert response.status_code == 422 and response.json()["error"] == "invalid_request"


def test_a_lone_surrogate_is_422_with_or_without_an_idempotency_key(writer):
    for headers in ({}, {"Idempotency-Key": "k1"}):
        response = writer.api.post(f"{S}/tasks", raw='{"title": "x\\ud800y"}', headers=headers)
        assert response.status_code == 422 and response.json()["error"] == "invalid_request"
    assert not Task.objects.exists()


def test_a_nul_in_a_path_or_query_is_a_4xx(writer, steward, anonymous):
    assert anonymous.get("/v1/shares/ab%00cd").status_code == 404
    assert steward.api.delete("/v1/keys/ab%00cd").status_code == 404
    response = writer.api.get(f"{S}/tasks?status=op%00en")
    assert response.status_code == 422 and response.json()["error"] == "invalid_request"


@pytest.mark.parametrize("slot", ["T9223372036854775808", "T" + "1" * 40, "T1234567890"])
def test_slot_ids_past_nine_digits_are_refused(steward, writer, slot):
    put = steward.api.put(f"{S}/charter/{slot}", {"canonical_title": "x", "aliases": []})
    assert 400 <= put.status_code < 500
    created = writer.api.post(f"{S}/tasks", {"title": "x", "work_item_id": slot})
    assert created.status_code == 422 and created.json()["error"] in ("invalid_work_item_id", "invalid_request")


def test_a_leading_zero_slot_id_still_counts_nine_digits(steward):
    assert steward.api.put(f"{S}/charter/T000123456789", {"canonical_title": "x", "aliases": []}).status_code == 201


def test_bodies_are_limited_in_bytes_not_characters(writer):
    response = writer.api.post(f"{S}/tasks", {"title": "accents", "body": "é" * 40960})  # 80 KiB in UTF-8
    assert response.status_code == 422 and "body" in response.json()["fields"]
    assert writer.api.post(f"{S}/tasks", {"title": "accents", "body": "é" * 32768}).status_code == 201


def test_a_key_mints_no_key_that_outlives_it(writer):
    expires = timezone.now() + timedelta(hours=1)
    ApiKey.objects.filter(member=writer.member).update(expires_at=expires)
    never = writer.api.post(f"{S}/members/{writer.member.pk}/keys", {})
    later = writer.api.post(f"{S}/members/{writer.member.pk}/keys",
                            {"expires_at": (expires + timedelta(days=30)).isoformat()})
    for response in (never, later):
        assert response.status_code == 201
        assert ApiKey.objects.get(prefix=response.json()["prefix"]).expires_at == expires


def test_a_join_link_that_expired_already_is_refused(steward):
    response = steward.api.post(f"{S}/join-links", {"role": "writer",
                                                    "expires_at": (timezone.now() - timedelta(minutes=1)).isoformat()})
    assert response.status_code == 422 and "expires_at" in response.json()["fields"]


@pytest.mark.parametrize("slug", ["Bad Slug!", "", "x" * 300])
def test_create_space_refuses_a_slug_no_route_can_reach(transactional_db, slug):
    with pytest.raises(CommandError):
        call_command("create_space", slug, "--name", "Bad")
    assert not Space.objects.filter(slug=slug).exists()


@pytest.mark.slow
def test_a_chunked_body_is_read_and_limited(writer, space):
    from tests.factories import create_task

    for title in ("Retry policy", "Write the onboarding guide"):
        create_task(space=space, actor=writer.member, title=title)

    def chunks(data: bytes):
        yield data[:5]
        yield data[5:]

    with gunicorn(workers=1) as base:
        headers = {"Authorization": f"Bearer {writer.key}", "Content-Type": "application/json"}
        claimed = httpx.post(f"{base}{S}/next", content=chunks(b'{"number": 2}'), headers=headers, timeout=10)
        assert claimed.status_code == 200 and claimed.json()["task"]["number"] == 2
        huge = httpx.post(f"{base}{S}/tasks", content=chunks(b'{"title": "' + b"x" * (1024 * 1024) + b'"}'),
                          headers=headers, timeout=10)
        assert huge.status_code == 413 and huge.json()["error"] == "payload_too_large"
