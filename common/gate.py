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
import threading
from collections import deque
from contextlib import contextmanager
from typing import Any, Callable, Iterator

SLOTS = int(os.environ.get("SPACES_RUNNING_PER_PROCESS", "0") or 0)  # 0: no limit (gunicorn.conf.py sets 1)


class FairSlots:
    """A counting semaphore that serves its waiters in the order they came. Python's
    ``Semaphore`` lets a thread that arrives just as a slot is released take it before the
    one woken for it, so under steady load a request could wait behind many that came after
    it (a heartbeat held for seconds: its claim lapsed). Here a released slot is handed to the
    longest waiting request directly."""

    def __init__(self, slots: int) -> None:
        self.lock = threading.Lock()
        self.free = slots
        self.queue: deque[threading.Event] = deque()

    def acquire(self) -> None:
        with self.lock:
            if self.free > 0 and not self.queue:
                self.free -= 1
                return
            turn = threading.Event()
            self.queue.append(turn)
        turn.wait()  # set by release, which hands this thread the slot

    def release(self) -> None:
        with self.lock:
            if self.queue:
                self.queue.popleft().set()
            else:
                self.free += 1


_slots = FairSlots(SLOTS) if SLOTS > 0 else None
_holding = threading.local()


def wrap(application: Callable[..., Any]) -> Callable[..., Any]:
    """The WSGI application, each request holding a running slot while it is handled."""
    if _slots is None:
        return application

    def gated(environ, start_response):
        _slots.acquire()
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
