"""Agents waiting for work (SPEC §15): the waiters of this server process and their listener.

A waited ``next`` that finds nothing asks its unit to wait (``UnitOfWork.wait_for``); the
runner ends the unit (no transaction, no lock, no connection held while it waits), puts its
``Waiter`` here and runs the unit again when the waiter is woken, until its time is up.

One listener thread per process holds one connection of its own: it ``LISTEN``s on
``tasks.sql.WORK_CHANNEL`` (on ``DATABASE_LISTEN_URL`` when set, else on the database of
``DATABASE_URL``; ``DATABASE_LISTEN_URL=off`` for a transaction-mode pooler with no direct
path, where ``LISTEN`` hears nothing), and once a second while anyone waits it sends one
statement — does each kind of waiter here have work now? — which catches what a lost
notification, a dropped listener connection or a pooler would miss.

Who goes first: a notification for a space starts a *pass* over that space's waiters, longest
waiting first, one at a time: each woken waiter tries to claim, and the pass moves on when it
is done (it claimed, or it found nothing and waits again). Waiters that would ask the same
question as one that just found nothing are skipped (with no labels, nothing for anyone
asking for tasks). Each task still goes to exactly one caller whatever the timing: that is the
claim statement's (``SKIP LOCKED`` and the status it sets), not this module's. Across server
processes each runs its own pass, so the order is longest-first within a process.
"""
from __future__ import annotations

import itertools
import logging
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import psycopg
from django.conf import settings
from django.db import connection
from django.db.models.functions import Now

from common.refusals import RateLimited, ServiceUnavailable
from events import sql as events_sql
from events.sql import CHANNEL as FEED_CHANNEL
from telemetry import counters
from events.feed import Woken
from tasks.attempts import checkable_attempts
from tasks import sql
from tasks.filters import ready_queue
from tasks.models import Claim, Question, QuestionState, WaitSlot

log = logging.getLogger("spaces.waiting")

RECHECK_SECONDS = 1.0  # the lost-notification re-check: at most one statement a second
PASS_STEP_SECONDS = 2.0  # a woken waiter that has not reported back by then is passed over
RECONNECT_PAUSES = (0.1, 0.2, 0.5, 1.0, 2.0)
LISTENER_NAME = "spaces work listener"  # its application_name, as pg_stat_activity shows it
# SPEC §15 Capacity: how many requests may wait at once in this process (0: no limit). Each holds
# a thread; gunicorn.conf.py sets it below the thread count, so the requests that run always find
# one. A wait past it answers 503 at once.
WAITS_PER_PROCESS = int(os.environ.get("SPACES_WAITS_PER_PROCESS", "0") or 0)
SLOT_MARGIN_SECONDS = 30  # a key's wait slot outlives its wait by this much if its process dies
SLOT_TRIES = 3  # two waits of one key taking the same free slot at once: the loser tries the next

_arrivals = itertools.count()


@dataclass(eq=False)
class Waiter:
    """One waiting request. ``shape`` is what it asks (``("task", labels)`` or ``("check",
    member id)``); ``probe`` is that question as SQL with its parameters, for the re-check."""

    space_id: int
    shape: tuple
    probe: tuple[str, list]
    seen: int = 0  # the space's generation when it last tried (Registry.generation)
    max_waits: int = 8  # the space's max_waits_per_key
    arrival: int = field(default_factory=lambda: next(_arrivals))
    woken: threading.Event = field(default_factory=threading.Event)
    admitted: bool = False
    slot: tuple[int, str] | None = None  # (api key, token) of the wait slot it holds

    def admit(self, key_id: int | None, seconds: float) -> None:
        """Before the first wait: a place in this process (else ``503``) and one of the key's wait
        slots (else ``429``), SPEC §15 Capacity. Once: a waiter already counted passes."""
        if self.admitted:
            return
        REGISTRY.admit(self)
        if key_id is not None:
            token = take_wait_slot(space_id=self.space_id, key_id=key_id, limit=self.max_waits,
                                   hold_seconds=seconds + SLOT_MARGIN_SECONDS)
            if token is None:
                raise RateLimited(
                    f"This key already has {self.max_waits} waited requests waiting (the space's "
                    "max_waits_per_key): wait for one to end, or ask without waiting.",
                    retry_after_ms=1000, headers={"Retry-After": "1"}, max_waits_per_key=self.max_waits)
            self.slot = (key_id, token)

    def wait(self, timeout: float) -> bool:
        return REGISTRY.wait(self, timeout)

    def renew(self, other: "Waiter") -> None:
        """Tried again and found nothing: the same place in line, the generation it saw now."""
        self.seen = other.seen

    def leave(self) -> None:
        REGISTRY.leave(self)
        if self.slot is not None:
            key_id, token = self.slot
            self.slot = None
            WaitSlot.objects.filter(space_id=self.space_id, api_key_id=key_id, token=token).delete()

    def open(self) -> bool:
        """False once this process is stopping: waits end now, answering nothing."""
        return not REGISTRY.closed

    def woken_by(self) -> str | None:
        """The trace (a traceparent) of the change whose notification last woke this space's
        waiters, when traces are on (telemetry.tracing links the waited next to it)."""
        with REGISTRY.lock:
            return REGISTRY.wake_contexts.get(self.space_id)

    @property
    def targeted(self) -> bool:
        """A waiter for one row (a waited ask's question), which a space's pass leaves out: the
        listener wakes it when its own probe finds the row changed."""
        return self.shape[0] == "answer"

    def covers(self, failed: set[tuple]) -> bool:
        """Would this waiter's question find nothing, given the shapes that just did?"""
        if self.shape in failed:
            return True
        return self.shape[0] == "task" and ("task", ()) in failed  # no labels found nothing: nor will labels


@dataclass(eq=False)
class FeedWaiter:
    """A request waiting on a space's feed for an event after ``after`` (SPEC §17): woken, with
    every other such waiter of the space at once, by any event of the space."""

    space_id: int
    after: int
    woken: threading.Event = field(default_factory=threading.Event)


class Space:
    """The waiters of one space in this process, and its pass."""

    def __init__(self) -> None:
        self.waiting: dict[Waiter, None] = {}  # insertion order: longest waiting first
        self.pass_order: list[Waiter] = []
        self.failed: set[tuple] = set()
        self.current: Waiter | None = None
        self.current_since = 0.0
        self.again = False


class Registry:
    """This process's waiters, by space; one lock for all of it (operations are tiny)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spaces: dict[int, Space] = {}
        self.generations: dict[int, int] = {}
        self.closed = False
        self.admitted = 0  # waits counted in (admit), until they leave
        # Set by the server (gunicorn.conf.py): False once the process should stop serving.
        self.serving: Callable[[], bool] | None = None
        self.listener: Listener | None = None
        self.listener_pid = 0
        self.feed_waiters: dict[int, set[FeedWaiter]] = {}  # by space
        self.feed_watchers: set[threading.Event] = set()
        self.wake_contexts: dict[int, str] = {}  # by space: the trace of the last change that woke it  # set on any space's event (the delivery worker)
        # Spaces notified while a waited ask waits there: the listener asks at once whose question
        # closed (TARGETED waiters join no pass: each waits for one row, not for work).
        self.targets_due: set[int] = set()

    # --- what the runner calls ---------------------------------------------------------------

    def generation(self, space_id: int) -> int:
        """How many notifications this process heard for the space: a waiter notes it before it
        tries, so one heard between its try and its wait is not lost on it."""
        with self.lock:
            return self.generations.get(space_id, 0)

    def wait(self, waiter: Waiter, timeout: float) -> bool:
        """Block until ``waiter`` is woken or ``timeout`` passes; True when woken (or when work
        was announced since it tried). The caller then tries again and calls ``wait`` again
        (it found nothing) or ``leave``."""
        self.ensure_listener()
        with self.lock:
            if self.closed:
                return False
            waiter.woken.clear()
            space = self.spaces.setdefault(waiter.space_id, Space())
            if waiter in space.waiting:  # woken, tried, found nothing: back in its place
                if space.current is waiter:
                    space.failed.add(waiter.shape)
                    self._advance(space)
            else:
                space.waiting[waiter] = None  # the newest: last in line
            if self.generations.get(waiter.space_id, 0) != waiter.seen:
                return True  # work was announced while it tried: try again now
        return waiter.woken.wait(timeout)

    def admit(self, waiter: Waiter) -> None:
        """Count ``waiter`` among this process's waits, unless the process holds all it may."""
        with self.lock:
            if WAITS_PER_PROCESS and self.admitted >= WAITS_PER_PROCESS:
                raise ServiceUnavailable(
                    f"This server holds as many waiting requests as it may ({WAITS_PER_PROCESS}): retry "
                    "after Retry-After seconds, or ask without waiting.")
            self.admitted += 1
            waiter.admitted = True
        counters.WAITS.inc()

    def leave(self, waiter: Waiter) -> None:
        """The waiter is done (it claimed something, or its time is up, or its request failed)."""
        with self.lock:
            if waiter.admitted:
                waiter.admitted = False
                self.admitted -= 1
                counters.WAITS.dec()
            space = self.spaces.get(waiter.space_id)
            if space is None or waiter not in space.waiting:
                return
            del space.waiting[waiter]
            if space.current is waiter:
                self._advance(space)  # it claimed: there may be more for the next one
            if not space.waiting:
                del self.spaces[waiter.space_id]

    def close(self) -> None:
        """The process is stopping (a worker told to exit, or whose master is gone): every wait
        ends now and answers nothing, so the agents ask again, elsewhere, and the process can
        exit instead of holding their requests to the end."""
        with self.lock:
            self.closed = True
            for space in self.spaces.values():
                for waiter in space.waiting:
                    waiter.woken.set()
            for waiters in self.feed_waiters.values():
                for feed_waiter in waiters:
                    feed_waiter.woken.set()

    def wait_for_event(self, space_id: int, after: int, timeout: float) -> Woken:
        """Block until the space's feed may have an event after ``after``, or ``timeout`` passes
        (SPEC §17 ``?wait=``, a stream's pause): one of this process's waits (``503`` past
        them), holding no connection (the caller closed it) and no running slot; how it ended."""
        self.ensure_listener()
        waiter = FeedWaiter(space_id, after)
        with self.lock:
            if self.closed:
                return Woken.STOPPING
            if WAITS_PER_PROCESS and self.admitted >= WAITS_PER_PROCESS:
                raise ServiceUnavailable(
                    f"This server holds as many waiting requests as it may ({WAITS_PER_PROCESS}): retry "
                    "after Retry-After seconds, or ask without waiting.")
            self.admitted += 1
            self.feed_waiters.setdefault(space_id, set()).add(waiter)
        counters.WAITS.inc()
        try:
            woken = waiter.woken.wait(timeout)
            return Woken.STOPPING if self.closed else Woken.EVENT if woken else Woken.TIMEOUT
        finally:
            counters.WAITS.dec()
            with self.lock:
                self.admitted -= 1
                waiters = self.feed_waiters.get(space_id)
                if waiters is not None:
                    waiters.discard(waiter)
                    if not waiters:
                        del self.feed_waiters[space_id]

    def watch_feeds(self, woken: threading.Event) -> None:
        """Set ``woken`` whenever any space's feed is notified (the delivery worker's wake-up;
        it reads the feeds itself, at least once a second, so a missed notice only delays)."""
        self.ensure_listener()
        with self.lock:
            self.feed_watchers.add(woken)

    def unwatch_feeds(self, woken: threading.Event) -> None:
        with self.lock:
            self.feed_watchers.discard(woken)

    # --- what the listener calls -------------------------------------------------------------

    def feed_notified(self, space_id: int, last_seq: int | None = None) -> None:
        """The space's feed has new events (up to ``last_seq``, when the re-check read it)."""
        with self.lock:
            if last_seq is None:
                for woken in self.feed_watchers:
                    woken.set()
            for waiter in self.feed_waiters.get(space_id, ()):
                if last_seq is None or waiter.after < last_seq:
                    waiter.woken.set()

    def feed_spaces(self) -> list[int]:
        with self.lock:
            return list(self.feed_waiters)

    def notified(self, space_id: int, shapes: set[tuple] | None = None, context: str | None = None) -> None:
        """Work may be ready in this space (for these shapes only, when the re-check says so);
        ``context``: the trace of the change that made it ready, when traces are on."""
        with self.lock:
            if context:
                self.wake_contexts[space_id] = context
            if shapes is None:
                self.generations[space_id] = self.generations.get(space_id, 0) + 1
            space = self.spaces.get(space_id)
            if space is None:
                return
            if shapes is None and any(waiter.targeted for waiter in space.waiting):
                self.targets_due.add(space_id)
            if shapes is not None:  # a targeted waiter whose row changed is woken at once, pass or no pass
                for waiter in space.waiting:
                    if waiter.targeted and waiter.shape in shapes:
                        waiter.woken.set()
                shapes = {shape for shape in shapes if shape[0] != "answer"}
                if not shapes:
                    return
            if space.current is not None:
                space.again = True  # finish this pass, then start over with everyone
                return
            self._start(space, shapes)

    def take_target_probes(self) -> list[tuple[int, tuple, tuple[str, list]]]:
        """One (space, shape, probe) for each targeted waiter of the spaces notified since the last
        call: the listener runs them at once, so an answer wakes its asker alone."""
        with self.lock:
            due, self.targets_due = self.targets_due, set()
            return [(space_id, waiter.shape, waiter.probe) for space_id in due
                    for waiter in self.spaces.get(space_id, Space()).waiting if waiter.targeted]

    def probes(self) -> list[tuple[int, tuple, tuple[str, list]]]:
        """One (space, shape, probe) for each kind of waiter waiting here."""
        with self.lock:
            seen: dict[tuple[int, tuple], tuple[str, list]] = {}
            for space_id, space in self.spaces.items():
                for waiter in space.waiting:
                    seen.setdefault((space_id, waiter.shape), waiter.probe)
            return [(space_id, shape, probe) for (space_id, shape), probe in seen.items()]

    def nudge_stalled(self) -> None:
        """A woken waiter whose request went quiet must not hold its space's pass up."""
        now = time.monotonic()
        with self.lock:
            for space in self.spaces.values():
                if space.current is not None and now - space.current_since > PASS_STEP_SECONDS:
                    self._advance(space)

    def waiting_count(self) -> int:
        with self.lock:
            return sum(len(space.waiting) for space in self.spaces.values())

    # --- the pass ----------------------------------------------------------------------------

    def _start(self, space: Space, shapes: set[tuple] | None) -> None:
        space.pass_order = [w for w in space.waiting if (w.shape in shapes if shapes is not None else not w.targeted)]
        space.failed, space.again = set(), False
        self._advance(space, first=True)

    def _advance(self, space: Space, first: bool = False) -> None:
        if not first:
            space.current = None
        while space.pass_order:
            waiter = space.pass_order.pop(0)
            if waiter in space.waiting and not waiter.covers(space.failed):
                space.current, space.current_since = waiter, time.monotonic()
                waiter.woken.set()
                return
        space.current = None
        if space.again:
            self._start(space, None)

    # --- the listener ------------------------------------------------------------------------

    def ensure_listener(self) -> None:
        """One listener thread per process, started by the first waiter (after a fork too)."""
        with self.lock:
            if self.listener is not None and self.listener_pid == os.getpid() and self.listener.is_alive():
                return
            self.listener = Listener(self)
            self.listener_pid = os.getpid()
            self.listener.start()

    def stop_listener(self, timeout: float = 5.0) -> None:
        """Stop this process's listener and close its connection (a test database is dropped
        after the suite; a server process just exits)."""
        with self.lock:
            listener, self.listener = self.listener, None
        if listener is not None and listener.is_alive():
            listener.stopping.set()
            listener.join(timeout)


def listen_conninfo() -> tuple[str | dict, bool]:
    """Where the listener connects, and whether it LISTENs there (SPEC §15)."""
    url = os.environ.get("DATABASE_LISTEN_URL", "").strip()
    if url.lower() == "off":
        database = settings.DATABASES["default"]
        return direct_params(database), False
    if url:
        return url, True
    return direct_params(settings.DATABASES["default"]), True


def direct_params(database: dict) -> dict:
    params = {"dbname": database["NAME"], "user": database.get("USER") or None,
              "password": database.get("PASSWORD") or None, "host": database.get("HOST") or None,
              "port": database.get("PORT") or None}
    return {k: v for k, v in params.items() if v is not None}


class Listener(threading.Thread):
    """Hears ``NOTIFY spaces_work`` and runs the once-a-second re-check; reconnects when its
    connection goes (a terminated backend, a database restart) and re-checks at once then."""

    def __init__(self, registry: Registry) -> None:
        super().__init__(name="spaces-listener", daemon=True)
        self.registry = registry
        self.connects = 0
        self.connected = threading.Event()
        self.stopping = threading.Event()

    def run(self) -> None:
        failures = 0  # connection attempts in a row that failed: a connection that worked resets it
        while not self.stopping.is_set():
            try:
                self.serve()
            except (psycopg.Error, OSError) as error:
                if self.connected.is_set():
                    failures = 0  # it was connected: the first try again comes at once
                self.connected.clear()
                if self.stopping.is_set():
                    return
                pause = RECONNECT_PAUSES[min(failures, len(RECONNECT_PAUSES) - 1)]
                failures += 1
                log.warning("work listener: %s; reconnecting in %.1f s", str(error).strip() or type(error).__name__,
                            pause)
                self.stopping.wait(pause)

    def serve(self) -> None:
        conninfo, listens = listen_conninfo()
        kwargs = {"autocommit": True, "prepare_threshold": None, "application_name": LISTENER_NAME}
        conn = (psycopg.connect(conninfo, **kwargs) if isinstance(conninfo, str)
                else psycopg.connect(**conninfo, **kwargs))
        with conn:
            if listens:
                for listen in sql.LISTENS:
                    conn.execute(listen)
            self.connects += 1
            self.connected.set()
            self.recheck(conn)  # whatever was made ready while no one listened
            next_check = time.monotonic() + RECHECK_SECONDS
            while not self.stopping.is_set():
                timeout = max(0.0, next_check - time.monotonic())
                if listens:
                    for notice in conn.notifies(timeout=timeout):
                        self.heard(notice.channel, notice.payload)
                        timeout = max(0.0, next_check - time.monotonic())
                        if timeout == 0 or self.registry.targets_due:
                            break  # the connection runs no statement while it waits for notices
                    self.check_targets(conn)
                else:
                    time.sleep(timeout)
                serving = self.registry.serving
                if serving is not None and not serving():
                    self.registry.close()
                if time.monotonic() >= next_check:
                    self.registry.nudge_stalled()
                    self.recheck(conn)
                    next_check = time.monotonic() + RECHECK_SECONDS

    def heard(self, channel: str, payload: str) -> None:
        head, _, context = payload.partition(" ")  # "<space id>" or "<space id> <traceparent>"
        try:
            space_id = int(head)
        except ValueError:
            return
        if channel == FEED_CHANNEL:
            self.registry.feed_notified(space_id)
        else:
            self.registry.notified(space_id, context=context or None)

    def check_targets(self, conn: psycopg.Connection) -> None:
        """The targeted waiters of the spaces just notified: whose row changed (one statement)."""
        self.wake_found(conn, self.registry.take_target_probes())

    def wake_found(self, conn: psycopg.Connection, probes: list[tuple[int, tuple, tuple[str, list]]]) -> None:
        if not probes:
            return
        params = [param for _, _, probe in probes for param in probe[1]]
        (found,) = conn.execute(sql.any_work([probe[0] for _, _, probe in probes]), params).fetchone()
        ready: dict[int, set[tuple]] = {}
        for (space_id, shape, _), has_work in zip(probes, found):
            if has_work:
                ready.setdefault(space_id, set()).add(shape)
        for space_id, shapes in ready.items():
            self.registry.notified(space_id, shapes)

    def recheck(self, conn: psycopg.Connection) -> None:
        """One statement: for each kind of waiter here, is there work for it now? And one for the
        feeds followed here: their last seqs."""
        spaces = self.registry.feed_spaces()
        if spaces:
            rows = conn.execute(events_sql.LAST_SEQS, [spaces]).fetchall()
            for space_id, last_seq in rows:
                self.registry.feed_notified(space_id, last_seq)
        self.wake_found(conn, self.registry.probes())


REGISTRY = Registry()


def waiter_for_next(*, space, member, kind: str, labels: list[str], seen: int) -> Waiter:
    """The waiter of a waited ``next``: its question (the ready queue with its labels, or the
    attempts it may check) compiled by the ORM from the very querysets ``next`` takes from, so
    the re-check asks exactly what ``next`` would (with a claim past its expiry counting as work:
    ``next`` records the lapse and hands the task out)."""
    if kind == "check":
        shape, querysets = ("check", member.pk), [checkable_attempts(space=space, member=member)]
    else:
        shape = ("task", tuple(sorted(labels)))
        querysets = [ready_queue(space.pk, labels), Claim.objects.filter(Claim.due(Now()), space_id=space.pk)]
    parts = [queryset.values("pk")[:1].query.sql_with_params() for queryset in querysets]
    probe = (" OR ".join(f"EXISTS({sql})" for sql, _ in parts), [param for _, params in parts for param in params])
    return Waiter(space.pk, shape, probe, seen=seen, max_waits=space.max_waits_per_key)


def waiter_for_answer(*, space, question_id: int, seen: int) -> Waiter:
    """The waiter of a waited ``ask`` (SPEC §21): woken when its question closes, its re-check
    compiled by the ORM from the question's own row."""
    closed = Question.objects.filter(space_id=space.pk, pk=question_id).exclude(state=QuestionState.OPEN)
    query, params = closed.values("pk")[:1].query.sql_with_params()
    return Waiter(space.pk, ("answer", question_id), (f"EXISTS({query})", list(params)), seen=seen,
                  max_waits=space.max_waits_per_key)


def take_wait_slot(*, space_id: int, key_id: int, limit: int, hold_seconds: float) -> str | None:
    """One of the key's ``limit`` wait slots, free or left by a wait whose process died (past its
    ``held_until``); its token, or None when all are held. The unique constraint on (key, slot)
    is the referee between processes (SPEC §15 Capacity)."""
    token = secrets.token_hex(16)
    for _ in range(SLOT_TRIES):
        with connection.cursor() as cursor:
            cursor.execute(sql.TAKE_WAIT_SLOT, {"space": space_id, "key": key_id, "limit": limit, "token": token,
                                            "seconds": hold_seconds})
            if cursor.fetchone() is not None:
                return token
            cursor.execute(sql.HELD_WAIT_SLOTS, {"space": space_id, "key": key_id, "limit": limit})
            if cursor.fetchone()[0] >= limit:
                return None
    return None

