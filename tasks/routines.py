"""Routines (SPEC §22): a task made each period of a cron schedule, once.

A routine's schedule is read by ``cronsim`` in the routine's IANA time zone (daylight-saving
changes included); its ``next_run_at`` is the start of the next period to fire. ``sweep`` (or
``run_worker``) fires the routines that are due: each period's task is made by the create command
itself, as the routine's steward, in a unit of work whose transaction also writes the period's
``RoutineRun`` — the idempotency tuple of routine and period start, a unique constraint — so any
number of sweeps on any number of hosts make it once, and a crash makes it not at all or whole.
Sweeps take a session advisory lock on the routine first, so two of them do not both try.

``overlap: "skip"``: every period's task has the routine's own title, so they share one conflict
key and a period whose predecessor is still live is refused by the create (``409``), recorded as
skipped (``routine.skipped``). ``"allow"``: the period's start is part of the title, so of the key.
After downtime ``catch_up: "latest"`` makes one task for the latest missed period; ``"none"`` makes
none for a period fired later than ``GRACE`` after its start.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone as dt_timezone
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from django.db import connection, transaction
from django.utils import timezone

from common.refusals import InvalidRequest, NotFound
from events import feed
from spaces.models import Member, Space
from spaces.selectors import as_int
from tasks import sql
from tasks.models import Routine, RoutineCatchUp, RoutineOverlap, RoutineRun, Task

GRACE = timedelta(minutes=2)  # catch_up "none": a period not fired this soon after its start was missed
UTC = dt_timezone.utc


# --- Schedules ---------------------------------------------------------------------------------


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidRequest("Bad time zone.", fields={"timezone": ["An IANA time zone, e.g. Europe/Paris."]}) from None


def check_schedule(schedule: str, time_zone: str) -> None:
    """A cron schedule of 5 fields, and an IANA zone; a 422 naming the field otherwise."""
    tz = zone(time_zone)
    if len(schedule.split()) != 5:
        raise InvalidRequest("Bad schedule.", fields={"schedule": ["Five cron fields: minute hour day month weekday."]})
    try:
        next(CronSim(schedule, datetime.now(tz)))
    except (CronSimError, StopIteration) as error:
        raise InvalidRequest("Bad schedule.", fields={"schedule": [f"Not a cron schedule: {error}."[:200]]}) from None


def period_after(routine: Routine, moment: datetime) -> datetime:
    """The first period start after ``moment``."""
    return next(CronSim(routine.schedule, moment.astimezone(zone(routine.time_zone)))).astimezone(UTC)


def period_at(routine: Routine, moment: datetime) -> datetime:
    """The latest period start at or before ``moment``."""
    since = (moment + timedelta(microseconds=1)).astimezone(zone(routine.time_zone))
    return next(CronSim(routine.schedule, since, reverse=True)).astimezone(UTC)


# --- The steward's changes ----------------------------------------------------------------------


def create_routine(*, space: Space, actor: Member, title: str, schedule: str, time_zone: str = "UTC",
                   **fields: Any) -> Routine:
    check_schedule(schedule, time_zone)
    check_overlap(fields.get("overlap", RoutineOverlap.SKIP), fields.get("work_item_id"))
    now = timezone.now()
    routine = Routine(space=space, title=title, schedule=schedule, time_zone=time_zone, created_by=actor,
                      created_at=now, updated_at=now, **fields)
    routine.next_run_at = period_after(routine, now)
    routine.save()
    return routine


def check_overlap(overlap: str, work_item_id: str | None) -> None:
    """A slot holds one live task (SPEC §4.3): each period's task cannot have a key of its own."""
    if overlap == RoutineOverlap.ALLOW and work_item_id:
        raise InvalidRequest("A routine bound to a catalog slot cannot overlap.",
                             fields={"overlap": ["A slot holds one live task at a time: use skip, or no work_item_id."]})


def get_routine(*, space: Space, routine_id: object, lock: bool = False) -> Routine:
    routines = Routine.objects.select_for_update() if lock else Routine.objects
    routine = routines.filter(space=space, pk=as_int(routine_id)).first()
    if routine is None:
        raise NotFound(f"No routine {routine_id} in this space.")
    return routine


def update_routine(*, space: Space, routine_id: object, **changes: Any) -> Routine:
    """Change a routine; its next run follows its schedule, zone and whether it is enabled."""
    with transaction.atomic():
        routine = get_routine(space=space, routine_id=routine_id, lock=True)
        for name, value in changes.items():
            setattr(routine, name, value)
        check_schedule(routine.schedule, routine.time_zone)
        check_overlap(routine.overlap, routine.work_item_id)
        now = timezone.now()
        routine.updated_at = now
        # Re-enabled, or rescheduled: from now on (what it missed while paused is not made).
        routine.next_run_at = period_after(routine, now) if routine.enabled else None
        routine.save()
    return routine


def delete_routine(*, space: Space, routine_id: object) -> int:
    """Delete it (its runs go with it; its tasks stay); its id."""
    routine = get_routine(space=space, routine_id=routine_id)
    deleted = routine.pk
    routine.delete()
    return deleted


def last_tasks(routines: list[Routine]) -> dict[int, int]:
    """Each routine's latest task number, in one query."""
    runs = (RoutineRun.objects.filter(routine_id__in=[r.pk for r in routines], task__isnull=False)
            .order_by("routine_id", "-period").distinct("routine_id").values_list("routine_id", "task__number"))
    return dict(runs)


# --- Firing (the unit of each period is the command layer's: tasks.commands.fire_due_routines) -----


@contextmanager
def firing(routine_id: int) -> Iterator[bool]:
    """Whether this process may fire the routine now: a session advisory lock another sweep
    holds is skipped (it is firing it), and let go however the block ends."""
    with connection.cursor() as cursor:
        cursor.execute(sql.TRY_ROUTINE_LOCK, [sql.ROUTINE_LOCK_CLASS, routine_id])
        taken = cursor.fetchone()[0]
    try:
        yield taken
    finally:
        if taken:
            with connection.cursor() as cursor:
                cursor.execute(sql.ROUTINE_UNLOCK, [sql.ROUTINE_LOCK_CLASS, routine_id])


def due(now: datetime):
    """The enabled routines whose next run has come, the most overdue first."""
    return Routine.objects.filter(enabled=True, next_run_at__lte=now).order_by("next_run_at")


def due_period(routine_id: int, now: datetime) -> tuple[Routine, datetime, bool] | None:
    """The routine, its latest due period and whether that period is to be made (else skipped as
    missed); None when there is nothing to do (another sweep fired it, or it is paused)."""
    routine = Routine.objects.select_related("space", "created_by").filter(pk=routine_id).first()
    if routine is None or not routine.enabled or routine.next_run_at is None or routine.next_run_at > now:
        return None
    period = period_at(routine, now)
    if RoutineRun.objects.filter(space_id=routine.space_id, routine=routine, period=period).exists():
        advance(routine, period, now)  # fired by a sweep whose move of next_run_at this one did not see
        return None
    missed = routine.catch_up == RoutineCatchUp.NONE and now - period > GRACE
    return routine, period, not missed


def advance(routine: Routine, period: datetime, now: datetime) -> None:
    Routine.objects.filter(pk=routine.pk).update(last_period=period, next_run_at=period_after(routine, now))


def task_input(routine: Routine, period: datetime) -> dict[str, Any]:
    """The create command's input for the period's task (``overlap: allow``: the period in its title)."""
    title = routine.title
    if routine.overlap == RoutineOverlap.ALLOW:
        title = f"{title} ({period.astimezone(zone(routine.time_zone)):%Y-%m-%d %H:%M})"[:500]
    data = {"title": title, "body": routine.body, "priority": routine.priority, "labels": list(routine.labels)}
    if routine.work_item_id:
        data["work_item_id"] = routine.work_item_id
    return data


def fired(routine: Routine, period: datetime, task: Task) -> None:
    """The period's run, in the transaction that made its task."""
    RoutineRun.objects.create(space_id=routine.space_id, routine=routine, period=period, task=task)
    feed.record(space_id=routine.space_id, type="routine.fired", actor_id=routine.created_by_id,
                data={"routine": routine.pk, "period": period.isoformat(), "task": task.number})


def skipped(routine: Routine, period: datetime, reason: str, winner: dict | None = None) -> None:
    RoutineRun.objects.create(space_id=routine.space_id, routine=routine, period=period, reason=reason[:200])
    data = {"routine": routine.pk, "period": period.isoformat(), "reason": reason[:200]}
    if winner:
        data["task"] = winner.get("id")
    feed.record(space_id=routine.space_id, type="routine.skipped", data=data)
