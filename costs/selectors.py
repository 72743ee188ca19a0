"""What work cost, read (SPEC §19): a task's figures, a space's grouped over a period, the cost
per accepted outcome, and the condition ``next`` asks of a task's budget. Every sum is the
database's."""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import connection
from django.db.models import DecimalField, OuterRef, Q, Subquery, Sum, Value
from django.db.models.functions import Coalesce

from costs.models import Spend

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


# Spend wasted: on a claim given back or lapsed, or whose attempt (same task, cycle and
# member) was rejected; or on a claimless attempt that was rejected.
WASTED = """(c.end_reason IN ('gave_back', 'lapsed')
  OR EXISTS (SELECT 1 FROM tasks_attempt a WHERE a.space_id = s.space_id AND a.task_id = s.task_id
             AND a.state = 'rejected' AND ((c.id IS NOT NULL AND a.cycle = c.cycle AND a.member_id = c.member_id)
                                          OR a.id = s.attempt_id)))"""
FROM_SPENDS = "FROM costs_spend s LEFT JOIN tasks_claim c ON c.space_id = s.space_id AND c.id = s.claim_id"


def task_cost(space_id: int, task_id: int) -> dict[str, Any]:
    """A task's ``cost`` (SPEC §19): its spend, tokens, seconds, attempts and the spend wasted."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT coalesce(sum(s.usd), 0), coalesce(sum(s.input_tokens), 0), coalesce(sum(s.output_tokens), 0), "
            f"coalesce(sum(s.seconds), 0), coalesce(sum(s.usd) FILTER (WHERE {WASTED}), 0), "
            "(SELECT count(*) FROM tasks_attempt a WHERE a.space_id = %(space)s AND a.task_id = %(task)s) "
            f"{FROM_SPENDS} WHERE s.space_id = %(space)s AND s.task_id = %(task)s",
            {"space": space_id, "task": task_id})
        usd, tokens_in, tokens_out, seconds, wasted, attempts = cursor.fetchone()
    return {"usd": float(usd), "input_tokens": int(tokens_in), "output_tokens": int(tokens_out),
            "seconds": float(seconds), "attempts": attempts, "wasted_usd": float(wasted)}


def tasks_spend(space_id: int, task_ids: list[int]) -> dict[int, float]:
    """Each of these tasks' spend (a board's cards), in one statement."""
    rows = (Spend.objects.filter(space_id=space_id, task_id__in=task_ids).order_by().values("task_id")
            .annotate(usd=Sum("usd")).values_list("task_id", "usd"))
    return {task_id: float(usd) for task_id, usd in rows}


GROUP_SQL = {
    "member": ("m.name", "JOIN spaces_member m ON m.space_id = s.space_id AND m.id = s.member_id"),
    "model": ("s.model", ""),
    "work_item_id": ("t.work_item_id", "JOIN tasks_task t ON t.space_id = s.space_id AND t.id = s.task_id"),
    "label": ("l.label", "JOIN tasks_task t ON t.space_id = s.space_id AND t.id = s.task_id "
                         "CROSS JOIN LATERAL unnest(t.labels) AS l(label)"),
}


def space_costs(space_id: int, *, since: datetime, until: datetime, group_by: str) -> list[dict[str, Any]]:
    """Spend reported in ``[since, until)``, per group, largest first. A task's spend counts in each
    of its labels' groups; a report with no model is in the group ``""``."""
    key, join = GROUP_SQL[group_by]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {key}, sum(s.usd), sum(s.input_tokens), sum(s.output_tokens), sum(s.seconds), "
            f"sum(s.usd) FILTER (WHERE {WASTED}), count(DISTINCT s.task_id) "
            f"{FROM_SPENDS} {join} WHERE s.space_id = %(space)s AND s.reported_at >= %(since)s "
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
            "WITH accepted AS (SELECT DISTINCT a.task_id FROM tasks_attempt a WHERE a.space_id = %(space)s "
            "AND a.state = 'accepted' AND a.decided_at >= %(since)s AND a.decided_at < %(until)s) "
            "SELECT count(*), coalesce(sum((SELECT sum(s.usd) FROM costs_spend s WHERE s.space_id = %(space)s "
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
