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
