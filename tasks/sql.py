"""The tasks app's own SQL: each statement it writes by hand, named and commented, built once
from the models' metadata (tables and columns from ``_meta``, value lists from
``common.sql.insert_select``), so a renamed column or a new field cannot be missed. The
modules that run them (services, claims, graph, lifecycle) pass the parameters.

Other apps' tables appear only through the parts their owners hand out, as typed values
(``common.sql.Cte``) built from the parts they read: ``allocation.services.reservation_taken``
and ``occupancy_of`` (the reservation and the occupancy), ``spaces.sql.next_task_number``
(the space's task counter); this app hands allocation ``task_winner`` in return.
"""
from __future__ import annotations

from functools import cache


from allocation import services as allocation
from common.sql import Cte, Statement, column, insert_select, quote, table, with_query
from spaces.models import Member
from spaces.sql import next_task_number
from tasks import wakeups
from tasks.similarity import LIVE_TERM
from tasks.models import (
    Claim,
    ClaimOrigin,
    Dependency,
    EventKind,
    SlotDoneCount,
    SpaceLabel,
    Task,
    TaskEvent,
    TaskStatus,
    TitleTerm,
)


# --- Creating a task (tasks.services) ------------------------------------------------------

# The mutation of SPEC §4.5.4 as one statement: drop the reservation (only while it is still
# this intent's), number the task, insert it and its occupancy, and record the event. One
# statement, so all of it happens or none does, in one round trip; a reservation that was
# taken over creates nothing, so the occupancy's unique constraint is never the one to say no
# (it stays the last word all the same). A ready task wakes the agents waiting for work
# (tasks.wakeups) when the statement's transaction commits. The title's terms go into the
# similar-tasks index (SPEC §16): rows of the new task's own, so no other writer waits on them.
@cache
def create_task_statement() -> Statement:
    taken = allocation.reservation_taken()
    numbered = next_task_number(only_if=taken)
    task_values = {
        "space": "%(space)s", "number": numbered.col("task_counter"), "title": "%(title)s", "body": "%(body)s",
        "delivery_mode": "%(delivery_mode)s", "work_item_id": "%(work_item_id)s", "conflict_kind": "%(kind)s",
        "conflict_target": "%(target)s", "status": "%(status)s", "cycle": "%(cycle)s", "creator": "%(creator)s",
        "approver": "%(approver)s",
        "received_seq": "%(received_seq)s", "payload_sha256": "%(payload_sha256)s", "superseded_by": "NULL",
        "closed_by": "NULL", "closed_at": "NULL", "close_reason": "''", "created_at": "%(now)s",
        "updated_at": "%(now)s", "priority": "%(priority)s", "labels": "%(labels)s::varchar[]",
        "budget_usd": "%(budget_usd)s::numeric",
        "title_terms": "%(terms)s::text[]",
    }
    created = Cte("created", f"{insert_select(Task, task_values)} FROM {numbered} RETURNING id, number",
                  columns=("id", "number"), reads=(numbered,))
    event_values = {"space": "%(space)s", "task": created.col("id"), "kind": f"'{EventKind.CREATED.value}'",
                    "actor": "%(creator)s", "details": "%(details)s::jsonb", "created_at": "%(now)s"}
    event = Cte("event", f"{insert_select(TaskEvent, event_values)} FROM {created}", reads=(created,))
    term_values = {"space": "%(space)s", "term": "u.term", "task": created.col("id")}
    indexed = Cte("indexed", f"{insert_select(TitleTerm, term_values)} FROM {created}, "
                             f"unnest(%(terms)s::text[] || ARRAY[{LIVE_TERM!r}]) AS u(term)", reads=(created,))
    labelled = Cte("labelled", f"{insert_select(SpaceLabel, {'space': '%(space)s', 'label': 'l.label'})} "
                               f"FROM {created}, unnest(%(labels)s::varchar[]) AS l(label) ON CONFLICT DO NOTHING",
                   reads=(created,))
    return with_query(
        "create a task", [taken, numbered, created, allocation.occupancy_of(created), event, indexed, labelled],
        f"SELECT {created.col('id')}, {created.col('number')}, "
        f"CASE WHEN %(wake)s THEN {wakeups.notify_sql('%(space)s', '%(wake_context)s')} END FROM {created}",
        reads=(created,))


def task_winner(task_id: str) -> Cte:
    """The occupying task a 409 names, for allocation's reserve statement (``allocation.services.Winner``):
    the number and status of the task whose id is ``task_id`` (an SQL expression)."""
    return Cte("winner", f"SELECT {column(Task, 'number')} AS number, {column(Task, 'status')} AS status "
                         f"FROM {table(Task)} WHERE {column(Task, 'id')} = {task_id}", columns=("number", "status"))


# --- The work graph's locks and walk (tasks.graph) -----------------------------------------

# First keys of the two-key advisory lock space; the second is the space's or the task's id.
GRAPH_LOCK_CLASS = 13
UNBLOCKING_LOCK_CLASS = 14


# The space's graph lock: held by whoever adds edges between existing tasks. Params: class, space.
GRAPH_LOCK_SQL = "SELECT pg_advisory_xact_lock(%s, (%s %% 2147483647)::int)"


@cache
def share_lock_sql() -> str:
    """These tasks' rows ``FOR SHARE``, in id order, so none ends before the transaction does.
    Param: the ids."""
    return f"SELECT {column(Task, 'id')} FROM {table(Task)} WHERE {column(Task, 'id')} = ANY(%s) ORDER BY 1 FOR SHARE"


# The unblocking locks of these tasks, in the order given (id order). Param: the ids.
UNBLOCKING_LOCKS_SQL = (f"SELECT pg_advisory_xact_lock({UNBLOCKING_LOCK_CLASS}, (id %% 2147483647)::int) "
                        "FROM unnest(%s::bigint[]) WITH ORDINALITY AS held(id, n) ORDER BY n")


@cache
def reach_sql() -> str:
    """Everything a task waits on, transitively, with the edge that reached it: ``(id, via)``
    rows. The graph holds no cycle, so the walk ends; UNION keeps each edge once. Params:
    space, start."""
    edges, blocker, task, space = (table(Dependency), column(Dependency, "blocker"), column(Dependency, "task"),
                                   column(Dependency, "space"))
    return (f"WITH RECURSIVE reach(id, via) AS ("
            f" SELECT {blocker}, {task} FROM {edges} WHERE {space} = %(space)s AND {task} = %(start)s"
            f" UNION SELECT d.{blocker}, d.{task} FROM reach r JOIN {edges} d"
            f" ON d.{space} = %(space)s AND d.{task} = r.id) "
            "SELECT id, via FROM reach")


@cache
def remember_labels_sql() -> str:
    """The space's label list gains these labels (tasks.services.update_task). Params: space, labels."""
    return (f"{insert_select(SpaceLabel, {'space': '%(space)s', 'label': 'l.label'})} "
            "FROM unnest(%(labels)s::varchar[]) AS l(label) ON CONFLICT DO NOTHING")


# --- Counters (tasks.lifecycle) -----------------------------------------------------------


@cache
def count_done_sql() -> str:
    """One more done task for its catalog slot (the board's per-slot figures). Params: space,
    work item."""
    counts, space, item, done = (table(SlotDoneCount), column(SlotDoneCount, "space"),
                                 column(SlotDoneCount, "work_item_id"), column(SlotDoneCount, "done"))
    return (f"INSERT INTO {counts} ({space}, {item}, {done}) VALUES (%s, %s, 1) "
            f"ON CONFLICT ({space}, {item}) DO UPDATE SET {done} = {counts}.{done} + 1")
