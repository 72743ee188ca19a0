"""A small Python client for the Spaces API that makes retries safe (no Django import).

Every mutating call sends one ``Idempotency-Key`` and reuses it on each retry of a
transient failure (connection errors, any ``5xx``, ``429``, ``409 conflict_key_reserved``,
``409 idempotency_in_progress``), waiting as the answer says (``Retry-After``,
``retry_after_ms``) until a deadline (60 s by default), so a retried create is never a
second task and a blip of the server is ridden out. Refusals raise ``SpacesRefusal``
carrying the service's JSON body.

    client = SpacesClient("http://127.0.0.1:8000/v1/spaces/agent-lab", key)
    task = client.create_task("Build a benchmark for code review agents")
"""
from __future__ import annotations

import time
import uuid
from typing import Any
from urllib.parse import urlsplit

import httpx

RETRYABLE_CODES = {"conflict_key_reserved", "idempotency_in_progress"}
DEFAULT_DEADLINE = 60.0


class SpacesRefusal(Exception):
    """The service refused: ``status`` and ``body`` are its answer (SPEC §3)."""

    def __init__(self, status: int, body: dict[str, Any]):
        self.status, self.body = status, body
        super().__init__(f"{status} {body.get('code') or body.get('error')}: {body.get('detail', '')}")


class SpacesUnavailable(Exception):
    """No answer before the deadline (connection failures or transient refusals)."""


class SpacesClient:
    def __init__(self, space_url: str, key: str, *, deadline: float = DEFAULT_DEADLINE, timeout: float = 10.0,
                 transport: httpx.BaseTransport | None = None):
        parts = urlsplit(space_url.rstrip("/"))
        if "/v1/spaces/" not in parts.path:
            raise ValueError("the space URL looks like http://host:8000/v1/spaces/<slug>")
        self.space_path = parts.path
        self.deadline = max(0.0, deadline)
        self.http = httpx.Client(base_url=f"{parts.scheme}://{parts.netloc}", timeout=timeout, transport=transport,
                                 headers={"Authorization": f"Bearer {key}", "Accept": "application/json"})

    # --- transport ------------------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, *, params: dict | None = None) -> Any:
        """One logical call; POSTs carry one Idempotency-Key across all of their tries, which go on
        while the failure is transient and the deadline allows."""
        headers = {"Idempotency-Key": str(uuid.uuid4())} if method == "POST" else {}
        ends = time.monotonic() + self.deadline
        attempt = 0
        while True:
            try:
                response = self.http.request(method, path, json=body, params=params, headers=headers)
            except httpx.TransportError as exc:
                last_error, wait = f"{type(exc).__name__}: {exc}", backoff(attempt)
            else:
                if response.status_code < 400:
                    return response.json() if response.content else None
                answer = parse(response)
                if not retryable(response.status_code, answer):
                    raise SpacesRefusal(response.status_code, answer)
                last_error = f"{response.status_code} {answer.get('code') or answer.get('error')}"
                wait = wait_for(response, answer, attempt)
            attempt += 1
            if time.monotonic() + wait > ends:
                raise SpacesUnavailable(f"no answer within {self.deadline:g} s after {attempt} tries ({last_error})")
            time.sleep(wait)

    def space(self, suffix: str = "") -> str:
        return self.space_path + suffix

    # --- the calls agents make --------------------------------------------------------------

    def info(self) -> dict:
        return self.request("GET", self.space())

    def bind(self, title: str, **extra: Any) -> dict:
        return self.request("POST", self.space("/bind"), {"title": title, **extra})

    def create_task(self, title: str, **extra: Any) -> dict:
        return self.request("POST", self.space("/tasks"), {"title": title, **extra})

    def tasks(self, **filters: Any) -> dict:
        return self.request("GET", self.space("/tasks"), params=filters)

    def task(self, number: int) -> dict:
        return self.request("GET", self.space(f"/tasks/{number}"))

    def next(self, *, number: int | None = None, join: bool = False, kind: str | None = None) -> dict:
        body: dict[str, Any] = {}
        if number is not None:
            body.update(number=number, join=join)
        if kind:
            body["kind"] = kind
        return self.request("POST", self.space("/next"), body)

    def give_back(self, number: int) -> dict:
        return self.request("POST", self.space(f"/tasks/{number}/give-back"), {})

    def post(self, body: str, title: str = "") -> dict:
        return self.request("POST", self.space("/posts"), {"title": title, "body": body})

    def done(self, number: int, post: int) -> dict:
        return self.request("POST", self.space(f"/tasks/{number}/done"), {"post": post})

    def confirm(self, number: int, attempt: int) -> dict:
        return self.request("POST", self.space(f"/tasks/{number}/attempts/{attempt}/confirm"), {})

    def reject(self, number: int, attempt: int, reason: str = "") -> dict:
        return self.request("POST", self.space(f"/tasks/{number}/attempts/{attempt}/reject"), {"reason": reason})

    def note(self, number: int, body: str, criterion: int | None = None) -> dict:
        return self.request("POST", self.space(f"/tasks/{number}/notes"), {"body": body, "criterion": criterion})

    def notifications(self, *, unread: bool = False) -> dict:
        return self.request("GET", "/v1/notifications", params={"unread": "true"} if unread else None)


def parse(response: httpx.Response) -> dict:
    try:
        body = response.json()
    except ValueError:
        body = None
    return body if isinstance(body, dict) else {"error": f"http_{response.status_code}", "detail": response.text[:200]}


def retryable(status: int, body: dict) -> bool:
    """What a retry with the same Idempotency-Key may change: a server error, a rate limit, or
    another request of the same work still under way (SPEC §7.1)."""
    return status >= 500 or status == 429 or body.get("code", body.get("error")) in RETRYABLE_CODES


def backoff(attempt: int) -> float:
    return min(0.2 * (2**attempt), 5.0)


def wait_for(response: httpx.Response, body: dict, attempt: int) -> float:
    if isinstance(body.get("retry_after_ms"), int):
        return min(body["retry_after_ms"] / 1000, 10.0)
    try:
        return min(float(response.headers.get("Retry-After", "")), 10.0)
    except ValueError:
        return backoff(attempt)
