"""The costs app's hand-written SQL, each statement named and built from the models' metadata:
the report's one statement (``costs.services.report``), and the parts the reads of what work
cost are made of (``costs.selectors``). Another app's table is reached through a relation of
``Spend`` (its model, as that app hands it out), never named by hand."""
from __future__ import annotations

from functools import cache

from common.sql import table
from costs.models import THRESHOLD, MonthSpend, Spend


@cache
def report() -> str:
    """Upsert the source's row, then add the difference to the month's total, noting when the
    month crosses 80% and 100% of ``budget`` (NULL: no budget). Returns the month's total and
    whether this report crossed each mark."""
    spend, month = Spend._meta.db_table, MonthSpend._meta.db_table
    figures = ("usd", "input_tokens", "output_tokens", "seconds")
    old = ", ".join(f"coalesce((SELECT {f} FROM previous), 0) AS {f}" for f in figures)
    set_figures = ", ".join(f"{f} = EXCLUDED.{f}" for f in figures)
    delta = ", ".join(f"put.{f} - old.{f}" for f in figures)
    add = ", ".join(f"{f} = m.{f} + EXCLUDED.{f}" for f in figures)

    def crossed(mark: str, total: str, was: str) -> str:
        return (f"CASE WHEN {was} IS NULL AND %(budget)s::numeric IS NOT NULL AND {total} >= {mark} * %(budget)s "
                f"THEN %(now)s ELSE {was} END")

    return (
        f"WITH previous AS (SELECT {', '.join(figures)} FROM {spend} WHERE space_id = %(space)s "
        "AND (claim_id = %(claim)s::bigint OR (%(claim)s::bigint IS NULL AND claim_id IS NULL "
        "AND attempt_id = %(attempt)s::bigint))), "
        f"old AS (SELECT {old}), "
        f"put AS (INSERT INTO {spend} (space_id, task_id, claim_id, attempt_id, member_id, model, usd, input_tokens, "
        "output_tokens, seconds, reported_at) VALUES (%(space)s, %(task)s, %(claim)s, %(attempt)s, %(member)s, "
        "%(model)s, %(usd)s, %(input_tokens)s, %(output_tokens)s, %(seconds)s, %(now)s) "
        "ON CONFLICT (space_id, claim_id) WHERE claim_id IS NOT NULL DO UPDATE SET "
        f"{set_figures}, attempt_id = coalesce(EXCLUDED.attempt_id, {spend}.attempt_id), "
        f"model = CASE WHEN EXCLUDED.model <> '' THEN EXCLUDED.model ELSE {spend}.model END, "
        "reported_at = EXCLUDED.reported_at "
        f"RETURNING {', '.join(figures)}), "
        f"total AS (INSERT INTO {month} AS m (space_id, month, {', '.join(figures)}, sources, threshold_at, "
        f"exhausted_at) SELECT %(space)s, %(month)s, {delta}, (NOT EXISTS (SELECT FROM previous))::int, "
        f"{crossed(str(THRESHOLD), 'put.usd - old.usd', 'NULL::timestamptz')}, "
        f"{crossed('1', 'put.usd - old.usd', 'NULL::timestamptz')} FROM put, old "
        f"ON CONFLICT (space_id, month) DO UPDATE SET {add}, sources = m.sources + EXCLUDED.sources, "
        f"threshold_at = {crossed(str(THRESHOLD), 'm.usd + EXCLUDED.usd', 'm.threshold_at')}, "
        f"exhausted_at = {crossed('1', 'm.usd + EXCLUDED.usd', 'm.exhausted_at')} "
        "RETURNING usd, threshold_at = %(now)s, exhausted_at = %(now)s) "
        "SELECT * FROM total"
    )


def spend_table(relation: str | None = None) -> str:
    """The spend table, or, by one of its relations (``task``, ``claim``, ``attempt``, ``member``),
    the table that relation's app hands out in its model: no table named by hand."""
    model = Spend if relation is None else Spend._meta.get_field(relation).related_model
    return table(model)


@cache
def wasted() -> str:
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


@cache
def group(group_by: str) -> tuple[str, str]:
    """A group's key and the join that reaches it (a label's: each of the task's labels)."""
    task_join = f"JOIN {spend_table('task')} t ON t.space_id = s.space_id AND t.id = s.task_id"
    return {
        "member": ("m.name", f"JOIN {spend_table('member')} m ON m.space_id = s.space_id AND m.id = s.member_id"),
        "model": ("s.model", ""),
        "work_item_id": ("t.work_item_id", task_join),
        "label": ("l.label", f"{task_join} CROSS JOIN LATERAL unnest(t.labels) AS l(label)"),
    }[group_by]


@cache
def task_cost() -> str:
    """A task's spend, tokens, seconds, spend wasted and attempts (one row). Params: space, task."""
    return ("SELECT coalesce(sum(s.usd), 0), coalesce(sum(s.input_tokens), 0), coalesce(sum(s.output_tokens), 0), "
            f"coalesce(sum(s.seconds), 0), coalesce(sum(s.usd) FILTER (WHERE {wasted()}), 0), "
            f"(SELECT count(*) FROM {spend_table('attempt')} a WHERE a.space_id = %(space)s AND a.task_id = %(task)s) "
            f"{from_spends()} WHERE s.space_id = %(space)s AND s.task_id = %(task)s")


@cache
def space_costs(group_by: str) -> str:
    """Spend reported in ``[since, until)`` per group, largest first: rows (group, usd, input
    tokens, output tokens, seconds, wasted, tasks). Params: space, since, until."""
    key, join = group(group_by)
    return (f"SELECT {key}, sum(s.usd), sum(s.input_tokens), sum(s.output_tokens), sum(s.seconds), "
            f"sum(s.usd) FILTER (WHERE {wasted()}), count(DISTINCT s.task_id) "
            f"{from_spends()} {join} WHERE s.space_id = %(space)s AND s.reported_at >= %(since)s "
            "AND s.reported_at < %(until)s GROUP BY 1 ORDER BY 2 DESC, 1")


@cache
def per_accepted_outcome() -> str:
    """How many tasks had an attempt accepted in ``[since, until)``, and all spend on them.
    Params: space, since, until."""
    return (f"WITH accepted AS (SELECT DISTINCT a.task_id FROM {spend_table('attempt')} a WHERE a.space_id = %(space)s "
            "AND a.state = 'accepted' AND a.decided_at >= %(since)s AND a.decided_at < %(until)s) "
            f"SELECT count(*), coalesce(sum((SELECT sum(s.usd) FROM {spend_table()} s WHERE s.space_id = %(space)s "
            "AND s.task_id = accepted.task_id)), 0) FROM accepted")
