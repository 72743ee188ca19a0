"""The ``cost`` section of GET /v1/reference: spend and budgets (SPEC §19), from the code that keeps them."""
from __future__ import annotations

from costs.selectors import GROUPS
from costs.serializers import MAX_USD
from costs.models import THRESHOLD
from fronts.reference import register_section
from fronts.reference.tasks import refusal


@register_section("cost")
def cost_section() -> dict:
    return {
        "summary": "Report what your work spent; a task answers what it cost, the space what an accepted outcome "
        "costs, and budgets stop the handing out of work when they are spent.",
        "report": {
            "on": ["POST …/tasks/{n}/heartbeat", "POST …/tasks/{n}/give-back", "POST …/tasks/{n}/done"],
            "field": {"cost": {"usd": f"a JSON number, 0-{MAX_USD}, at most 6 decimal places",
                               "input_tokens": "integer ≥ 0", "output_tokens": "integer ≥ 0",
                               "seconds": "number ≥ 0 (kept to the millisecond)", "model": "text, at most 100"}},
            "rule": "each report is your claim's spend so far and replaces its earlier one (a heartbeat's: the "
                    "running total; a done's or give-back's: the final total); a done without a claim reports "
                    "for its attempt",
        },
        "figures": {
            "task": "GET …/tasks/{n} answers cost: {usd, input_tokens, output_tokens, seconds, attempts, wasted_usd} "
                    "(wasted: on claims given back or lapsed and attempts rejected)",
            "space": f"GET /v1/spaces/{{slug}}/costs?since=&until=&group_by={'|'.join(GROUPS)} (any member; default "
                     "this calendar month, by member): totals per group, the period's spend and the cost per "
                     "accepted outcome (spend on the tasks accepted in the period ÷ their number)",
            "summary": "GET …/summary answers cost: {month, spend_usd, budget_usd, accepted, per_accepted_usd}",
        },
        "budgets": {
            "space": "PATCH /v1/spaces/{slug} {\"budget_usd\": N or null} (steward): per calendar month, UTC; at it "
                     "next (waited too) and holders' heartbeats answer 409 budget_exhausted; next also counts the "
                     "claims in flight at the month's average spend a claim against what is left; creating, "
                     "checking and reading go on",
            "task": "budget_usd at create or by PATCH …/tasks/{n}: at it next hands the task out no more and its "
                    "holders' heartbeats answer 409 budget_exhausted (a done is still an attempt)",
            "events": f"budget.threshold at {int(THRESHOLD * 100)}% and budget.exhausted at 100% of the space's "
                      "budget, each once a month",
        },
        "mcp": "heartbeat, give_back and mark_done take cost; the space_costs tool",
        "cli": ["spaces work … (reports the command's wall time and the cost it wrote as JSON to $SPACES_COST_FILE)",
                "spaces costs [--since T] [--until T] [--group-by member|label|model|work_item_id]"],
        "refusals": [refusal("budget_exhausted")],
    }
