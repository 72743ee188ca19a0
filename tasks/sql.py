"""The tasks app's own SQL: each statement it writes by hand, named and commented, built once
from the models' metadata (tables and columns from ``_meta``, value lists from
``common.sql.insert_select``), so a renamed column or a new field cannot be missed. The
modules that run them (services, claims, graph, lifecycle) pass the parameters.

Other apps' tables appear only through the parts their owners hand out:
``allocation.services.mutation_ctes`` (the reservation and the occupancy) and
``spaces.sql.next_task_number_cte`` (the space's task counter).
"""
from __future__ import annotations

from functools import cache


from allocation import services as allocation
from common.sql import column, insert_select, quote, table
from spaces.models import Member
from spaces.sql import next_task_number_cte
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
def create_task_sql() -> str:
    taken, occupied = allocation.mutation_ctes()
    task_values = {
        "space": "%(space)s", "number": "task_counter", "title": "%(title)s", "body": "%(body)s",
        "delivery_mode": "%(delivery_mode)s", "work_item_id": "%(work_item_id)s", "conflict_kind": "%(kind)s",
        "conflict_target": "%(target)s", "status": "%(status)s", "cycle": "%(cycle)s", "creator": "%(creator)s",
        "received_seq": "%(received_seq)s", "payload_sha256": "%(payload_sha256)s", "superseded_by": "NULL",
        "closed_by": "NULL", "closed_at": "NULL", "close_reason": "''", "created_at": "%(now)s",
        "updated_at": "%(now)s", "priority": "%(priority)s", "labels": "%(labels)s::varchar[]",
        "budget_usd": "%(budget_usd)s::numeric",
        "title_terms": "%(terms)s::text[]",
    }
    term_values = {"space": "%(space)s", "term": "u.term", "task": "created.id"}
    label_values = {"space": "%(space)s", "label": "l.label"}
    event_values = {"space": "%(space)s", "task": "created.id", "kind": f"'{EventKind.CREATED.value}'",
                    "actor": "%(creator)s", "details": "%(details)s::jsonb", "created_at": "%(now)s"}

    return (
        f"WITH {taken}, "
        f"{next_task_number_cte(name='numbered', space='%(space)s', only_if='taken')}, "
        f"created AS ({insert_select(Task, task_values)} FROM numbered RETURNING id, number), "
        f"{occupied}, "
        f"event AS ({insert_select(TaskEvent, event_values)} FROM created), "
        f"indexed AS ({insert_select(TitleTerm, term_values)} FROM created, "
        f"unnest(%(terms)s::text[] || ARRAY[{LIVE_TERM!r}]) AS u(term)), "
        f"labelled AS ({insert_select(SpaceLabel, label_values)} FROM created, "
        "unnest(%(labels)s::varchar[]) AS l(label) ON CONFLICT DO NOTHING) "
        f"SELECT id, number, CASE WHEN %(wake)s THEN {wakeups.notify_sql('%(space)s', '%(wake_context)s')} END FROM created"
    )


@cache
def task_winner_sql() -> str:
    """The occupying task a 409 names (number and status), for allocation's reserve statement,
    which reads the occupancy row as ``o``; names from the model, as every statement here."""
    field = Task._meta.get_field
    return (f"SELECT {quote(field('number').column)}, {quote(field('status').column)} "
            f"FROM {quote(Task._meta.db_table)} WHERE {quote(Task._meta.pk.column)} = o.task_id")


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
