"""What work cost, read (SPEC §19): a task's figures, a space's grouped over a period, the cost
per accepted outcome, and the condition ``next`` asks of a task's budget. Every sum is the
database's."""
from __future__ import annotations

from datetime import date, datetime
from datetime import timezone as dt_timezone
from decimal import Decimal
from functools import cache
from typing import Any

from django.db import connection
from django.db.models import DecimalField, OuterRef, Q, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from common.sql import table
from costs.models import MonthSpend, Spend

GROUPS = ("member", "label", "model", "work_item_id")
THRESHOLD = Decimal("0.8")  # budget.threshold at 80% of the space's month budget


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


def spend_table(relation: str | None = None) -> str:
    """The spend table, or, by one of its relations (``task``, ``claim``, ``attempt``, ``member``),
    the table that relation's app hands out in its model: no table named by hand."""
    model = Spend if relation is None else Spend._meta.get_field(relation).related_model
    return table(model)


@cache
def wasted_sql() -> str:
    """Spend wasted: on a claim given back or lapsed, or whose attempt (same task, cycle and
    member) was rejected; or on a claimless attempt that was rejected."""
    return f"""(c.end_reason IN ('gave_back', 'lapsed')
  OR EXISTS (SELECT 1 FROM {spend_table("attempt")} a WHERE a.space_id = s.space_id AND a.task_id = s.task_id
             AND a.state = 'rejected' AND ((c.id IS NOT NULL AND a.cycle = c.cycle AND a.member_id = c.member_id)
                                          OR a.id = s.attempt_id)))"""


@cache
def from_spends() -> str:
    """Each report (``s``) with its claim (``c``), if it had one."""
    return f"FROM {spend_table()} s LEFT JOIN {spend_table('claim')} c ON c.space_id = s.space_id AND c.id = s.claim_id"


def task_cost(space_id: int, task_id: int) -> dict[str, Any]:
    """A task's ``cost`` (SPEC §19): its spend, tokens, seconds, attempts and the spend wasted."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT coalesce(sum(s.usd), 0), coalesce(sum(s.input_tokens), 0), coalesce(sum(s.output_tokens), 0), "
            f"coalesce(sum(s.seconds), 0), coalesce(sum(s.usd) FILTER (WHERE {wasted_sql()}), 0), "
            f"(SELECT count(*) FROM {spend_table('attempt')} a WHERE a.space_id = %(space)s AND a.task_id = %(task)s) "
            f"{from_spends()} WHERE s.space_id = %(space)s AND s.task_id = %(task)s",
            {"space": space_id, "task": task_id})
        usd, tokens_in, tokens_out, seconds, wasted, attempts = cursor.fetchone()
    return {"usd": float(usd), "input_tokens": int(tokens_in), "output_tokens": int(tokens_out),
            "seconds": float(seconds), "attempts": attempts, "wasted_usd": float(wasted)}


def tasks_spend(space_id: int, task_ids: list[int]) -> dict[int, float]:
    """Each of these tasks' spend (a board's cards), in one statement."""
    rows = (Spend.objects.filter(space_id=space_id, task_id__in=task_ids).order_by().values("task_id")
            .annotate(usd=Sum("usd")).values_list("task_id", "usd"))
    return {task_id: float(usd) for task_id, usd in rows}


@cache
def group_sql(group_by: str) -> tuple[str, str]:
    """A group's key and the join that reaches it (a label's: each of the task's labels)."""
    task_join = f"JOIN {spend_table('task')} t ON t.space_id = s.space_id AND t.id = s.task_id"
    return {
        "member": ("m.name", f"JOIN {spend_table('member')} m ON m.space_id = s.space_id AND m.id = s.member_id"),
        "model": ("s.model", ""),
        "work_item_id": ("t.work_item_id", task_join),
        "label": ("l.label", f"{task_join} CROSS JOIN LATERAL unnest(t.labels) AS l(label)"),
    }[group_by]


def space_costs(space_id: int, *, since: datetime, until: datetime, group_by: str) -> list[dict[str, Any]]:
    """Spend reported in ``[since, until)``, per group, largest first. A task's spend counts in each
    of its labels' groups; a report with no model is in the group ``""``."""
    key, join = group_sql(group_by)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {key}, sum(s.usd), sum(s.input_tokens), sum(s.output_tokens), sum(s.seconds), "
            f"sum(s.usd) FILTER (WHERE {wasted_sql()}), count(DISTINCT s.task_id) "
            f"{from_spends()} {join} WHERE s.space_id = %(space)s AND s.reported_at >= %(since)s "
            f"AND s.reported_at < %(until)s GROUP BY 1 ORDER BY 2 DESC, 1",
            {"space": space_id, "since": since, "until": until})
        rows = cursor.fetchall()
    return [{"group": group if group is not None else "", "usd": float(usd), "input_tokens": int(tokens_in),
             "output_tokens": int(tokens_out), "seconds": float(seconds), "wasted_usd": float(wasted or 0),
             "tasks": tasks} for group, usd, tokens_in, tokens_out, seconds, wasted, tasks in rows]


def per_accepted_outcome(space_id: int, *, since: datetime, until: datetime) -> dict[str, Any]:
    """The cost per accepted outcome: all spend on the tasks whose attempt was accepted in
    ``[since, until)``, divided by how many they are (None when there are none)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH accepted AS (SELECT DISTINCT a.task_id FROM {spend_table('attempt')} a WHERE a.space_id = %(space)s "
            "AND a.state = 'accepted' AND a.decided_at >= %(since)s AND a.decided_at < %(until)s) "
            f"SELECT count(*), coalesce(sum((SELECT sum(s.usd) FROM {spend_table()} s WHERE s.space_id = %(space)s "
            "AND s.task_id = accepted.task_id)), 0) FROM accepted",
            {"space": space_id, "since": since, "until": until})
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
