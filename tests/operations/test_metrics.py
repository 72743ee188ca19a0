"""SPEC §20 Metrics and logs: /metrics for a token or loopback, counters by route template,
refusals by code, replays, per-space gauges read at scrape time in a fixed number of
statements, summed across gunicorn's worker processes; one JSON log line per request."""
from __future__ import annotations

import json
import logging
import re

import httpx
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from spaces import services
from tests.factories import create_task
from tests.live_server import gunicorn

S = "/v1/spaces/agent-lab"


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the exposition, 0 when absent."""
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0])) if "{" in line else {}
            if all(found.get(k) == v for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def scrape(client: Client | None = None, **headers) -> str:
    response = (client or Client()).get("/metrics", headers=headers)
    assert response.status_code == 200, response.content
    return response.content.decode()


def test_only_a_token_or_loopback_scrapes(settings, space):
    assert Client(REMOTE_ADDR="10.1.2.3").get("/metrics").status_code == 403
    assert Client().get("/metrics").status_code == 200  # the test client is 127.0.0.1
    settings.SPACES_METRICS_TOKEN = "scrape-me"
    assert Client().get("/metrics").status_code == 403
    assert Client(REMOTE_ADDR="10.1.2.3").get("/metrics", headers={"Authorization": "Bearer scrape-me"}
                                              ).status_code == 200


def test_requests_refusals_replays_and_the_spaces_state(steward, writer, space):
    before = scrape()
    route = "/v1/spaces/<slug:slug>/tasks"
    created = writer.api.post(f"{S}/tasks", {"title": "Count me"}, headers={"Idempotency-Key": "m-1"})
    writer.api.post(f"{S}/tasks", {"title": "Count me"}, headers={"Idempotency-Key": "m-1"})
    writer.api.post(f"{S}/tasks", {"title": "Count me"})  # the same slot: 409
    create_task(space=space, actor=writer.member, title="Claimed right away")
    writer.api.post(f"{S}/next", {})
    after = scrape()
    assert created.status_code == 201
    assert sample(after, "spaces_requests_total", route=route, method="POST", status="201") - \
        sample(before, "spaces_requests_total", route=route, method="POST", status="201") == 2
    assert sample(after, "spaces_request_seconds_count", route=route, method="POST") >= 3
    assert sample(after, "spaces_idempotent_replays_total") - sample(before, "spaces_idempotent_replays_total") == 1
    assert sample(after, "spaces_refusals_total", status="409") >= 1
    assert sample(after, "spaces_space_ready_tasks", space="agent-lab") == 1
    assert sample(after, "spaces_space_claimed_tasks", space="agent-lab") == 1
    assert sample(after, "spaces_space_oldest_ready_seconds", space="agent-lab") >= 0
    assert "spaces_webhook_pending_deliveries 0.0" in after and "spaces_export_queue 0.0" in after
    assert "_created" not in after  # a process's start time per series: noise once summed


def test_a_scrape_costs_the_same_statements_at_1_and_30_spaces(steward, space):
    def statements() -> int:
        with CaptureQueriesContext(connection) as queries:
            scrape()
        return len(queries)

    create_task(space=space, actor=steward.member, title="One space")
    one = statements()
    for n in range(30):
        other = services.create_space(slug=f"many-{n}", name=f"many {n}")
        member = services.add_member(space=other, role="writer", name="w")
        create_task(space=other, actor=member, title=f"Work in space {n}")
    thirty = statements()
    assert one == thirty <= 6
    text = scrape()
    assert len(re.findall(r'^spaces_space_ready_tasks\{', text, re.M)) == 21  # the top 20, the rest summed
    assert sample(text, "spaces_space_ready_tasks", space="_other") == 11


def test_one_json_line_per_request_with_the_request_id_kept(writer, caplog):
    caplog.set_level(logging.INFO, logger="spaces.requests")
    response = writer.api.get(f"{S}/tasks", headers={"X-Request-ID": "req-42"})
    assert response["X-Request-ID"] == "req-42"
    [line] = [json.loads(r.getMessage()) for r in caplog.records if r.name == "spaces.requests"]
    assert line["request_id"] == "req-42" and line["route"] == "/v1/spaces/<slug:slug>/tasks"
    assert line["status"] == 200 and line["space"] == "agent-lab" and line["ms"] >= 0
    assert line["key"] == writer.key.split("_")[1] and writer.key not in json.dumps(line)
    trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert writer.api.get(f"{S}/tasks", headers={"traceparent": trace})["X-Request-ID"] == \
        "4bf92f3577b34da6a3ce929d0e0e4736"
    made = writer.api.get(f"{S}/tasks", headers={"X-Request-ID": "bad id with spaces"})["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", made)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_scrape_sums_every_worker_process(agent_lab):
    with gunicorn(workers=3) as base:
        with httpx.Client(base_url=base) as client:
            before = sample(client.get("/metrics").text, "spaces_requests_total", route="/v1/reference",
                            method="GET", status="200")
            for _ in range(60):  # new connections: gunicorn spreads them over its workers
                httpx.get(f"{base}/v1/reference")
            text = client.get("/metrics").text
    assert sample(text, "spaces_requests_total", route="/v1/reference", method="GET", status="200") - before == 60
    assert 'spaces_db_pool_connections' in text
