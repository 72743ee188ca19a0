"""A refusal over MCP is an answer, not an incident: it logs nothing; a tool that crashes logs its
traceback. Through the whole /mcp view, in this process (Django's test client)."""
from __future__ import annotations

import json
import logging

import pytest
from django.test import Client

from tests.conftest import load_agent_lab
from tests.factories import member_with_key

pytestmark = [pytest.mark.django_db(transaction=True)]


def call(key: str, name: str, arguments: dict) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    response = Client().post("/mcp", json.dumps(body), content_type="application/json",
                             headers={"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"})
    assert response.status_code == 200, response.content
    return response.json()["result"]


def test_a_refused_tool_logs_nothing_and_a_crashed_one_logs_its_traceback(caplog, monkeypatch):
    space = load_agent_lab()
    _, key = member_with_key(space, "writer", "agent-1")
    caplog.set_level(logging.INFO)  # the SDK's own INFO lines (a session manager per request) aside
    refused = call(key, "get_task", {"number": 99})
    assert refused["isError"] and refused["structuredContent"]["status"] == 404
    assert json.loads(refused["content"][0]["text"]) == refused["structuredContent"]
    conflict = call(key, "create_task", {"title": "x" * 501})
    assert conflict["isError"] and conflict["structuredContent"]["error"] == "invalid_request"
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert not [r for r in caplog.records if "rejected" in r.getMessage() or "failed" in r.getMessage()]

    from fronts.mcp import tools as mcp

    def crash(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(mcp, "command_result", crash)
    crashed = call(key, "get_task", {"number": 1})
    assert crashed["isError"] and "a bug" not in json.dumps(crashed)  # no internals to the caller
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert logged and logged[0].exc_info and "a bug" in str(logged[0].exc_info[1].__cause__ or logged[0].exc_info[1])
