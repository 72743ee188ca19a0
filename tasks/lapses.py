"""Lapse (SPEC §6.1, §15): a claim past its ``expires_at`` is ended for every rule at once, and
its lapse is recorded exactly once.

A claim past its expiry already counts as ended wherever claims are read (``Claim.live``), so
nothing waits for this module to be right; reads show the task as the record will
(``tasks.status``) and write nothing (SPEC §15). What it does is record the lapse — the claim's
end, the ``claim_lapsed`` event, the holder's notification, the task's status, the wake-up of
agents waiting for work — by whichever change comes first: ``next`` (its statement says when the
space has a claim to lapse), a lock of the task (``selectors.get_task(lock=True)``), or
``expire_claims``. Each claim is ended by one compare-and-set under its task's row
lock, so when several meet it at once it is recorded once; a heartbeat that renewed the claim
first (it holds the same lock) leaves nothing to lapse.
"""
from __future__ import annotations

from datetime import datetime
from itertools import groupby

from django.db import transaction
from django.db.models import DateTimeField, ExpressionWrapper, F, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from tasks import parking, wakeups
from telemetry import counters
from tasks.lifecycle import notify, recompute_status, record_event
from tasks.models import Claim, ClaimEnd, EventKind, NotificationKind, Task


def due_claims(*, now: datetime, space_id: int | None = None, task_id: int | None = None):
    claims = Claim.objects.filter(Claim.due(now))
    if space_id is not None:
        claims = claims.filter(space_id=space_id)
    if task_id is not None:
        claims = claims.filter(task_id=task_id)
    return claims


def lapse_due(*, space_id: int | None = None, task: Task | None = None, now: datetime | None = None,
              locked: bool = False) -> int:
    """Record the lapse of every claim past its expiry (of one space, or one task); how many
    were recorded here. ``locked``: the caller holds ``task``'s row lock already. Costs one
    query when nothing is due."""
    now = now or timezone.now()
    due = list(due_claims(now=now, space_id=space_id, task_id=task.pk if task else None)
               .order_by("task_id", "pk").values_list("task_id", "pk", "member_id", "cycle"))
    lapsed = 0
    for task_id, rows in groupby(due, key=lambda row: row[0]):
        with transaction.atomic():
            if locked and task is not None and task.pk == task_id:
                current = task
            else:
                current = Task.objects.select_for_update(no_key=True).get(pk=task_id)
            ended = 0
            for _, claim_id, member_id, cycle in rows:
                # Compare-and-set: still live in the row and still past its expiry (a heartbeat
                # may have moved it): only the first to meet it ends it.
                # It ended at its expiry, as reads showed it meanwhile (Claim.shown_end).
                if Claim.objects.filter(Claim.due(now), pk=claim_id).update(ended_at=F("expires_at"),
                                                                          end_reason=ClaimEnd.LAPSED) != 1:
                    continue
                record_event(task=current, kind=EventKind.LAPSED, actor=None, member=member_id, claim=claim_id,
                             cycle=cycle)
                notify(members=[member_id], kind=NotificationKind.CLAIM_LAPSED, task=current, claim=claim_id,
                       task_number=current.number)
                ended += 1
            if ended:
                counters.LAPSES.inc(ended)
                recompute_status(current)
                parking.set_back(current, count=ended)
                wakeups.work_ready(current.space_id)  # its task, or a place under a cap (SPEC §22)
                lapsed += ended
    return lapsed


def lapsing(claims: QuerySet, now: datetime) -> QuerySet:
    """The live ones among ``claims`` in the last fifth of their lease (since made or last
    renewed): about to lapse, as the board marks them (SPEC §14)."""
    renewed = Coalesce(F("last_heartbeat_at"), F("created_at"))
    warn_at = ExpressionWrapper(F("expires_at") - (F("expires_at") - renewed) / 5, output_field=DateTimeField())
    return claims.filter(Claim.live(now)).alias(warn_at=warn_at).filter(warn_at__lte=now)
