"""Statements composed of typed parts (common.sql): a wrong part, column or parameter name fails
when the statement is built or first run, never by sending a wrong value."""
from __future__ import annotations

import pytest

from allocation import sql as allocation
from common.sql import Cte, Statement, with_query
from spaces.sql import next_task_number
from tasks.sql import create_task_statement, task_winner


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict]] = []

    def execute(self, sql: str, parameters: dict) -> None:
        self.sent.append((sql, parameters))


def test_every_composed_statement_builds_with_its_parts_in_order():
    create = create_task_statement()
    order = [create.sql.index(f"{name} AS (") for name in
             ("dropped", "taken", "numbered", "created", "occupied", "event", "indexed", "labelled")]
    assert order == sorted(order)  # each part after the parts it reads, allocation's and spaces' included
    assert {"reservation", "lock_member", "lock_key", "space", "terms", "wake"} <= create.parameters
    for with_hold in (True, False):
        for winner in (task_winner, allocation.no_task_winner):
            reserve = allocation.reserve(with_hold, winner)
            assert reserve.sql.startswith("WITH not_durable AS MATERIALIZED (")
            assert "winner.number" in reserve.sql


def test_a_column_a_part_does_not_yield_fails_when_built():
    taken = allocation.reservation_taken()
    assert taken.col("id") == "taken.id"
    with pytest.raises(KeyError, match="yields no column 'task_id'"):
        taken.col("task_id")
    with pytest.raises(KeyError):
        allocation.occupancy_of(Cte("created", "SELECT 1 AS number", columns=("number",)))  # no id to occupy


def test_a_part_is_placed_after_what_it_reads_and_two_parts_of_one_name_are_refused():
    first = Cte("first", "SELECT 1 AS n", columns=("n",))
    second = Cte("second", f"SELECT {first.col('n')} FROM {first}", reads=(first,))
    statement = with_query("example", [second], f"SELECT * FROM {second}", reads=(second,))
    assert statement.sql == ("WITH first AS (SELECT 1 AS n), second AS (SELECT first.n FROM first) "
                             "SELECT * FROM second")
    other_first = Cte("first", "SELECT 2 AS n", columns=("n",))
    with pytest.raises(ValueError, match="two different parts are named first"):
        with_query("clash", [second, other_first], "SELECT 1")
    numbered = next_task_number(only_if=allocation.reservation_taken())
    assert numbered.reads == (allocation.reservation_taken(),) and numbered.columns == ("task_counter",)


def test_a_statement_refuses_parameters_its_sql_does_not_name():
    statement = Statement("example", "SELECT %(space)s, %(now)s")
    cursor = Recorder()
    statement.run(cursor, {"space": 1, "now": 2})
    assert cursor.sent == [("SELECT %(space)s, %(now)s", {"space": 1, "now": 2})]
    with pytest.raises(TypeError, match=r"example: parameters missing \['now'\], unknown \['when'\]"):
        statement.run(cursor, {"space": 1, "when": 2})
    assert len(cursor.sent) == 1  # nothing was sent
