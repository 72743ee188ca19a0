"""A webhook receiver on 127.0.0.1 for the tests: records what arrives and answers as told."""
from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    headers: dict[str, str]
    body: str
    at: float


@dataclass
class Receiver:
    """``answers``: status codes to answer in turn (then ``default``); ``delay``: seconds to wait
    before answering."""

    answers: deque = field(default_factory=deque)
    default: int = 200
    delay: float = 0.0
    received: list[Received] = field(default_factory=list)
    answered: int = 0

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                receiver.received.append(Received({k.lower(): v for k, v in self.headers.items()}, body,
                                                  time.monotonic()))
                time.sleep(receiver.delay)
                status = receiver.answers.popleft() if receiver.answers else receiver.default
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(b"x" * 3000 if status == 500 else b"ok")
                receiver.answered += 1

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, count: int, seconds: float = 10.0) -> list[Received]:
        ends = time.monotonic() + seconds
        while len(self.received) < count and time.monotonic() < ends:
            time.sleep(0.01)
        return self.received

    def wait_answered(self, count: int, seconds: float = 10.0) -> int:
        """How many requests were answered once ``count`` were, or ``seconds`` passed."""
        ends = time.monotonic() + seconds
        while self.answered < count and time.monotonic() < ends:
            time.sleep(0.01)
        return self.answered
