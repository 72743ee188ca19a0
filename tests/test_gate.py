"""A server process's running slots (common.gate) go to requests in the order they came: a
request that arrives as a slot is released never takes it before the ones already waiting."""
from __future__ import annotations

import threading
import time

from common.gate import FairSlots


def queued(slots: FairSlots, count: int) -> None:
    deadline = time.monotonic() + 10
    while len(slots.queue) < count:
        assert time.monotonic() < deadline
        time.sleep(0.001)


def test_waiting_requests_get_the_slot_in_arrival_order_and_a_latecomer_does_not_barge_in():
    slots = FairSlots(1)
    slots.acquire()
    order: list[str] = []

    def request(name: str) -> None:
        slots.acquire()
        order.append(name)
        time.sleep(0.002)  # runs a moment, as a request does
        slots.release()

    threads = []
    for i in range(5):
        threads.append(threading.Thread(target=request, args=(f"r{i}",)))
        threads[-1].start()
        queued(slots, i + 1)
    slots.release()
    request("latecomer")  # arrives just as the slot is released: behind the five
    for thread in threads:
        thread.join(10)
    assert order == ["r0", "r1", "r2", "r3", "r4", "latecomer"]
    assert slots.free == 1 and not slots.queue


def test_slots_up_to_the_count_are_taken_without_waiting():
    slots = FairSlots(2)
    slots.acquire()
    slots.acquire()
    assert slots.free == 0 and not slots.queue
    slots.release()
    slots.release()
    assert slots.free == 2


def test_a_known_keys_requests_take_their_turn_before_the_others_waiting():
    """A flood of bad keys queues behind an agent's requests (SPEC §3 Abuse): when a turn is
    handed on, a request of a key that authenticated in this process goes first."""
    slots = FairSlots(1)
    slots.acquire()
    order: list[str] = []

    def request(name: str, known: bool) -> None:
        slots.acquire(known)
        order.append(name)
        slots.release()

    threads = []
    for i, (name, known) in enumerate([("bad-1", False), ("bad-2", False), ("agent", True), ("bad-3", False)]):
        threads.append(threading.Thread(target=request, args=(name, known)))
        threads[-1].start()
        deadline = time.monotonic() + 10
        while len(slots.queue) + len(slots.first) < i + 1:
            assert time.monotonic() < deadline
            time.sleep(0.001)
    slots.release()
    for thread in threads:
        thread.join(10)
    assert order == ["agent", "bad-1", "bad-2", "bad-3"]


def test_known_keys_are_the_recent_ones_and_kept_as_digests():
    from common.gate import KnownKeys

    known = KnownKeys(most=2)
    for header in ("Bearer sk_a", "Bearer sk_b", "Bearer sk_c"):
        known.add(header)
    assert "Bearer sk_a" not in known and "Bearer sk_b" in known and "Bearer sk_c" in known and "" not in known
    assert all(isinstance(digest, bytes) and len(digest) == 16 for digest in known.seen)
