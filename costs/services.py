"""Spend reports and budgets (SPEC §19).

A report is a claim's spend so far (a heartbeat's running total, a done's or give-back's final
one), or, for a done without a claim, its attempt's. It replaces the row's earlier figures
and moves the month's running total by the difference, in one statement, under the task's row
lock the caller holds (so one claim's reports never race each other); the totals are added in
the database, exact (``numeric``), never in a process. Many reports of one space at once queue
on the month's row for the moment of their statement: the space passes its budget by at most
the reports that were already made when it was reached (docs/architecture.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Callable

from django.db import connection
from django.db.models import Sum
from django.utils import timezone

from costs.errors import BudgetExhausted
from costs import sql
from costs.models import Spend
from costs.selectors import month_figures, month_of
from events import feed


@dataclass(frozen=True)
class Cost:
    """One report's figures (validated by ``costs.serializers.CostSerializer``)."""

    usd: Decimal = Decimal(0)
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: Decimal = Decimal(0)
    model: str = ""


def report(*, space, task_id: int, member_id: int, cost: Cost, claim_id: int | None = None,
           attempt_id: int | None = None, now: datetime | None = None) -> None:
    """Record ``cost`` as the spend of ``claim_id`` (or, with none, of the claimless
    ``attempt_id``), in the caller's transaction; the month's total moves by the difference, and
    a crossed mark of the space's budget is an event of its feed (once a month each)."""
    now = now or timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(sql.report(), {
            "space": space.pk, "task": task_id, "claim": claim_id, "attempt": attempt_id, "member": member_id,
            "model": cost.model, "usd": cost.usd, "input_tokens": cost.input_tokens,
            "output_tokens": cost.output_tokens, "seconds": cost.seconds, "now": now, "month": month_of(now),
            "budget": space.budget_usd,
        })
        total, threshold, exhausted = cursor.fetchone()
    figures = {"spend_usd": float(total), "budget_usd": float(space.budget_usd or 0), "month": month_of(now).isoformat()[:7]}
    if threshold:
        feed.record(space_id=space.pk, type="budget.threshold", data=figures)
    if exhausted:
        feed.record(space_id=space.pk, type="budget.exhausted", data=figures)


def space_over_budget(space, *, claims_in_flight: Callable[[], int] | None = None) -> BudgetExhausted | None:
    """The ``409 budget_exhausted`` to answer when the space's spend this month has reached its
    budget; None while it has not (or it has no budget: then nothing is read).

    ``claims_in_flight`` (``next``; the tasks app counts its live claims): each is counted as
    the month's average spend per claim (its spend over the claims and claimless attempts that
    reported) against what is left, so work is not handed out that the claims already out are
    expected to spend. The month's row, and the count only when it is needed."""
    if space.budget_usd is None:
        return None
    spent, sources = month_figures(space.pk)
    figures = {"spend_usd": float(spent), "budget_usd": float(space.budget_usd), "scope": "space"}
    if spent >= space.budget_usd:
        return BudgetExhausted(
            f"This space spent {spent} USD this month, its budget is {space.budget_usd} USD: nothing is handed out "
            "until a steward raises the budget or the month turns.", **figures)
    if claims_in_flight is None or not sources:
        return None
    in_flight = claims_in_flight()
    if in_flight and spent + in_flight * spent / sources >= space.budget_usd:
        return BudgetExhausted(
            f"This space spent {spent} USD of its {space.budget_usd} USD this month, and its {in_flight} claim(s) "
            f"in flight are expected to spend what is left ({(spent / sources).quantize(Decimal('0.000001'))} USD "
            "a claim on average): nothing more is handed out until they end, a steward raises the budget or the "
            "month turns.", claims_in_flight=in_flight, **figures)
    return None


def check_space_budget(space, *, claims_in_flight: Callable[[], int]) -> None:
    """``next``: refused while the space's budget is reached, the claims in flight counted."""
    refusal = space_over_budget(space, claims_in_flight=claims_in_flight)
    if refusal is not None:
        raise refusal


def task_spend(space_id: int, task_id: int) -> Decimal:
    """The task's spend: the sum over its claims' and claimless attempts' reports, in the database."""
    return Spend.objects.filter(space_id=space_id, task_id=task_id).aggregate(usd=Sum("usd"))["usd"] or Decimal(0)


def task_over_budget(task) -> BudgetExhausted | None:
    """The ``409 budget_exhausted`` to answer when the task's spend has reached its budget; None
    while it has not (or it has no budget: then nothing is read)."""
    if task.budget_usd is None:
        return None
    spent = task_spend(task.space_id, task.pk)
    if spent >= task.budget_usd:
        return BudgetExhausted(
            f"Task {task.number} spent {spent} USD, its budget is {task.budget_usd} USD: stop working on it "
            "(a done still counts as an attempt).",
            spend_usd=float(spent), budget_usd=float(task.budget_usd), scope="task")
    return None
