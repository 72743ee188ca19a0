"""A rival occupies the key between an intent's reservation and its mutation (the reserve
statement reads occupancy in its snapshot but checks reservations against what committed since):
the intent answers 409 naming the rival, with or without an Idempotency-Key, never a 500."""
from __future__ import annotations

import threading

import pytest
from django.db import connection

from allocation.models import Occupancy, Reservation
from tasks import services
from tasks.models import Task

S = "/v1/spaces/agent-lab"


def occupy_from_another_connection(space, title: str) -> int:
    """A rival intent's whole create, committed on a connection of its own: its task and occupancy."""
    made: list[int] = []

    def rival():
        try:
            task = Task.objects.create(space=space, number=999, title=title, conflict_kind="create_task",
                                       conflict_target=f"task:{space.slug}:slot:T1", work_item_id="T1",
                                       received_seq=0, payload_sha256="")
            Occupancy.objects.create(space=space, kind="create_task", target=task.conflict_target,
                                     delivery_mode="result", task=task)
            made.append(task.number)
        finally:
            connection.close()

    thread = threading.Thread(target=rival)
    thread.start()
    thread.join()
    return made[0]


@pytest.mark.parametrize("idempotency_key", [None, "k-race"])
def test_a_key_occupied_while_reserving_is_a_409_naming_the_winner(writer, space, monkeypatch, idempotency_key):
    real_reserve = services.reserve_bound

    def reserve_then_lose(*args, **kwargs):
        intent = real_reserve(*args, **kwargs)
        intent.rival = occupy_from_another_connection(space, "the rival's benchmark harness")
        return intent

    monkeypatch.setattr(services, "reserve_bound", reserve_then_lose)
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
    response = writer.api.post(f"{S}/tasks", {"title": "Benchmark harness for code-review agents"}, headers=headers)
    assert response.status_code == 409, response.content[:500]
    assert response.json()["code"] == "conflict_key_occupied" and response.json()["winner"]["id"] == 999
    assert Task.objects.filter(work_item_id="T1").count() == 1  # only the rival's
    assert not Reservation.objects.exists()  # the losing intent's reservation went with it
