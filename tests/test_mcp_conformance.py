"""SPEC §23: the official MCP conformance suite (``@modelcontextprotocol/conformance``, pinned)
against real gunicorn workers. Every server scenario the suite lists is named here: those that
apply to what this server declares must pass; the others are listed with why they do not apply,
so a scenario added by a new version of the suite fails this test until it is placed.

The suite runs on Node.js 22 and connects with no ``Authorization`` header, which ``/mcp``
answers ``401`` by design (a bearer-protected resource server, RFC 9728). So the test installs
Node.js 22 from the npm registry (the ``node-linux-*`` package carries the binary) beside the
suite, and puts a forwarder in front of the server that adds a member's key to each request and
changes nothing else (the Host and Origin the suite sends reach the server as sent).
"""
from __future__ import annotations

import http.server
import json
import platform
import shutil
import socketserver
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

from tests.conftest import load_agent_lab
from tests.factories import member_with_key
from tests.live_server import free_port, gunicorn

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parent.parent
SUITE = "@modelcontextprotocol/conformance@0.1.16"
NODE = "22.23.5"
CACHE = ROOT / ".cache" / "mcp-conformance"

APPLIES = {
    "server-initialize": "the handshake (2025-11-25), naming the server",
    "ping": "ping answers an empty result",
    "tools-list": "the tools a key's role may call, with their schemas",
    "tools-call-error": "an unknown tool is an error result (isError), not a protocol error",
    "resources-list": "no resources: an empty list",
    "prompts-list": "no prompts: an empty list",
    "dns-rebinding-protection": "another site's Origin is refused 403; the server's own is served",
}
DOES_NOT_APPLY = {
    **{name: "calls the suite's reference tool of that name, which a Spaces server does not have (its answer "
             "is the unknown-tool error result)" for name in (
        "tools-call-simple-text", "tools-call-image", "tools-call-audio", "tools-call-embedded-resource",
        "tools-call-mixed-content", "tools-call-with-logging", "tools-call-with-progress", "tools-call-sampling",
        "tools-call-elicitation", "elicitation-sep1034-defaults", "elicitation-sep1330-enums",
        "json-schema-2020-12")},
    "logging-set-level": "the server declares no logging capability (it logs to its operator, not to clients)",
    "completion-complete": "the server declares no completions capability (no prompts or resource templates)",
    "server-sse-polling": "the server answers JSON, statelessly: it opens no SSE stream to resume",
    "server-sse-multiple-streams": "the server answers JSON, statelessly: it opens no SSE stream",
    **{name: "the server declares no resources" for name in (
        "resources-read-text", "resources-read-binary", "resources-templates-read", "resources-subscribe",
        "resources-unsubscribe")},
    **{name: "the server declares no prompts" for name in (
        "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image")},
}


def installed() -> tuple[Path, Path]:
    """Node.js 22 and the pinned suite, installed once into the checkout's cache: (node, suite's cli)."""
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    assert platform.system() == "Linux" and arch, f"no Node.js package for {platform.system()} {platform.machine()}"
    node = CACHE / "node_modules" / f"node-linux-{arch}" / "bin" / "node"
    cli = CACHE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    if not (node.exists() and cli.exists()):
        npm = shutil.which("npm")
        assert npm, "npm is needed to install the conformance suite"
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run([npm, "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", "--no-save",
                        "--loglevel=error", SUITE, f"node-linux-{arch}@{NODE}"], check=True, timeout=600)
    return node, cli


def forwarder(target: str, key: str) -> Iterator[str]:
    """A local HTTP forwarder to ``target`` that adds ``Authorization: Bearer key``."""

    class Forward(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("content-length", "connection")}
            headers["Authorization"] = f"Bearer {key}"
            request = urllib.request.Request(target + self.path, data=body, method=self.command, headers=headers)
            try:
                response = urllib.request.urlopen(request, timeout=60)
            except urllib.error.HTTPError as error:
                response = error
            data = response.read()
            self.send_response(response.status)
            for name, value in response.headers.items():
                if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = do_OPTIONS = forward

        def log_message(self, *args) -> None:
            pass

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    server = Server(("127.0.0.1", free_port()), Forward)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_every_scenario_of_the_suite_is_placed_and_those_that_apply_pass(tmp_path):
    node, cli = installed()
    listed = subprocess.run([str(node), str(cli), "list", "--server"], capture_output=True, text=True, timeout=60,
                            check=True).stdout
    scenarios = {line.strip()[2:].split(" ")[0] for line in listed.splitlines() if line.strip().startswith("- ")}
    assert scenarios == set(APPLIES) | set(DOES_NOT_APPLY) and not set(APPLIES) & set(DOES_NOT_APPLY)

    space = load_agent_lab()
    _, key = member_with_key(space, "writer", "conformance")
    failed = {}
    with gunicorn(workers=2) as base:
        forwarding = forwarder(base, key)
        url = next(forwarding)
        try:
            for scenario in sorted(APPLIES):
                out = tmp_path / scenario
                run = subprocess.run([str(node), str(cli), "server", "--url", f"{url}/mcp", "--scenario", scenario,
                                      "-o", str(out)], capture_output=True, text=True, timeout=120)
                checks = [check for path in out.rglob("checks.json") for check in json.loads(path.read_text())]
                bad = [check for check in checks if check["status"] not in ("SUCCESS", "INFO")]
                if run.returncode != 0 or not checks or bad:
                    failed[scenario] = bad or run.stdout[-2000:] + run.stderr[-2000:]
        finally:
            next(forwarding, None)
    assert failed == {}
