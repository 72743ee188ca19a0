"""SPEC §2: Bearer keys, roles, revocation, expiry and space isolation."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from idempotency.models import Operation
from spaces.models import ApiKey
from tests.conftest import ApiClient

SLUG = "agent-lab"

# Every route scoped to a space, with a body good enough to pass validation.
SPACE_ROUTES = [
    ("GET", "/v1/spaces/{slug}", None),
    ("PATCH", "/v1/spaces/{slug}", {"name": "x"}),
    ("GET", "/v1/spaces/{slug}/join-links", None),
    ("POST", "/v1/spaces/{slug}/join-links", {"role": "writer"}),
    ("DELETE", "/v1/spaces/{slug}/join-links/1", None),
    ("GET", "/v1/spaces/{slug}/members", None),
    ("PATCH", "/v1/spaces/{slug}/members/1", {"role": "reader"}),
    ("POST", "/v1/spaces/{slug}/members/1/keys", {}),
    ("GET", "/v1/spaces/{slug}/charter", None),
    ("GET", "/v1/spaces/{slug}/charter/T1", None),
    ("PUT", "/v1/spaces/{slug}/charter/T9", {"canonical_title": "x"}),
    ("DELETE", "/v1/spaces/{slug}/charter/T1", None),
    ("POST", "/v1/spaces/{slug}/bind", {"title": "x"}),
    ("GET", "/v1/spaces/{slug}/holds", None),
    ("POST", "/v1/spaces/{slug}/holds", {"work_item_id": "T1"}),
    ("DELETE", "/v1/spaces/{slug}/holds/T1", None),
    ("GET", "/v1/spaces/{slug}/tasks", None),
    ("POST", "/v1/spaces/{slug}/tasks", {"title": "x"}),
    ("POST", "/v1/spaces/{slug}/tasks/window", {"proposals": [{"title": "x"}]}),
    ("GET", "/v1/spaces/{slug}/tasks/1", None),
    ("GET", "/v1/spaces/{slug}/tasks/1/history", None),
    ("GET", "/v1/spaces/{slug}/tasks/1/notes", None),
    ("POST", "/v1/spaces/{slug}/tasks/1/notes", {"body": "x"}),
    ("GET", "/v1/spaces/{slug}/posts", None),
    ("POST", "/v1/spaces/{slug}/posts", {"body": "x"}),
    ("POST", "/v1/spaces/{slug}/posts/1/hide", {}),
    ("POST", "/v1/spaces/{slug}/posts/1/withhold", {}),
]


@pytest.mark.parametrize("method, path, body", SPACE_ROUTES)
def test_other_spaces_answer_404_on_every_route(method, path, body, steward, outsider):
    response = outsider.api.request(method, path.format(slug=SLUG), body)
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


@pytest.mark.parametrize("method, path, body", SPACE_ROUTES)
def test_every_route_needs_a_key(method, path, body, space, anonymous):
    response = anonymous.request(method, path.format(slug=SLUG), body)
    assert response.status_code == 401
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["error"] == "unauthenticated"


def test_a_garbage_key_is_401(space):
    response = ApiClient("sk_nothing_here").get(f"/v1/spaces/{SLUG}")
    assert response.status_code == 401


def test_a_revoked_key_is_401_on_the_very_next_request(writer):
    assert writer.api.get(f"/v1/spaces/{SLUG}").status_code == 200
    prefix = writer.member.api_keys.get().prefix
    assert writer.api.delete(f"/v1/keys/{prefix}").status_code == 204
    assert writer.api.get(f"/v1/spaces/{SLUG}").status_code == 401


def test_an_expired_key_is_401(writer):
    ApiKey.objects.filter(member=writer.member).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert writer.api.get(f"/v1/spaces/{SLUG}").status_code == 401


@pytest.mark.parametrize("broken", ["wrong secret", "revoked", "expired", "expires later"])
def test_both_lookups_read_a_key_alike_with_and_without_an_idempotency_key(writer, broken):
    """One rule (``ApiKey.live`` with the hash, compiled into both statements): the plain lookup
    and the first touch of a keyed request accept and refuse the same keys, and a refused keyed
    request writes no operation."""
    key = writer.key
    if broken == "wrong secret":
        key = key[:-4] + ("0000" if not key.endswith("0000") else "1111")
    elif broken == "revoked":
        ApiKey.objects.filter(member=writer.member).update(revoked_at=timezone.now())
    else:
        delta = timedelta(seconds=-1 if broken == "expired" else 3600)
        ApiKey.objects.filter(member=writer.member).update(expires_at=timezone.now() + delta)
    expected = 201 if broken == "expires later" else 401
    api = ApiClient(key)
    assert api.post(f"/v1/spaces/{SLUG}/posts", {"body": "plain"}).status_code == expected
    keyed = api.post(f"/v1/spaces/{SLUG}/posts", {"body": "keyed"}, headers={"Idempotency-Key": "k1"})
    assert keyed.status_code == expected
    assert Operation.objects.exists() == (expected == 201)


def test_a_key_records_when_it_was_last_used(writer):
    writer.api.get(f"/v1/spaces/{SLUG}")
    assert writer.member.api_keys.get().last_used_at is not None


def test_the_stored_key_is_only_a_hash(writer):
    stored = writer.member.api_keys.get()
    assert writer.key.split("_")[2] not in (stored.key_hash, stored.prefix)
    assert writer.key.startswith(f"sk_{stored.prefix}_")


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("PATCH", "/v1/spaces/{slug}", {"name": "x"}),
        ("GET", "/v1/spaces/{slug}/members", None),
        ("POST", "/v1/spaces/{slug}/join-links", {"role": "writer"}),
        ("PUT", "/v1/spaces/{slug}/charter/T9", {"canonical_title": "x"}),
        ("POST", "/v1/spaces/{slug}/holds", {"work_item_id": "T1"}),
        ("POST", "/v1/spaces/{slug}/posts/1/withhold", {}),
    ],
)
def test_writers_cannot_do_steward_work(method, path, body, writer):
    response = writer.api.request(method, path.format(slug=SLUG), body)
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"


@pytest.mark.parametrize(
    "path, body",
    [
        ("/v1/spaces/{slug}/tasks", {"title": "x"}),
        ("/v1/spaces/{slug}/posts", {"body": "x"}),
        ("/v1/spaces/{slug}/tasks/window", {"proposals": [{"title": "x"}]}),
    ],
)
def test_readers_cannot_write(path, body, reader):
    response = reader.api.post(path.format(slug=SLUG), body)
    assert response.status_code == 403


def test_readers_can_read(reader):
    assert reader.api.get(f"/v1/spaces/{SLUG}/tasks").status_code == 200
    assert reader.api.get(f"/v1/spaces/{SLUG}/charter").status_code == 200
