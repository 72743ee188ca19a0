"""How many requests a server process runs at once, however many threads it has (SPEC §15).

A threaded worker (gunicorn.conf.py) keeps a thread for each agent waiting for work, hundreds
of them, so its thread count cannot be what limits how many requests run at once: Python
threads of one process share one interpreter lock, and many requests running side by side in
one process are slower in all than a few run one after another (measured: docs/benchmarks.md).
So a request takes one of the process's few running slots for as long as it runs, and a
waiting request gives its slot back while it waits (``released``): a worker then runs like a
few sync workers for the requests that work, and holds any number that wait.
"""
from __future__ import annotations

import os
import hashlib
import threading
from collections import OrderedDict, deque
from contextlib import contextmanager
from typing import Any, Callable, Iterator

SLOTS = int(os.environ.get("SPACES_RUNNING_PER_PROCESS", "0") or 0)  # 0: no limit (gunicorn.conf.py sets 1)



class FairSlots:
    """A counting semaphore that serves its waiters in the order they came, those of keys known
    good first. Python's ``Semaphore`` lets a thread that arrives just as a slot is released
    take it before the one woken for it, so under steady load a request could wait behind many
    that came after it (a heartbeat held for seconds: its claim lapsed). Here a released slot is
    handed to the longest waiting request directly: of a key that authenticated in this process,
    if any waits, else of anyone. So a flood of requests with bad keys (each refused at once, but
    each a turn of the process) queues behind an agent's requests, never in front of them."""

    def __init__(self, slots: int) -> None:
        self.lock = threading.Lock()
        self.free = slots
        self.queue: deque[threading.Event] = deque()  # everyone else
        self.first: deque[threading.Event] = deque()  # requests of keys known good

    def acquire(self, known: bool = False) -> None:
        with self.lock:
            if self.free > 0 and not self.queue and not self.first:
                self.free -= 1
                return
            turn = threading.Event()
            (self.first if known else self.queue).append(turn)
        turn.wait()  # set by release, which hands this thread the slot

    def release(self) -> None:
        with self.lock:
            if self.first:
                self.first.popleft().set()
            elif self.queue:
                self.queue.popleft().set()
            else:
                self.free += 1


class KnownKeys:
    """The ``Authorization`` headers that authenticated in this process lately (a digest of each,
    the most recent few thousand): for the order of turns only, never for who may do what —
    every request is authenticated as ever once it runs."""

    def __init__(self, most: int = 4096) -> None:
        self.lock = threading.Lock()
        self.most = most
        self.seen: OrderedDict[bytes, None] = OrderedDict()

    @staticmethod
    def digest(authorization: str) -> bytes:
        return hashlib.sha256(authorization.encode("utf-8", "surrogateescape")).digest()[:16]

    def add(self, authorization: str) -> None:
        key = self.digest(authorization)
        with self.lock:
            self.seen[key] = None
            self.seen.move_to_end(key)
            if len(self.seen) > self.most:
                self.seen.popitem(last=False)

    def __contains__(self, authorization: str) -> bool:
        return bool(authorization) and self.digest(authorization) in self.seen


KNOWN = KnownKeys()


def known_good(authorization: str) -> None:
    """An API key authenticated (``spaces.auth``): its requests go first when a turn is handed on."""
    if _slots is not None and authorization:
        KNOWN.add(authorization)


_slots = FairSlots(SLOTS) if SLOTS > 0 else None
_holding = threading.local()


def wrap(application: Callable[..., Any]) -> Callable[..., Any]:
    """The WSGI application, each request holding a running slot while it is handled."""
    if _slots is None:
        return application

    def gated(environ, start_response):
        _slots.acquire(environ.get("HTTP_AUTHORIZATION", "") in KNOWN)
        _holding.slot = True
        try:
            return application(environ, start_response)
        finally:
            _holding.slot = False
            _slots.release()

    return gated


@contextmanager
def released() -> Iterator[None]:
    """Give this request's slot back while the block runs (a wait), and take one again after."""
    if _slots is None or not getattr(_holding, "slot", False):
        yield
        return
    _holding.slot = False
    _slots.release()
    try:
        yield
    finally:
        _slots.acquire()
        _holding.slot = True
