"""A space at a glance (SPEC §14): the figures of ``GET …/summary``, the board's header and
``spaces board``. Every query reads live work, a recent range or a kept count through an
index, so the cost does not grow with finished work (SPEC §11)."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Count, Q
from django.db.models.functions import TruncHour
from django.utils import timezone

from allocation import selectors as allocation
from costs import selectors as cost_selectors
from costs.selectors import month_spend, month_start
from spaces.models import Space
from tasks.models import LIVE_STATUSES, Attempt, AttemptState, Claim, SlotDoneCount, Task, TaskStatus
from tasks.filters import blocked, ready_condition
from tasks.status import with_shown_status

RECENT_DONE = timedelta(days=7)
DUPLICATES_WINDOW = timedelta(hours=24)


def live_counts(space: Space, now) -> dict[str, tuple[int, int]]:
    """Per live status: (tasks, of which blocked)."""
    live = with_shown_status(Task.objects.filter(space=space, status__in=LIVE_STATUSES), now)
    rows = (live.order_by().values("shown_status")
            .annotate(total=Count("pk"), blocked=Count("pk", filter=Q(blocked()))))
    return {row["shown_status"]: (row["total"], row["blocked"]) for row in rows}


def oldest_ready(space: Space, now) -> dict[str, Any] | None:
    """The ready task created first (numbers follow creation), with its age in seconds."""
    task = (Task.objects.filter(space=space).filter(ready_condition(now)).order_by("number")
            .values("number", "title", "created_at").first())
    if task is None:
        return None
    return {"task": task["number"], "title": task["title"],
            "age_seconds": max(0, int((now - task["created_at"]).total_seconds()))}


def claims_by_member(space: Space, now) -> list[dict[str, Any]]:
    holders: dict[int, dict[str, Any]] = {}
    live = (Claim.objects.filter(Claim.live(now), space=space).order_by("member_id", "task__number")
            .values_list("member_id", "member__name", "task__number"))
    for member_id, name, number in live:
        holders.setdefault(member_id, {"member": member_id, "name": name, "tasks": []})["tasks"].append(number)
    return sorted(holders.values(), key=lambda h: (-len(h["tasks"]), h["name"]))


def slot_counts(space: Space) -> list[dict[str, Any]]:
    """Per catalog slot that has had work: live and done tasks bound to it."""
    slots: dict[str, dict[str, Any]] = {}
    live = (Task.objects.filter(space=space, status__in=LIVE_STATUSES, work_item_id__isnull=False).order_by()
            .values("work_item_id").annotate(n=Count("pk")).values_list("work_item_id", "n"))
    for slot, n in live:
        slots[slot] = {"work_item_id": slot, "live": n, "done": 0}
    for slot, done in SlotDoneCount.objects.filter(space=space).values_list("work_item_id", "done"):
        slots.setdefault(slot, {"work_item_id": slot, "live": 0, "done": 0})["done"] = done
    return sorted(slots.values(), key=lambda s: (len(s["work_item_id"]), s["work_item_id"]))


HOURS = int(RECENT_DONE.total_seconds() // 3600)  # the throughput chart: one bar per hour


def done_per_hour(space: Space, now) -> dict[str, Any]:
    """Tasks done per hour over the last 7 days, oldest hour first, the current one last: from
    the index of done tasks by time (``task_done_by_time``), so it reads the week's done work,
    never the rest."""
    last = now.replace(minute=0, second=0, microsecond=0)
    first = last - timedelta(hours=HOURS - 1)
    rows = (Task.objects.filter(space=space, status=TaskStatus.DONE, updated_at__gte=first).order_by()
            .annotate(hour=TruncHour("updated_at")).values("hour").annotate(n=Count("pk")).values_list("hour", "n"))
    counts = [0] * HOURS
    for hour, n in rows:
        index = int((hour - first).total_seconds() // 3600)
        if 0 <= index < HOURS:
            counts[index] += n
    return {"first_hour": first, "done": counts}


def space_summary(space: Space) -> dict[str, Any]:
    """SPEC §14's figures for one space."""
    now = timezone.now()
    counts = live_counts(space, now)
    by_status = {status.value: counts.get(status.value, (0, 0))[0] for status in LIVE_STATUSES}
    open_total, open_blocked = counts.get(TaskStatus.OPEN.value, (0, 0))
    return {
        "space": space.slug,
        "generated_at": now,
        "live": sum(by_status.values()),
        "by_status": by_status,
        "done_last_7_days": Task.objects.filter(space=space, status=TaskStatus.DONE,
                                                updated_at__gte=now - RECENT_DONE).count(),
        "ready": open_total - open_blocked,
        "blocked": sum(blocked for _, blocked in counts.values()),
        "awaiting_check": Attempt.objects.filter(space=space, state=AttemptState.WAITING).count(),
        "claims_by_member": claims_by_member(space, now),
        "oldest_ready": oldest_ready(space, now),
        "duplicates_prevented_24h": allocation.conflicts_since(space.pk, now - DUPLICATES_WINDOW),
        "slots": slot_counts(space),
        "cost": month_cost(space, now),
    }


def month_cost(space: Space, now) -> dict[str, Any]:
    """SPEC §19: the space's spend this calendar month (one row) against its budget, and the cost
    per accepted outcome of the month."""
    start = month_start(now)
    outcome = cost_selectors.per_accepted_outcome(space.pk, since=start, until=now)
    return {"month": start.date().isoformat()[:7], "spend_usd": float(month_spend(space.pk, now)),
            "budget_usd": float(space.budget_usd) if space.budget_usd is not None else None,
            "accepted": outcome["accepted"], "per_accepted_usd": outcome["per_accepted_usd"]}
