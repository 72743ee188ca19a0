"""SPEC §3 for the A2A front, route by route: every /a2a/ route, found at run time, answers hostile
input with a JSON answer (an A2A error, or a problem body before A2A is spoken), never a 500, and
writes nothing."""
from __future__ import annotations

import json
import re

import pytest

from spaces.models import Post
from tasks.models import Note, Task
from tests.test_every_route_hostile import routes_under
from webhooks.models import Endpoint

pytestmark = pytest.mark.django_db(transaction=True)
GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)|<(?:\w+:)?(\w+)>")
HOSTILE_PARAMS = ["ab\x00cd", "9" * 40, "-1", "T" + "9" * 30, "%25", "x" * 300, "1.0"]
DEEP = "[" * 200 + "]" * 200
HOSTILE_MESSAGES = [
    {"messageId": "a\x00b", "role": "ROLE_USER", "parts": [{"text": "A title"}]},
    {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "x\ud800"}]},
    {"messageId": "m2", "role": "ROLE_USER", "parts": [{"text": "nul\x00 in the title"}]},
    {"messageId": "m3", "role": "ROLE_USER", "parts": [{"data": {"title": "t", "priority": 1e300}}]},
    {"messageId": "m4", "role": "ROLE_USER", "parts": [{"data": {"title": "t", "blocked_by": [1.5, "x"]}}]},
    {"messageId": "m5", "role": "ROLE_USER", "parts": [{"data": {"title": ["a"], "labels": "x"}}]},
    {"messageId": "m6", "role": "ROLE_USER", "parts": [{"data": json.loads(DEEP)}]},
    {"messageId": "m7", "role": "ROLE_USER", "parts": [{"data": {"title": "t"}}, {"data": {"title": "u"}}]},
    {"messageId": "m8", "role": "ROLE_AGENT", "parts": [{"text": "from an agent"}]},
    {"messageId": "m9", "role": "ROLE_BOGUS", "parts": [{"text": "t"}]},
    {"messageId": "x" * 300, "role": "ROLE_USER", "parts": [{"text": "t"}]},
    {"messageId": "m10", "role": "ROLE_USER", "taskId": "9" * 40, "parts": [{"text": "a note"}]},
    {"messageId": "m11", "role": "ROLE_USER", "parts": [{"url": "http://example.com/x"}]},
    {"messageId": "m12", "role": "ROLE_USER", "parts": [{"text": "t" * 600}]},
]
DEEPER = "[" * 3000 + "]" * 3000  # past Python's recursion limit
HOSTILE_BODIES = ["\x00", DEEP, DEEPER, "[" * 1000, '{"message": ' + DEEPER + "}", "{", '"just a string"', "null", "1e999", json.dumps({"message": None}),
                  json.dumps({"id": "\ud800", "historyLength": 2 ** 40, "pageSize": -1, "status": "NOPE"}),
                  json.dumps({"url": "file:///etc/passwd", "taskId": "1", "token": "\x00"}),
                  *[json.dumps({"message": m}) for m in HOSTILE_MESSAGES]]


def a2a_routes() -> list[tuple[str, list[str]]]:
    return routes_under("a2a/")


def concrete(route: str, value: str) -> str:
    return "/" + GROUP.sub(lambda m: "agent-lab" if (m.group(1) or m.group(2)) == "slug" else value, route)


def rpc_bodies() -> list[str]:
    from fronts.a2a.views import OPERATIONS

    calls = []
    for method in OPERATIONS:
        for params in [{"id": "\x00"}, {"id": "9" * 40, "taskId": "-1"}, {"message": HOSTILE_MESSAGES[0]},
                       {"pageSize": 10 ** 12}, {"unknown": 1}, "not an object", {"pageToken": "9" * 5000},
                       {"pageSize": 10 ** 400}, {"historyLength": 10 ** 30}]:
            calls.append(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
    calls += [json.dumps({"jsonrpc": "2.0", "id": {"x": 1}, "method": "GetTask", "params": {}}),
              json.dumps({"jsonrpc": "2.0", "id": True, "method": "GetTask", "params": {}}),
              json.dumps({"jsonrpc": "1.0", "id": 1, "method": "GetTask"}),
              json.dumps({"jsonrpc": "2.0", "id": 1, "method": ["GetTask"]}),
              "[" * 1000, DEEPER, '{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": ' + DEEPER + "}",
              '{"jsonrpc": "2.0", "id": ' + "9" * 5000 + ', "method": "GetTask"}']
    calls += [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": m}})
              for m in HOSTILE_MESSAGES]
    return calls


def test_every_a2a_route_is_found():
    routes = dict(a2a_routes())
    assert len(routes) == 12 and "a2a/<slug:slug>" in routes and "a2a/<slug:slug>/" in routes


def test_every_a2a_route_refuses_hostile_input_without_a_500_or_a_write(writer, settings):
    settings.DEBUG_PROPAGATE_EXCEPTIONS = False
    writer.api.client.raise_request_exception = False
    answered = 0
    for route, methods in a2a_routes():
        for value in HOSTILE_PARAMS:
            path = concrete(route, value)
            for method in methods:
                bodies = rpc_bodies() if route == "a2a/<slug:slug>" else HOSTILE_BODIES
                for body in (bodies if method in ("post", "put", "patch") else [""]):
                    response = writer.api.request(method.upper(), path, raw=body, headers={"A2A-Version": "1.0"})
                    assert response.status_code < 500, (method, path, body[:200], response.content[:300])
                    if response.get("Content-Type", "").startswith("text/event-stream"):
                        continue
                    json.loads(response.content)  # an answer a client can read
                    answered += 1
    assert answered > 500
    assert Task.objects.count() == Note.objects.count() == Post.objects.count() == Endpoint.objects.count() == 0
