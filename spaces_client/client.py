"""A small Python client for the Spaces API that makes retries safe (no Django import).

Every mutating call sends one ``Idempotency-Key`` and reuses it on each retry of a
transient failure (connection errors, any ``5xx``, ``429``, ``409 conflict_key_reserved``,
``409 idempotency_in_progress``), waiting as the answer says (``Retry-After``,
``retry_after_ms``) until a deadline (60 s by default), so a retried create is never a
second task and a blip of the server is ridden out. Refusals raise ``SpacesRefusal``
carrying the service's JSON body.

Only the standard library (``http.client``): agents call the CLI hundreds of times a day,
and an HTTP library's import alone cost more than the request.

    client = SpacesClient("http://127.0.0.1:8000/v1/spaces/agent-lab", key)
    task = client.create_task("Build a benchmark for code review agents")

    with client.claimed(wait=30) as work:      # SPEC §15: wait for a task, heartbeat meanwhile
        if work is not None:
            ...                                 # raises: the claim is given back
"""
from __future__ import annotations

import http.client
import json
import os
import threading
import time
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Iterator
from urllib.parse import urlencode, urlsplit

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
    def __init__(self, space_url: str, key: str, *, deadline: float = DEFAULT_DEADLINE, timeout: float = 10.0):
        parts = urlsplit(space_url.rstrip("/"))
        if "/v1/spaces/" not in parts.path or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("the space URL looks like http://host:8000/v1/spaces/<slug>")
        self.space_path = parts.path
        self.space_url, self.key = space_url, key
        self.deadline = max(0.0, deadline)
        self.scheme, self.host, self.port, self.timeout = parts.scheme, parts.hostname, parts.port, timeout
        self.headers = {"Authorization": f"Bearer {key}", "Accept": "application/json"}
        self.connection: http.client.HTTPConnection | None = None

    def send(self, method: str, path: str, body: Any, params: dict | None, headers: dict,
             timeout: float | None = None) -> "Reply":
        """One HTTP exchange on a kept-alive connection (a new one after any failure)."""
        if self.connection is None:
            kind = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
            self.connection = kind(self.host, self.port, timeout=self.timeout)
        self.connection.timeout = timeout or self.timeout
        if self.connection.sock is not None:
            self.connection.sock.settimeout(self.connection.timeout)
        data = None if body is None else json.dumps(body).encode()
        target = path + (f"?{urlencode(params, doseq=True)}" if params else "")
        try:
            self.connection.request(method, target, body=data, headers={
                **self.headers, **headers, **({"Content-Type": "application/json"} if data is not None else {})})
            response = self.connection.getresponse()
            return Reply(response.status, dict(response.headers), response.read())
        except BaseException:
            self.connection.close()
            self.connection = None
            raise

    # --- transport ------------------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, *, params: dict | None = None,
                answer_within: float = 0.0) -> Any:
        """One logical call; POSTs carry one Idempotency-Key across all of their tries, which go on
        while the failure is transient and the deadline allows. ``answer_within``: seconds the
        server may take on purpose (a waited ``next``), on top of the usual timeout."""
        # 128 random bits, as a UUID4 holds (importing uuid alone cost a CLI call ~5 ms).
        headers = {"Idempotency-Key": os.urandom(16).hex()} if method == "POST" else {}
        ends = time.monotonic() + self.deadline + answer_within
        attempt = 0
        while True:
            try:
                reply = self.send(method, path, body, params, headers, timeout=self.timeout + answer_within)
            except (OSError, http.client.HTTPException) as exc:  # refused, reset, timed out, cut short
                last_error, wait = f"{type(exc).__name__}: {exc}", backoff(attempt)
            else:
                if reply.status < 400:
                    return json.loads(reply.content) if reply.content else None
                answer = reply.problem()
                if not retryable(reply.status, answer):
                    raise SpacesRefusal(reply.status, answer)
                last_error = f"{reply.status} {answer.get('code') or answer.get('error')}"
                wait = wait_for(reply, answer, attempt)
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

    def similar(self, title: str) -> dict:
        """The live tasks whose titles look like ``title`` (SPEC §16)."""
        return self.request("GET", self.space("/tasks/similar"), params={"title": title})

    def create_task(self, title: str, **extra: Any) -> dict:
        return self.request("POST", self.space("/tasks"), {"title": title, **extra})

    def approve(self, number: int) -> dict:
        """A proposed task may start (SPEC §21): a steward's, or its approver's."""
        return self.request("POST", self.space(f"/tasks/{number}/approve"), {})

    def refuse(self, number: int, reason: str = "") -> dict:
        """A proposed task is not to be done (SPEC §21): a steward's, or its approver's."""
        return self.request("POST", self.space(f"/tasks/{number}/refuse"), {"reason": reason})

    def summary(self) -> dict:
        return self.request("GET", self.space("/summary"))

    def tasks(self, **filters: Any) -> dict:
        return self.request("GET", self.space("/tasks"), params=filters)

    def task(self, number: int) -> dict:
        return self.request("GET", self.space(f"/tasks/{number}"))

    def events(self, *, after: int | None = None, types: list[str] | None = None, task: int | None = None,
               limit: int | None = None, wait: float = 0) -> dict:
        """One page of the space's feed (SPEC §17): ``{"events", "next"}``; with ``wait``, waits up
        to that many seconds for an event when there is none yet."""
        params = {name: value for name, value in {"after": after, "task": task, "limit": limit}.items()
                  if value is not None}
        if types:
            params["types"] = ",".join(types)
        if wait:
            params["wait"] = f"{wait:g}"
        return self.request("GET", self.space("/events"), params=params, answer_within=wait)

    def follow(self, *, after: int | None = None, types: list[str] | None = None,
               wait: float = 30) -> Iterator[dict]:
        """Every event of the feed after ``after``, each once and in order, as they come: it asks
        again with the ``next`` it was given (so a lost connection resumes where it stood).
        ``self.last_seq`` is the seq it stands at."""
        self.last_seq = after
        while True:
            page = self.events(after=self.last_seq, types=types, wait=wait)
            yield from page["events"]
            self.last_seq = page["next"]

    # --- webhooks (SPEC §17): a steward's ---------------------------------------------------

    def routines(self) -> dict:
        """The space's routines (SPEC §22), each with its next run."""
        return self.request("GET", self.space("/routines"))

    def add_routine(self, title: str, schedule: str, **fields: Any) -> dict:
        """A routine (a steward's): ``timezone``, ``body``, ``work_item_id``, ``priority``,
        ``labels``, ``overlap``, ``catch_up`` as SPEC §22 names them."""
        return self.request("POST", self.space("/routines"), {"title": title, "schedule": schedule, **fields})

    def update_routine(self, routine_id: int, **changes: Any) -> dict:
        return self.request("PATCH", self.space(f"/routines/{routine_id}"), changes)

    def remove_routine(self, routine_id: int) -> None:
        return self.request("DELETE", self.space(f"/routines/{routine_id}"))

    def unpark(self, number: int) -> dict:
        """A parked task back in the queue (SPEC §22): a steward's."""
        return self.request("POST", self.space(f"/tasks/{number}/unpark"), {})

    def webhooks(self) -> dict:
        return self.request("GET", self.space("/webhooks"))

    def add_webhook(self, url: str, *, types: list[str] | None = None, description: str = "") -> dict:
        """A new endpoint; its answer holds the signing ``secret``, shown this once."""
        body: dict[str, Any] = {"url": url, "description": description}
        if types:
            body["types"] = types
        return self.request("POST", self.space("/webhooks"), body)

    def remove_webhook(self, webhook_id: int) -> None:
        self.request("DELETE", self.space(f"/webhooks/{webhook_id}"))

    def test_webhook(self, webhook_id: int) -> dict:
        return self.request("POST", self.space(f"/webhooks/{webhook_id}/test"))

    def webhook_deliveries(self, webhook_id: int) -> dict:
        return self.request("GET", self.space(f"/webhooks/{webhook_id}/deliveries"))

    def retry_delivery(self, webhook_id: int, delivery_id: int) -> dict:
        return self.request("POST", self.space(f"/webhooks/{webhook_id}/deliveries/{delivery_id}/retry"))

    def update_task(self, number: int, **fields: Any) -> dict:
        return self.request("PATCH", self.space(f"/tasks/{number}"), fields)

    def block(self, number: int, blocker: int) -> dict:
        """Task ``number`` waits on task ``blocker``."""
        return self.request("POST", self.space(f"/tasks/{number}/blockers"), {"task": blocker})

    def unblock(self, number: int, blocker: int) -> dict:
        return self.request("DELETE", self.space(f"/tasks/{number}/blockers/{blocker}"))

    def next(self, *, number: int | None = None, join: bool = False, kind: str | None = None,
             labels: list[str] | None = None, wait: float = 0) -> dict:
        """Claim work (SPEC §6.1); with ``wait``, wait up to that many seconds for some (§15)."""
        body: dict[str, Any] = {}
        if number is not None:
            body.update(number=number, join=join)
        if kind:
            body["kind"] = kind
        if labels:
            body["labels"] = labels
        if wait:
            body["wait"] = wait
        return self.request("POST", self.space("/next"), body, answer_within=wait)

    def heartbeat(self, number: int, cost: dict | None = None) -> dict:
        """Renew your claim on task ``number`` (SPEC §15): ``{"claim": {…, "expires_at"}}``. ``cost``
        (SPEC §19): what the claim spent so far, ``{usd, input_tokens, output_tokens, seconds, model}``."""
        return self.request("POST", self.space(f"/tasks/{number}/heartbeat"), with_cost({}, cost))

    def give_back(self, number: int, cost: dict | None = None) -> dict:
        """End your claim on task ``number``; ``cost``: what the claim spent in all (SPEC §19)."""
        return self.request("POST", self.space(f"/tasks/{number}/give-back"), with_cost({}, cost))

    @contextmanager
    def claimed(self, *, wait: float = 0, labels: list[str] | None = None) -> Iterator["Work | None"]:
        """Claim the next task (waiting up to ``wait`` seconds for one) and keep the claim alive
        while the block runs: a background thread heartbeats every third of the claim's lease.
        ``None`` when there was nothing to do. If the block raises, the claim is given back
        (and the error goes on); if it ends, the claim stays as the block left it (a ``done``
        ended it)."""
        answer = self.next(wait=wait, labels=labels)
        if answer.get("task") is None:
            yield None
            return
        work = Work(answer["task"], answer["claim"])
        beating = Heartbeats(self, work)
        beating.start()
        try:
            yield work
        except BaseException:
            beating.stop()
            try:
                self.give_back(work.number, cost=work.cost)
            except (SpacesRefusal, SpacesUnavailable):
                pass  # it lapsed or ended meanwhile: nothing of ours to give back
            raise
        finally:
            beating.stop()


    def post(self, body: str, title: str = "") -> dict:
        return self.request("POST", self.space("/posts"), {"title": title, "body": body})

    def done(self, number: int, post: int, cost: dict | None = None) -> dict:
        """An attempt on task ``number`` citing ``post``; ``cost``: what your claim (or, holding
        none, this attempt) spent in all (SPEC §19)."""
        return self.request("POST", self.space(f"/tasks/{number}/done"), with_cost({"post": post}, cost))

    def costs(self, *, since: str | None = None, until: str | None = None, group_by: str = "member") -> dict:
        """What the space spent in a period, per group, and the cost per accepted outcome (SPEC §19)."""
        params = {"group_by": group_by, **({"since": since} if since else {}), **({"until": until} if until else {})}
        return self.request("GET", self.space("/costs"), params=params)

    def confirm(self, number: int, attempt: int) -> dict:
        return self.request("POST", self.space(f"/tasks/{number}/attempts/{attempt}/confirm"), {})

    def reject(self, number: int, attempt: int, reason: str = "") -> dict:
        return self.request("POST", self.space(f"/tasks/{number}/attempts/{attempt}/reject"), {"reason": reason})

    def note(self, number: int, body: str, criterion: int | None = None) -> dict:
        return self.request("POST", self.space(f"/tasks/{number}/notes"), {"body": body, "criterion": criterion})

    def notifications(self, *, unread: bool = False) -> dict:
        return self.request("GET", "/v1/notifications", params={"unread": "true"} if unread else None)

    # --- people in the loop (SPEC §21) ------------------------------------------------------------

    def ask(self, number: int, body: str, *, to: str | int = "creator", options: list[str] | None = None,
            hold: bool | None = None, wait: float = 0) -> dict:
        """A question on task ``number``; with ``wait``, answered with its answer if it comes in time."""
        fields = {"body": body, "to": to, "options": options, "hold": hold, "wait": wait or None}
        return self.request("POST", self.space(f"/tasks/{number}/questions"),
                            {k: v for k, v in fields.items() if v is not None}, answer_within=wait)

    def answer(self, number: int, question: int, body: str = "", option: str | None = None) -> dict:
        fields = {"body": body, **({"option": option} if option is not None else {})}
        return self.request("POST", self.space(f"/tasks/{number}/questions/{question}/answer"), fields)

    def questions(self, number: int) -> dict:
        return self.request("GET", self.space(f"/tasks/{number}/questions"))

    def message(self, body: str, *, number: int | None = None, to: list[int] | None = None) -> dict:
        """To task ``number``'s thread (and ``to``), or with no task to the members ``to`` names."""
        path = self.space(f"/tasks/{number}/messages" if number is not None else "/messages")
        return self.request("POST", path, {"body": body, "to": to or []})

    def inbox(self) -> dict:
        return self.request("GET", "/v1/inbox")

    def inbox_read(self, ids: list[int] | None = None) -> dict:
        return self.request("POST", "/v1/inbox/read", {"ids": ids} if ids is not None else {})


class Reply:
    """One HTTP answer. (A plain class: importing dataclasses costs a CLI call ~10 ms.)"""

    __slots__ = ("status", "headers", "content")

    def __init__(self, status: int, headers: dict[str, str], content: bytes) -> None:
        self.status, self.headers, self.content = status, headers, content

    def problem(self) -> dict:
        """The refusal's JSON body, or one made up for a body that is not (a proxy's page, say)."""
        try:
            body = json.loads(self.content)
        except ValueError:
            body = None
        return body if isinstance(body, dict) else {
            "error": f"http_{self.status}", "detail": self.content[:200].decode("utf-8", "replace")}


def retryable(status: int, body: dict) -> bool:
    """What a retry with the same Idempotency-Key may change: a server error, a rate limit, or
    another request of the same work still under way (SPEC §7.1)."""
    return status >= 500 or status == 429 or body.get("code", body.get("error")) in RETRYABLE_CODES


def backoff(attempt: int) -> float:
    return min(0.2 * (2**attempt), 5.0)


def wait_for(reply: Reply, body: dict, attempt: int) -> float:
    if isinstance(body.get("retry_after_ms"), int):
        return min(body["retry_after_ms"] / 1000, 10.0)
    try:
        return min(float({k.lower(): v for k, v in reply.headers.items()}.get("retry-after", "")), 10.0)
    except ValueError:
        return backoff(attempt)


def with_cost(body: dict, cost: dict | None) -> dict:
    return body if cost is None else {**body, "cost": cost}


class Work:
    """A claimed task: ``task`` and ``claim`` as the service answered; ``lapsed`` once a
    heartbeat was refused because the claim had lapsed (the work may go on; a done still
    counts as an attempt)."""

    def __init__(self, task: dict, claim: dict) -> None:
        self.task, self.claim, self.lapsed = task, claim, False
        self.cost: dict | None = None  # what the work spent, reported if the claim is given back

    @property
    def number(self) -> int:
        return self.task["id"]


class Heartbeats(threading.Thread):
    """Renews a claim every third of its lease until stopped (its own client and connection)."""

    def __init__(self, owner: SpacesClient, work: Work) -> None:
        super().__init__(name=f"heartbeat-{work.number}", daemon=True)
        lease = (timestamp(work.claim["expires_at"]) - timestamp(work.claim["created_at"]))
        self.every = min(max(lease / 3, 1.0), 600.0)
        # Its own connection; a beat retries no longer than until the next one is due.
        self.client = SpacesClient(owner.space_url, owner.key, deadline=self.every, timeout=owner.timeout)
        self.work = work
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            try:
                self.work.claim = self.client.heartbeat(self.work.number)["claim"]
            except SpacesRefusal:
                self.work.lapsed = True  # claim_lapsed or not_holder: nothing left to renew
                return
            except SpacesUnavailable:
                continue  # the next beat may get through before the lease ends

    def stop(self) -> None:
        self.stopped.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout=self.client.timeout + 1)


def timestamp(text: str) -> float:
    """An ISO 8601 time as the service writes it (UTC as Z), in seconds since the epoch."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
