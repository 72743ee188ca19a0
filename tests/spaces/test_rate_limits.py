"""SPEC §3 Abuse: limits counted in PostgreSQL, so every server process shares them."""
from __future__ import annotations

import httpx
import pytest
from django.test import Client, override_settings

from spaces.models import RateCounter, Space
from fronts.client_address import client_address
from spaces.throttles import purge_rate_counters
from tests.conftest import ApiClient
from tests.live_server import gunicorn

S = "/v1/spaces/agent-lab"


@pytest.fixture(autouse=True)
def one_minute_window():
    """Counts are per clock minute: start each test far enough from the minute's end that its
    requests all fall in one window."""
    import time

    second = time.time() % 60  # the database server's clock is this machine's
    if second > 45:
        time.sleep(60.5 - second)


@override_settings(SPACES_BAD_KEY_LIMIT_PER_MINUTE=3)
def test_bad_keys_from_one_address_are_throttled_and_good_keys_are_not(writer):
    bad = ApiClient("sk_nothere00000_" + "0" * 32)
    codes = [bad.get(S).status_code for _ in range(5)]
    assert codes == [401, 401, 401, 429, 429]
    refused = bad.get(S)
    assert refused.json()["error"] == "rate_limited" and int(refused["Retry-After"]) >= 1
    assert writer.api.get(S).status_code == 200  # the same address with a valid key is served
    assert not RateCounter.objects.filter(scope="key").exists()  # and counted nowhere


@override_settings(SPACES_BAD_KEY_LIMIT_PER_MINUTE=3)
def test_a_refused_bad_key_costs_no_statement_once_its_address_is_over(writer):
    """Within a minute the shared count only grows: a process that saw an address over its limit
    refuses it again without counting, a key refused this minute is refused again without its
    lookup, and a malformed key never costs a statement. A valid key from the same address is
    still looked up, and served."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    bad = ApiClient("sk_nothere00000_" + "0" * 32)
    for _ in range(4):
        bad.get(S)
    with CaptureQueriesContext(connection) as queries:
        assert bad.get(S).status_code == 429  # refused before: no lookup, no count
        malformed = ApiClient("not-a-key").get(S)
    assert malformed.status_code == 401 and "not an API key" in malformed.json()["detail"]
    assert len(queries) == 0, [q["sql"][:60] for q in queries]
    with CaptureQueriesContext(connection) as queries:  # a new key from there: its lookup only
        assert ApiClient("sk_another00000_" + "1" * 32).get(S).status_code == 429
    assert len(queries) == 1 and "prefix" in queries[0]["sql"], [q["sql"][:60] for q in queries]
    assert writer.api.get(S).status_code == 200  # a valid key from the same address is still served


def test_a_space_may_cap_each_keys_requests_per_minute(writer, writer2, steward):
    assert steward.api.patch(S, {"requests_per_minute": 5}).json()["requests_per_minute"] == 5
    codes = [writer.api.get(S).status_code for _ in range(7)]
    assert codes == [200] * 5 + [429] * 2
    assert writer2.api.get(S).status_code == 200  # each key its own count
    Space.objects.update(requests_per_minute=None)
    assert writer.api.get(S).status_code == 200


def test_the_address_is_the_peers_unless_a_trusted_proxy_forwards_it(rf):
    request = rf.get("/", REMOTE_ADDR="10.0.0.9", HTTP_X_FORWARDED_FOR="1.2.3.4, 10.0.0.8")
    assert client_address(request) == "10.0.0.9"
    with override_settings(SPACES_TRUSTED_PROXIES=["10.0.0.9", "10.0.0.8"]):
        assert client_address(request) == "1.2.3.4"


@override_settings(SPACES_ADMIN_LOGIN_LIMIT_PER_MINUTE=2)
def test_failed_admin_logins_are_throttled_per_address_and_name(transactional_db):
    from django.contrib.auth.models import User

    User.objects.create_superuser("bob", "bob@example.com", "right")
    User.objects.create_superuser("ada", "ada@example.com", "right")
    here, there = Client(REMOTE_ADDR="10.1.1.1"), Client(REMOTE_ADDR="10.2.2.2")
    codes = [here.post("/admin/login/", {"username": "ada", "password": f"wrong{i}"}).status_code for i in range(4)]
    assert codes[:2] == [200, 200] and codes[2:] == [429, 429]
    assert here.post("/admin/login/", {"username": "ADA ", "password": "right"}).status_code == 429  # the same name
    # another person at the same address, and the right password from elsewhere, still log in
    assert here.post("/admin/login/", {"username": "bob", "password": "right"}).status_code == 302
    assert there.post("/admin/login/", {"username": "ada", "password": "right"}).status_code == 302


@override_settings(SPACES_ADMIN_LOGIN_LIMIT_PER_MINUTE=1)
def test_a_flood_of_names_from_one_address_is_stopped_too(transactional_db):
    client = Client(REMOTE_ADDR="10.3.3.3")
    codes = [client.post("/admin/login/", {"username": f"user{i}", "password": "x"}).status_code for i in range(12)]
    assert codes[:10] == [200] * 10 and codes[10:] == [429, 429]


def test_sweep_forgets_minutes_past(transactional_db):
    from django.utils import timezone

    RateCounter.objects.create(scope="bad_key", subject="1.2.3.4", window_start=timezone.now() - timezone.timedelta(minutes=5))
    assert purge_rate_counters(dry_run=True) == 1 and purge_rate_counters() == 1
    assert not RateCounter.objects.exists()


@pytest.mark.slow
def test_two_server_processes_share_the_bad_key_count(transactional_db):
    from tests.conftest import load_agent_lab

    load_agent_lab()
    with gunicorn(workers=2, SPACES_BAD_KEY_LIMIT_PER_MINUTE="6") as base:
        codes = []
        for _ in range(12):
            with httpx.Client() as client:  # a new connection each time: the workers take turns
                codes.append(client.get(f"{base}{S}", headers={"Authorization": "Bearer sk_nothere00000_" + "0" * 32}).status_code)
    assert codes.count(401) == 6 and codes.count(429) == 6
