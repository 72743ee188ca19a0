"""SPEC §22 routines: each period's task made once, by any number of sweeps."""
from __future__ import annotations

import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone as dt_timezone

import pytest

from events.models import Event
from tasks import commands, routines
from tasks.models import Routine, RoutineRun, Task
from tests.live_server import ROOT, server_env

S = "/v1/spaces/agent-lab"
UTC = dt_timezone.utc


def make(steward, **fields) -> dict:
    response = steward.api.post(f"{S}/routines", {"title": "Audit the dependencies", "schedule": "0 9 * * 1",
                                                  **fields})
    assert response.status_code == 201, response.json()
    return response.json()


def fire_at(moment: datetime) -> int:
    return commands.fire_due_routines(now=moment)


def feed_types(space) -> list[str]:
    return list(Event.objects.filter(space_id=space.pk, type__startswith="routine.").order_by("id")
                .values_list("type", flat=True))


def test_a_steward_makes_a_routine_and_its_answer_says_when_it_runs(steward, writer):
    body = make(steward, timezone="Europe/Paris", labels=["deps"], priority=1)
    assert body["schedule"] == "0 9 * * 1" and body["timezone"] == "Europe/Paris" and body["enabled"]
    next_run = datetime.fromisoformat(body["next_run_at"])
    assert next_run.astimezone(routines.zone("Europe/Paris")).strftime("%a %H:%M") == "Mon 09:00"
    assert body["last_task"] is None and body["overlap"] == "skip" and body["catch_up"] == "latest"
    assert writer.api.get(f"{S}/routines").json()["results"][0]["id"] == body["id"]
    assert writer.api.get(f"{S}/routines/{body['id']}").json()["title"] == "Audit the dependencies"
    assert writer.api.post(f"{S}/routines", {"title": "x", "schedule": "* * * * *"}).status_code == 403


@pytest.mark.parametrize("fields, field", [
    ({"schedule": "61 * * * *"}, "schedule"), ({"schedule": "* * * *"}, "schedule"),
    ({"timezone": "Mars/Olympus"}, "timezone"), ({"overlap": "allow", "work_item_id": "T1"}, "overlap"),
    ({"catch_up": "all"}, "catch_up"),
])
def test_a_bad_routine_is_refused_naming_its_field(steward, fields, field):
    response = steward.api.post(f"{S}/routines", {"title": "Audit", "schedule": "0 9 * * 1", **fields})
    assert response.status_code == 422 and field in response.json()["fields"], response.json()
    assert not Routine.objects.exists()


def test_each_period_makes_its_task_once(space, steward):
    routine = make(steward, schedule="*/15 * * * *", overlap="allow")
    first = datetime.fromisoformat(routine["next_run_at"])
    assert fire_at(first - timedelta(seconds=1)) == 0  # not yet
    assert fire_at(first + timedelta(seconds=5)) == 1
    assert fire_at(first + timedelta(seconds=6)) == 0  # the same period again: nothing
    task = Task.objects.get()
    assert task.creator_id == steward.member.pk and task.title.startswith("Audit the dependencies (")
    assert RoutineRun.objects.get().task_id == task.pk
    answer = steward.api.get(f"{S}/routines/{routine['id']}").json()
    assert answer["last_task"] == task.number
    assert datetime.fromisoformat(answer["next_run_at"]) == first + timedelta(minutes=15)
    assert fire_at(first + timedelta(minutes=15, seconds=1)) == 1  # overlap allow: beside the live one
    assert Task.objects.filter(status="open").count() == 2
    assert feed_types(space) == ["routine.fired", "routine.fired"]


def test_overlap_skip_makes_nothing_while_the_last_task_is_live(space, steward):
    routine = make(steward, schedule="0 * * * *")
    first = datetime.fromisoformat(routine["next_run_at"])
    assert fire_at(first) == 1
    assert fire_at(first + timedelta(hours=1)) == 0
    skipped = Event.objects.get(type="routine.skipped")
    assert skipped.data["task"] == 1 and skipped.data["routine"] == routine["id"]
    steward.api.post(f"{S}/tasks/1/withdraw", {"reason": "done by hand"})
    assert fire_at(first + timedelta(hours=2)) == 1
    assert list(Task.objects.order_by("number").values_list("status", flat=True)) == ["withdrawn", "open"]


def test_after_downtime_catch_up_latest_makes_one_task_and_none_makes_none(steward):
    latest = make(steward, title="Weekly report", schedule="0 9 * * *")
    skipped = make(steward, title="Daily standup notes", schedule="0 9 * * *", catch_up="none")
    three_days_on = datetime.fromisoformat(latest["next_run_at"]) + timedelta(days=3, hours=2)
    assert fire_at(three_days_on) == 1
    task = Task.objects.get()
    assert task.title == "Weekly report"
    run = RoutineRun.objects.get(routine_id=latest["id"])
    assert run.period == datetime.fromisoformat(latest["next_run_at"]) + timedelta(days=3)  # the latest missed
    assert "missed" in RoutineRun.objects.get(routine_id=skipped["id"]).reason
    assert fire_at(three_days_on + timedelta(minutes=1)) == 0


def test_a_paused_routine_makes_nothing_and_resumes_from_the_next_period(steward):
    routine = make(steward, schedule="*/5 * * * *")
    paused = steward.api.patch(f"{S}/routines/{routine['id']}", {"enabled": False}).json()
    assert paused["enabled"] is False and paused["next_run_at"] is None
    assert fire_at(datetime.now(UTC) + timedelta(hours=1)) == 0
    resumed = steward.api.patch(f"{S}/routines/{routine['id']}", {"enabled": True, "schedule": "0 6 * * *"}).json()
    assert datetime.fromisoformat(resumed["next_run_at"]) > datetime.now(UTC)
    assert steward.api.patch(f"{S}/routines/{routine['id']}", {"schedule": "bad"}).status_code == 422
    assert steward.api.delete(f"{S}/routines/{routine['id']}").status_code == 204
    assert steward.api.get(f"{S}/routines/{routine['id']}").status_code == 404


def test_the_sweep_command_fires_due_routines(steward):
    from django.core.management import call_command
    from io import StringIO

    routine = make(steward, schedule="* * * * *")
    Routine.objects.filter(pk=routine["id"]).update(next_run_at=datetime.now(UTC) - timedelta(seconds=30))
    out = StringIO()
    call_command("sweep", stdout=out)
    assert "1 routine tasks" in out.getvalue()
    assert Task.objects.count() == 1


FIRER = """
import sys, time
from datetime import datetime, timedelta, timezone
import django
django.setup()
from tasks import commands, routines
from django.db import connection
base, start, speed, until = datetime.fromisoformat(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
while time.time() < until:
    commands.fire_due_routines(now=base + timedelta(seconds=(time.time() - start) * speed))
    time.sleep(0.01)
connection.close()
"""


@pytest.mark.django_db(transaction=True)
def test_four_sweeping_processes_make_each_period_once_and_miss_none(space, steward):
    """Four processes sweep one every-minute routine on a clock running 30 times fast (ten
    periods in 20 s): each period gets its task, once."""
    routine = make(steward, schedule="* * * * *", overlap="allow")
    base = datetime.fromisoformat(routine["next_run_at"]) - timedelta(seconds=1)
    start = time.time() + 3  # the processes start before the clock does
    until = start + 20
    procs = [subprocess.Popen([sys.executable, "-c", FIRER, base.isoformat(), str(start), "30", str(until)],
                              cwd=ROOT, env=server_env(), stderr=subprocess.PIPE, text=True) for _ in range(4)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
    runs = list(RoutineRun.objects.filter(routine_id=routine["id"]).order_by("period").values_list("period", "task"))
    periods = [period for period, _ in runs]
    assert len(periods) >= 9  # 20 s at 30x: ten minutes of periods (the last may fall past the end)
    assert periods == [periods[0] + timedelta(minutes=i) for i in range(len(periods))]  # none missed
    assert all(task is not None for _, task in runs)
    assert Task.objects.count() == len(runs)  # one task a period, never two


@pytest.mark.django_db(transaction=True)
def test_a_sweep_that_lost_its_database_across_period_boundaries_catches_up_once(space, steward):
    """sweep --every loses its connection (pg_terminate_backend, as a restart does) while three
    periods begin: once it is back, the routine makes one task, for the latest of them."""
    import threading

    from django.db import connection

    routine = make(steward, schedule="* * * * *")
    sweeper = subprocess.Popen([sys.executable, "-u", "manage.py", "sweep", "--every", "0.2"], cwd=ROOT,
                               env=server_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(sweeper.stdout.readline, "")), daemon=True).start()

    def wait_for(condition, what: str) -> None:
        deadline = time.monotonic() + 30
        while not condition():
            assert time.monotonic() < deadline, f"{what} did not happen"
            time.sleep(0.05)

    try:
        wait_for(lambda: any(line.startswith("Swept:") for line in lines), "the first sweep")
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                           "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        latest = routines.period_at(Routine.objects.get(pk=routine["id"]), datetime.now(UTC))
        # Three periods began while it was away: its next run is the first of them.
        Routine.objects.filter(pk=routine["id"]).update(next_run_at=latest - timedelta(minutes=2))
        wait_for(lambda: "The database is back.\n" in lines, "a sweep after the dropped connection")
        wait_for(lambda: RoutineRun.objects.filter(routine_id=routine["id"], task__isnull=False).exists(),
                 "the catch-up")
    finally:
        sweeper.terminate()
        sweeper.communicate(timeout=30)
    made = RoutineRun.objects.get(routine_id=routine["id"], task__isnull=False)
    assert made.period >= latest and Task.objects.count() == 1  # the latest period's, once
