"""The client rides out a flaky server with one Idempotency-Key until its deadline: a real local
HTTP server that drops connections and answers 500 and 503 before it answers."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from spaces_client.client import SpacesClient, SpacesRefusal, SpacesUnavailable


class Flaky:
    """Answers the scripted failures in turn, then 201; records each request's Idempotency-Key."""

    def __init__(self, script: list[str]):
        self.script, self.keys = list(script), []
        flaky = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                flaky.keys.append(self.headers.get("Idempotency-Key"))
                step = flaky.script.pop(0) if flaky.script else "201"
                if step == "drop":
                    self.connection.close()  # no answer at all
                    return
                status = int(step)
                body = {"id": 1, "number": 1, "status": "open"} if status == 201 else {
                    "error": "server_error" if status >= 500 else "invalid_request", "detail": "x",
                    **({"fields": {"title": ["Too long."]}} if status == 422 else {})}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 503:
                    self.send_header("Retry-After", "1")
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/spaces/agent-lab"

    def close(self):
        self.server.shutdown()


@pytest.fixture
def flaky():
    servers = []

    def make(script):
        servers.append(Flaky(script))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def test_it_retries_drops_500s_and_503s_with_one_key_and_honours_retry_after(flaky):
    server = flaky(["drop", "500", "503", "201"])
    started = time.monotonic()
    assert SpacesClient(server.url, "sk_x", deadline=30).create_task("Retry policy")["number"] == 1
    assert len(server.keys) == 4 and len(set(server.keys)) == 1  # one Idempotency-Key across every try
    assert time.monotonic() - started >= 1.0  # the 503's Retry-After: 1


def test_it_gives_up_at_its_deadline_not_after_a_count_of_tries(flaky):
    server = flaky(["500"] * 1000)
    started = time.monotonic()
    with pytest.raises(SpacesUnavailable, match="within 2 s"):
        SpacesClient(server.url, "sk_x", deadline=2).create_task("Retry policy")
    assert 1.0 <= time.monotonic() - started <= 3.0 and len(server.keys) >= 3  # backing off 0.2, 0.4, 0.8 s…


def test_a_refusal_is_not_retried_and_the_cli_prints_its_fields(flaky, capsys, monkeypatch):
    from spaces_client import cli

    server = flaky(["422"])
    with pytest.raises(SpacesRefusal):
        SpacesClient(server.url, "sk_x").create_task("x")
    assert len(server.keys) == 1
    server.script = ["422"]
    monkeypatch.setenv("SPACES_URL", server.url)
    monkeypatch.setenv("SPACES_KEY", "sk_x")
    assert cli.main(["create", "x"]) == 1
    assert "title: Too long." in capsys.readouterr().out


def test_the_cli_keeps_a_multi_line_title_on_one_line():
    from spaces_client.cli import describe_task

    line = describe_task({"id": 3, "status": "open", "cycle": 1, "title": "first\nsecond"})
    assert "\n" not in line and "first ⏎ second" in line
