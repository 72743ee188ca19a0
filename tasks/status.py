"""A task's status as reads show it (SPEC §15: a read never writes).

The stored ``Task.status`` is what the last change of the task wrote. A claim past its expiry is
ended for every rule at once, but its lapse is recorded only by the next change of the task (or
``expire_claims``), so between the two a task stored as claimed or assigned may hold no live
claim. Reads show it as the change will record it: ``recompute_status`` with the lapsed claims
left out. Every read that shows or filters by a status asks here, in SQL: lists, details, the
board, the summary, the admin.

``next`` reads the stored status (its statement claims nothing while a claim of the space is
due, and records the lapses first), so its ready queue keeps the index on open tasks.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import Case, CharField, Exists, F, OuterRef, Q, Value, When

from tasks.models import Claim, ClaimOrigin, TaskStatus

HELD = (TaskStatus.CLAIMED, TaskStatus.ASSIGNED)  # the statuses a lapse can change


def _holds(now: datetime, *, assigned: bool = False) -> Exists:
    claims = Claim.objects.filter(Claim.live(now), task_id=OuterRef("pk"))
    return Exists(claims.filter(origin=ClaimOrigin.ASSIGNED) if assigned else claims)


def shown_as(status: str, now: datetime) -> Q:
    """Tasks a read at ``now`` shows with ``status``."""
    held = Q(status__in=HELD)
    if status == TaskStatus.OPEN:
        return Q(status=TaskStatus.OPEN) | (held & ~_holds(now))
    if status == TaskStatus.ASSIGNED:
        return held & _holds(now, assigned=True)
    if status == TaskStatus.CLAIMED:
        return held & _holds(now) & ~_holds(now, assigned=True)
    return Q(status=status)


def shown_in(statuses: Iterable[str], now: datetime) -> Q:
    """Tasks a read at ``now`` shows with any of ``statuses``."""
    wanted = Q(pk__in=[])
    for status in set(statuses):
        wanted |= shown_as(status, now)
    return wanted


def shown_status(now: datetime) -> Case:
    """The status a read at ``now`` shows, as a column (``annotate(shown_status=…)``)."""
    return Case(*(When(shown_as(status, now), then=Value(status.value)) for status in HELD),
                When(status__in=HELD, then=Value(TaskStatus.OPEN.value)),
                default=F("status"), output_field=CharField())


def with_shown_status(tasks, now: datetime):
    """``tasks`` annotated with ``shown_status``, which the serializers show as ``status``."""
    return tasks.annotate(shown_status=shown_status(now))
