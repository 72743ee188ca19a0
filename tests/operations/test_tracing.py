"""SPEC §20 Traces: with OTEL_* set, a request is a span carrying the space, the task and the
member, with its statements as child spans; without them nothing of OpenTelemetry loads."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.live_server import ROOT, server_env

pytestmark = [pytest.mark.django_db(transaction=True)]

SCRIPT = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings.base")
from telemetry import tracing
tracing.instrument(); tracing.start()
import django; django.setup()
from django.test import Client
from spaces.models import ApiKey, Space
from spaces import services
space = Space.objects.get(slug="agent-lab")
member = space.members.get(name="tracer")
key = services.issue_key(member=member)[1]
answer = Client().get("/v1/spaces/agent-lab/tasks/1", HTTP_AUTHORIZATION=f"Bearer {key}")
print("STATUS", answer.status_code, "LOADED", "opentelemetry" in sys.modules, file=sys.stderr)
"""


def run(**env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env=server_env(**env))


def spans(stdout: str) -> list[dict]:
    """The console exporter's spans: JSON objects one after another."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while (start := stdout.find("{", at)) != -1:
        span, at = decoder.raw_decode(stdout, start)
        found.append(span)
    return found


def test_a_request_is_a_span_with_its_space_task_member_and_statements(space):
    from tests.factories import create_task, member_with_key

    member, _ = member_with_key(space, "writer", "tracer")
    create_task(space=space, actor=member, title="Traced task")
    done = run(OTEL_TRACES_EXPORTER="console", OTEL_SERVICE_NAME="spaces-test")
    assert "STATUS 200 LOADED True" in done.stderr, done.stderr[-2000:]
    found = spans(done.stdout)
    [request] = [s for s in found if s["kind"] == "SpanKind.SERVER"]
    assert request["attributes"]["spaces.space"] == "agent-lab" and request["attributes"]["spaces.task"] == "1"
    assert request["attributes"]["spaces.member"] == member.pk
    assert request["resource"]["attributes"]["service.name"] == "spaces-test"
    statements = [s for s in found if s["parent_id"] == request["context"]["span_id"] and s["kind"] == "SpanKind.CLIENT"]
    assert statements and all(s["attributes"].get("db.system") == "postgresql" for s in statements)


def test_without_otel_variables_nothing_of_it_loads(space):
    from tests.factories import member_with_key

    member_with_key(space, "writer", "tracer")
    done = run()
    assert "LOADED False" in done.stderr, done.stderr[-2000:]


WAIT_SCRIPT = """
import os, sys, threading, time
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings.base")
from telemetry import tracing
tracing.instrument(); tracing.start()
import django; django.setup()
from django.test import Client
from spaces.models import Space
from spaces import services
space = Space.objects.get(slug="agent-lab")
key = services.issue_key(member=space.members.get(name="tracer"))[1]
auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
answers = {}
waiting = threading.Thread(target=lambda: answers.update(next=Client().post(
    "/v1/spaces/agent-lab/next", '{"wait": 10}', content_type="application/json", **auth)))
waiting.start()
time.sleep(1.5)
Client().post("/v1/spaces/agent-lab/tasks", '{"title": "Wake the waiting agent"}', content_type="application/json", **auth)
waiting.join(15)
print("NEXT", answers["next"].status_code, answers["next"].json()["task"] is not None, file=sys.stderr)
"""


def test_a_waited_next_links_to_the_create_that_woke_it(space):
    from tests.factories import member_with_key

    member_with_key(space, "writer", "tracer")
    done = subprocess.run([sys.executable, "-c", WAIT_SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env=server_env(OTEL_TRACES_EXPORTER="console"))
    assert "NEXT 200 True" in done.stderr, done.stderr[-3000:]
    found = [s for s in spans(done.stdout) if s["kind"] == "SpanKind.SERVER"]
    [create] = [s for s in found if s["attributes"].get("http.route", "").endswith("tasks")
                or s["name"].endswith("tasks")]
    [waited] = [s for s in found if s is not create]
    assert [link["context"]["trace_id"] for link in waited["links"]] == [create["context"]["trace_id"]]
