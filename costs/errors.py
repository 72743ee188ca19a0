"""The refusals of cost and budgets (SPEC §19)."""
from __future__ import annotations

from common.refusals import DomainError


class BudgetExhausted(DomainError):
    code = "budget_exhausted"
    http_status = 409
    title = "Budget exhausted"
    meaning = ("The spend has reached its budget: the space's this month (`next` hands out nothing until a steward "
               "raises it or the month turns) or the task's (its holders stop; a done is still an attempt). "
               "`spend_usd` and `budget_usd` say how much.")
