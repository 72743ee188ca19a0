"""SPEC §20 Many hosts: two server processes on their own ports share one database, directly
or through a transaction-mode PgBouncer: a wait on one is woken by a create on the other, a
feed follower on one sees an event written on the other, a key's requests are counted across
both, a claim made on one is held by heartbeats sent to the other, and a webhook registered
on one is sent once for an event written on the other."""
from __future__ import annotations

import datetime
import subprocess
import sys
import threading
import time
from contextlib import ExitStack, contextmanager
from typing import Iterator

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from spaces.models import Space
from tests.conftest import load_agent_lab
from tests.factories import member_with_key
from tests import live_server
from tests.live_server import ROOT, gunicorn, server_env
from tests.webhooks.receiver import Receiver

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

S = "/v1/spaces/agent-lab"
LOCAL = {"SPACES_WEBHOOK_ALLOW_HTTP": "1", "SPACES_WEBHOOK_ALLOW_PRIVATE": "1"}


@contextmanager
def two_hosts(through_pooler: bool) -> Iterator[tuple[str, str]]:
    with ExitStack() as stack:
        env = dict(LOCAL)
        if through_pooler:
            from tests.test_pgbouncer import pgbouncer

            # The pooler for requests; LISTEN on a direct connection, as docs/deploying.md says.
            env.update(DATABASE_URL=stack.enter_context(pgbouncer()), DATABASE_LISTEN_URL=live_server.test_database_url())
        a = stack.enter_context(gunicorn(workers=1, **env))
        b = stack.enter_context(gunicorn(workers=1, **env))
        yield a, b


def client(base: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30)


@pytest.mark.parametrize("through_pooler", [False, True], ids=["direct", "pgbouncer"])
def test_two_hosts_share_waits_feeds_rate_limits_leases_and_webhooks(through_pooler, settings):
    settings.SPACES_WEBHOOK_ALLOW_HTTP = settings.SPACES_WEBHOOK_ALLOW_PRIVATE = True
    space = load_agent_lab()
    Space.objects.filter(pk=space.pk).update(claim_lease_seconds=30)
    _, steward = member_with_key(space, "steward")
    _, agent = member_with_key(space, "writer", "agent")
    _, counted = member_with_key(space, "writer", "counted")
    receiver = Receiver()
    worker = subprocess.Popen([sys.executable, "manage.py", "run_worker", "--poll", "0.2"], cwd=ROOT,
                              env=server_env(**LOCAL), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        with two_hosts(through_pooler) as (a, b), client(a, agent) as on_a, client(b, steward) as on_b:
            with client(a, steward) as steward_on_a:
                registered = steward_on_a.post(f"{S}/webhooks", json={"url": receiver.url, "types": ["task.created"]})
            assert registered.status_code == 201, registered.text
            hook = registered.json()
            # A wait on A, woken by a create on B.
            answer: dict = {}
            waiting = threading.Thread(target=lambda: answer.update(
                r=on_a.post(f"{S}/next", json={"wait": 20}), at=time.monotonic()))
            waiting.start()
            time.sleep(1.0)
            created = on_b.post(f"{S}/tasks", json={"title": "Made on host B"})
            made_at = time.monotonic()
            waiting.join(25)
            assert created.status_code == 201, created.text
            assert answer["r"].json()["task"]["number"] == created.json()["number"]
            assert answer["at"] - made_at < 1.5  # woken at once, not by a poll
            # A follower on A sees an event written on B.
            after = on_a.get(f"{S}/events").json()["next"]
            follow: dict = {}
            follower = threading.Thread(target=lambda: follow.update(
                r=on_a.get(f"{S}/events", params={"after": after, "wait": 20})))
            follower.start()
            time.sleep(0.5)
            followed = on_b.post(f"{S}/tasks", json={"title": "Followed from host A"}).json()["number"]
            follower.join(25)
            assert [e["type"] for e in follow["r"].json()["events"]][:1] == ["task.created"]
            # The claim made on A is held by heartbeats sent to B.
            number = answer["r"].json()["task"]["number"]
            with client(b, agent) as agent_on_b:
                beat = agent_on_b.post(f"{S}/tasks/{number}/heartbeat", json={})
                assert beat.status_code == 200, beat.text
            # A key's requests are counted across both hosts.
            on_b.patch(S, json={"requests_per_minute": 6})
            while datetime.datetime.now().second > 50:  # the burst inside one minute
                time.sleep(1)
            with client(a, counted) as counted_a, client(b, counted) as counted_b:
                codes = [(counted_a if n % 2 else counted_b).get(S).status_code for n in range(10)]
            assert codes.count(200) == 6 and codes.count(429) == 4, codes
            # The webhook registered on A was sent once for each task created on B.
            arrived = receiver.wait_for(2, 20)
            assert len(arrived) == 2, worker.poll()
            bodies = [Webhook(hook["secret"]).verify(r.body, r.headers) for r in arrived]
            assert [b["task"] for b in bodies] == [created.json()["number"], followed]
    finally:
        worker.terminate()
        worker.communicate(timeout=30)
        receiver.close()
