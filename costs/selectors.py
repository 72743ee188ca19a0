"""What work cost, read (SPEC §19): a task's figures, a space's grouped over a period, the cost
per accepted outcome, and the condition ``next`` asks of a task's budget. Every sum is the
database's."""
from __future__ import annotations

from datetime import date, datetime
from datetime import timezone as dt_timezone
from decimal import Decimal
from typing import Any

from django.db import connection
from django.db.models import DecimalField, OuterRef, Q, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from costs import sql
from costs.models import MonthSpend, Spend

GROUPS = ("member", "label", "model", "work_item_id")


def spent_on_task() -> Subquery:
    """The spend of the task in the outer query (``OuterRef``): a sum over its few report rows."""
    spends = (Spend.objects.filter(space_id=OuterRef("space_id"), task_id=OuterRef("pk")).order_by()
              .values("task_id").annotate(usd=Sum("usd")).values("usd"))
    return Subquery(spends, output_field=DecimalField(max_digits=20, decimal_places=6))


def within_budget() -> Q:
    """A task ``next`` may still hand out: without a budget, or spent below it (SPEC §19). The
    sum runs only for the rare task with a budget."""
    zero = Value(Decimal(0), output_field=DecimalField(max_digits=20, decimal_places=6))
    return Q(budget_usd__isnull=True) | Q(budget_usd__gt=Coalesce(spent_on_task(), zero))


def task_cost(space_id: int, task_id: int) -> dict[str, Any]:
    """A task's ``cost`` (SPEC §19): its spend, tokens, seconds, attempts and the spend wasted."""
    with connection.cursor() as cursor:
        cursor.execute(sql.task_cost(), {"space": space_id, "task": task_id})
        usd, tokens_in, tokens_out, seconds, wasted, attempts = cursor.fetchone()
    return {"usd": float(usd), "input_tokens": int(tokens_in), "output_tokens": int(tokens_out),
            "seconds": float(seconds), "attempts": attempts, "wasted_usd": float(wasted)}


def tasks_spend(space_id: int, task_ids: list[int]) -> dict[int, float]:
    """Each of these tasks' spend (a board's cards), in one statement."""
    rows = (Spend.objects.filter(space_id=space_id, task_id__in=task_ids).order_by().values("task_id")
            .annotate(usd=Sum("usd")).values_list("task_id", "usd"))
    return {task_id: float(usd) for task_id, usd in rows}


def space_costs(space_id: int, *, since: datetime, until: datetime, group_by: str) -> list[dict[str, Any]]:
    """Spend reported in ``[since, until)``, per group, largest first. A task's spend counts in each
    of its labels' groups; a report with no model is in the group ``""``."""
    with connection.cursor() as cursor:
        cursor.execute(sql.space_costs(group_by), {"space": space_id, "since": since, "until": until})
        rows = cursor.fetchall()
    return [{"group": group if group is not None else "", "usd": float(usd), "input_tokens": int(tokens_in),
             "output_tokens": int(tokens_out), "seconds": float(seconds), "wasted_usd": float(wasted or 0),
             "tasks": tasks} for group, usd, tokens_in, tokens_out, seconds, wasted, tasks in rows]


def per_accepted_outcome(space_id: int, *, since: datetime, until: datetime) -> dict[str, Any]:
    """The cost per accepted outcome: all spend on the tasks whose attempt was accepted in
    ``[since, until)``, divided by how many they are (None when there are none)."""
    with connection.cursor() as cursor:
        cursor.execute(sql.per_accepted_outcome(), {"space": space_id, "since": since, "until": until})
        outcomes, usd = cursor.fetchone()
    return {"accepted": outcomes, "usd": float(usd),
            "per_accepted_usd": float((usd / outcomes).quantize(Decimal("0.000001"))) if outcomes else None}


def period_spend(space_id: int, *, since: datetime, until: datetime) -> dict[str, Any]:
    """All spend reported in ``[since, until)``, summed once (a label's groups overlap; this does not)."""
    found = Spend.objects.filter(space_id=space_id, reported_at__gte=since, reported_at__lt=until).aggregate(
        usd=Sum("usd"), input_tokens=Sum("input_tokens"), output_tokens=Sum("output_tokens"), seconds=Sum("seconds"))
    return {"usd": float(found["usd"] or 0), "input_tokens": int(found["input_tokens"] or 0),
            "output_tokens": int(found["output_tokens"] or 0), "seconds": float(found["seconds"] or 0)}


def month_of(moment: datetime) -> date:
    """The calendar month (UTC) a moment falls in, as its first day."""
    return moment.astimezone(dt_timezone.utc).date().replace(day=1)


def month_start(moment: datetime) -> datetime:
    first = month_of(moment)
    return datetime(first.year, first.month, 1, tzinfo=dt_timezone.utc)


def month_figures(space_id: int, now: datetime | None = None) -> tuple[Decimal, int]:
    """The space's spend this calendar month (UTC) and the claims and claimless attempts that
    reported it: one row."""
    found = MonthSpend.objects.filter(space_id=space_id, month=month_of(now or timezone.now())).values_list(
        "usd", "sources").first()
    return found if found is not None else (Decimal(0), 0)


def month_spend(space_id: int, now: datetime | None = None) -> Decimal:
    """The space's spend this calendar month (UTC): one row."""
    return month_figures(space_id, now)[0]
