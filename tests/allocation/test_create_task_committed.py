"""The create path outside a test transaction: the mutation is one statement."""
from __future__ import annotations

import pytest
from django.db import connection

from allocation import services as allocation
from allocation.models import Occupancy, Reservation
from spaces.models import Space
from commands.unit import UnitOfWork, in_unit
from tasks.commands import create_once, window_results
from tasks.models import EventKind, Task
from tests.conftest import load_agent_lab
from tests.factories import create_task, member_with_key

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_creates_the_task_its_occupancy_and_event_and_drops_the_reservation():
    space = load_agent_lab()
    member, _ = member_with_key(space, "writer")
    first = create_task(space=space, actor=member, title="Retry policy")
    second = create_task(space=space, actor=member, title="Write the onboarding guide")
    assert (first.number, second.number) == (1, 2)
    stored = Task.objects.get(pk=first.pk)
    assert stored.conflict_target == "task:agent-lab:retry policy" and stored.creator == member
    assert Occupancy.objects.get(task=first).target == stored.conflict_target
    assert list(stored.events.values_list("kind", flat=True)) == [EventKind.CREATED]
    assert stored.events.get().details["conflict_key"]["target"] == stored.conflict_target
    assert not Reservation.objects.exists()
    assert Space.objects.get(pk=space.pk).task_counter == 2


def test_the_occupancy_constraint_decides_when_a_reservation_was_lost(monkeypatch):
    """An intent whose reservation lapsed loses to the occupant: no task, no number, a 409 naming the winner."""
    space = load_agent_lab()
    member, _ = member_with_key(space, "writer")
    winner = create_task(space=space, actor=member, title="Retry policy")
    real_reserve = allocation.reserve

    def reserve_ignoring_occupancy(**kwargs):
        # What a process that reserved before the winner, then stalled past its window, holds.
        Occupancy.objects.filter(task=winner).delete()
        try:
            return real_reserve(**kwargs)
        finally:
            Occupancy.objects.create(space=space, kind="create_task", target=winner.conflict_target,
                                     delivery_mode="result", task=winner)

    monkeypatch.setattr(allocation, "reserve", reserve_ignoring_occupancy)
    with pytest.raises(allocation.errors.ConflictKeyOccupied) as refused:
        create_task(space=space, actor=member, title="retry  POLICY")
    assert refused.value.extra["winner"] == {"type": "task", "id": winner.number, "status": "open"}
    assert Task.objects.count() == 1
    assert Space.objects.get(pk=space.pk).task_counter == 1  # the loser's number was rolled back
    assert not Reservation.objects.exists()


def test_reservations_write_no_wal_but_tasks_and_occupancy_do():
    """Reservations mean nothing after a crash, so their table is UNLOGGED (no flush to
    wait for when reserving); what must survive a crash stays logged."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, relpersistence FROM pg_class WHERE relname IN "
            "('allocation_reservation', 'allocation_occupancy', 'tasks_task', 'allocation_operation')"
        )
        persistence = dict(cursor.fetchall())
    assert persistence == {"allocation_reservation": "u", "allocation_occupancy": "p", "tasks_task": "p",
                           "allocation_operation": "p"}


def test_the_reservation_statement_takes_the_arrival_number_from_the_sequence():
    space = load_agent_lab()
    member, _ = member_with_key(space, "writer")
    first = create_task(space=space, actor=member, title="Retry policy")
    second = create_task(space=space, actor=member, title="Write the onboarding guide")
    assert 0 < first.received_seq < second.received_seq
    assert Task.objects.get(pk=second.pk).received_seq == second.received_seq



def durability() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('synchronous_commit')")
        return cursor.fetchone()[0]


def durability_at_commit(command, **arguments) -> tuple[str, str]:
    """``synchronous_commit`` as the unit's transaction began, and as it commits after ``command``."""
    seen = []

    def work(*, unit, **given):
        seen.append(durability())
        result = command(unit=unit, **given)
        seen.append(durability())
        return result

    in_unit(work, **arguments)
    return seen[0], seen[-1]


def test_a_create_commits_its_task_durably(monkeypatch):
    """A single create's reservation commits with its task (SPEC §4.5): the reservation alone
    promises nothing, but that transaction holds the task and its answer, so it waits for the
    disk like every other. A window's first phase (its reservations alone) need not."""
    space = load_agent_lab()
    member, _ = member_with_key(space, "writer")
    began, committed = durability_at_commit(create_once, space=space, actor=member, title="Retry policy")
    assert committed == began != "off"

    phases = []
    real = UnitOfWork.commit_phase

    def noted(self, **kwargs):
        phases.append(durability())
        return real(self, **kwargs)

    monkeypatch.setattr(UnitOfWork, "commit_phase", noted)
    began, committed = durability_at_commit(window_results, member=member, proposals=[
        {"title": "Write the onboarding guide"}, {"title": "Rotate the signing keys"}])
    assert phases == ["off"] and committed == began != "off"
