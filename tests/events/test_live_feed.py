"""The feed through real gunicorn workers (gunicorn.conf.py): a stream gets each event as its
transaction commits, resumes after Last-Event-ID across a server restart, and a server told to
stop ends its streams and waited reads at once instead of holding its exit up."""
from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlsplit

import httpx
import pytest

from tests.conftest import load_agent_lab
from tests.factories import create_task, member_with_key
from tests.live_server import gunicorn_process

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
S = "/v1/spaces/agent-lab"


def open_stream(base: str, key: str, last_event_id: int | None = None) -> socket.socket:
    parts = urlsplit(base)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    resume = f"Last-Event-ID: {last_event_id}\r\n" if last_event_id is not None else ""
    sock.sendall((f"GET {S}/events HTTP/1.1\r\nHost: {parts.hostname}\r\nAuthorization: Bearer {key}\r\n"
                  f"Accept: text/event-stream\r\n{resume}\r\n").encode())
    return sock


def read_events(sock: socket.socket, count: int, within: float) -> list[dict]:
    """The next ``count`` events the stream sends, as they arrive (chunked framing stripped)."""
    found: list[dict] = []
    buffer = b""
    deadline = time.monotonic() + within
    while len(found) < count and time.monotonic() < deadline:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            break
        buffer += chunk
        for line in buffer.split(b"\n")[:-1]:  # whole lines only: the last may be cut short
            if line.startswith(b"data: "):
                event = json.loads(line[len(b"data: "):])
                if event["seq"] not in [e["seq"] for e in found]:
                    found.append(event)
    return found[:count]


def test_a_stream_through_gunicorn_gets_events_as_they_commit_and_resumes_across_a_restart():
    space = load_agent_lab()
    steward, key = member_with_key(space, "steward", "watcher")
    with gunicorn_process(workers=2) as (base, _):
        start = httpx.get(f"{base}{S}/events", headers={"Authorization": f"Bearer {key}"}).json()["next"]
        stream = open_stream(base, key, last_event_id=start)
        time.sleep(0.3)
        create_task(space=space, actor=steward, title="Streamed as it commits")
        committed = time.monotonic()
        [first] = read_events(stream, 1, within=5)
        assert time.monotonic() - committed < 1.5
        assert (first["type"], first["seq"]) == ("task.created", start + 1)
        stream.close()
    create_task(space=space, actor=steward, title="Made while no server ran")
    with gunicorn_process(workers=1) as (base, master):
        stream = open_stream(base, key, last_event_id=first["seq"])
        [missed] = read_events(stream, 1, within=5)
        assert missed["seq"] == first["seq"] + 1 and missed["type"] == "task.created"
        began = time.monotonic()
        master.terminate()  # graceful: streams and waits end now
        master.wait(20)
        assert time.monotonic() - began < 10
        stream.close()
