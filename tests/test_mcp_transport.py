"""The MCP transport's own rules (SPEC §10, §23), in process: a bad Origin is refused 403, an
unknown prompt is the client's mistake (-32602, nothing logged), and every path under /mcp/
answers JSON."""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db(transaction=True)
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


def call(persona, method: str, params: dict | None = None, **headers: str):
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    return persona.api.post("/mcp", body, headers={**MCP_HEADERS, **headers})


def test_a_request_from_another_origin_is_refused_403(writer, settings):
    refused = call(writer, "tools/list", Origin="https://evil.example")
    assert refused.status_code == 403 and refused.json()["error"] == "forbidden"
    assert "evil.example" in refused.json()["detail"]
    assert call(writer, "tools/list").status_code == 200  # an agent's client sends none
    assert call(writer, "tools/list", Origin="http://testserver").status_code == 200  # this server's own
    settings.SPACES_MCP_ALLOWED_ORIGINS = ["https://client.example"]
    assert call(writer, "tools/list", Origin="https://client.example").status_code == 200
    assert call(writer, "tools/list", Origin="https://client.example.evil").status_code == 403


def test_an_unknown_prompt_is_invalid_params_and_logs_nothing(writer, caplog):
    with caplog.at_level("DEBUG"):
        answer = call(writer, "prompts/get", {"name": "nope"})
    assert answer.status_code == 200, answer.content
    error = json.loads(answer.content)["error"]
    assert error["code"] == -32602 and "nope" in error["message"]
    assert "Traceback" not in caplog.text and not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


@pytest.mark.parametrize("method, path", [("post", "/mcp/"), ("get", "/mcp/"), ("post", "/mcp/tools"),
                                          ("get", "/mcp/x/y")])
def test_every_path_under_mcp_answers_json(writer, anonymous, method, path):
    for client in (writer.api, anonymous):
        response = getattr(client, method)(path)
        assert response.status_code == 404 and response["Content-Type"].startswith("application/problem+json")
        assert "/mcp" in response.json()["detail"]


@pytest.mark.parametrize("key", [None, "sk_notakey_0000"])
def test_a_call_without_a_valid_key_points_at_the_resource_metadata(anonymous, key):
    """SPEC §23, RFC 9728 §5.1: a 401 names where the resource's metadata is."""
    headers = {**MCP_HEADERS, **({"Authorization": f"Bearer {key}"} if key else {})}
    refused = anonymous.post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"] == \
        'Bearer resource_metadata="http://testserver/.well-known/oauth-protected-resource/mcp"'


@pytest.mark.parametrize("path", ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"])
def test_the_protected_resource_metadata_says_how_to_authenticate(anonymous, path):
    """RFC 9728 §3: the resource is /mcp, its bearer token goes in the Authorization header, and
    no authorization server is named (the token is a member's API key)."""
    metadata = anonymous.get(path)
    assert metadata.status_code == 200 and metadata["Content-Type"] == "application/json"
    document = metadata.json()
    assert document["resource"] == "http://testserver/mcp" and document["bearer_methods_supported"] == ["header"]
    assert "authorization_servers" not in document
    assert anonymous.post(path, {}).status_code == 405
