"""The tasks app's own SQL: each statement it writes by hand, named and commented, built once
from the models' metadata (tables and columns from ``_meta``, value lists from
``common.sql.insert_select``), so a renamed column or a new field cannot be missed. The
modules that run them (services, claims, graph, lifecycle) pass the parameters.

Other apps' tables appear only through the parts their owners hand out, as typed values
(``common.sql.Cte``) built from the parts they read: ``allocation.sql.reservation_taken``
and ``occupancy_of`` (the reservation and the occupancy), ``spaces.sql.next_task_number``
(the space's task counter); this app hands allocation ``task_winner`` in return; the events
app's table is named by its model.

The rule the database keeps for this app as a trigger is here too (``history_into_feed``),
applied by ``tasks/migrations/0024_history_into_the_feed_by_name.py`` and held to the database's
definition by ``tests/events/test_triggers.py``.
"""
from __future__ import annotations

from datetime import datetime
from datetime import timezone as dt_timezone
from functools import cache

from django.contrib.postgres.fields import ArrayField
from django.db.models import CharField, Exists, Value

from allocation import sql as allocation
from events import sql as events_sql
from common.sql import (
    Cte, Placeholder, SqlFunction, Statement, Trigger, column, condition_sql, insert_select, named_sql, quote, table, with_query, written_fields,
)
from spaces.models import Member, Space
from spaces.sql import next_task_number
from events.models import Event
from tasks import caps
from tasks.filters import aged_head, ready_queue
from tasks.models import (
    PRIORITIES,
    Claim,
    ClaimOrigin,
    TaskStatus,
    Dependency,
    LIVE_TERM,
    EventKind,
    SlotDoneCount,
    SpaceLabel,
    Task,
    TaskEvent,
    TitleTerm,
    WaitSlot,
)


# --- Work made ready (tasks.wakeups, SPEC §15) -----------------------------------------------

WORK_CHANNEL = "spaces_work"


def notify_work(space: str, context: str) -> str:
    """The notification that work may be ready, as an SQL expression, for a statement that makes
    work ready by itself (a create): ``space`` is the SQL of the space's id, ``context`` of what
    ``tracing.wake_context`` gave (the payload is ``<space id>`` or ``<space id> <traceparent>``)."""
    return f"pg_notify('{WORK_CHANNEL}', ({space})::text || {context})"


# The same, sent on its own. Params: the space's id, the wake context.
WORK_READY = f"SELECT {notify_work('%s', '%s')}"


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
        "title_terms": "%(terms)s::text[]", "setbacks": "0", "ready_since": "%(now)s",
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
        f"CASE WHEN %(wake)s THEN {notify_work('%(space)s', '%(wake_context)s')} END FROM {created}",
        reads=(created,))


def task_winner(task_id: str) -> Cte:
    """The occupying task a 409 names, for allocation's reserve statement (``allocation.sql.Winner``):
    the number and status of the task whose id is ``task_id`` (an SQL expression)."""
    return Cte("winner", f"SELECT {column(Task, 'number')} AS number, {column(Task, 'status')} AS status "
                         f"FROM {table(Task)} WHERE {column(Task, 'id')} = {task_id}", columns=("number", "status"))


# --- The work graph's locks and walk (tasks.graph) -----------------------------------------

# First keys of the two-key advisory lock space; the second is the space's or the task's id.
GRAPH_LOCK_CLASS = 13
UNBLOCKING_LOCK_CLASS = 14
# A message's repeat check (SPEC §21: the same sender, thread and body within 24 h is one
# message): ADVISORY_XACT_LOCK of this class and the three folded into a number (tasks.messages).
MESSAGE_LOCK_CLASS = 16


# The space's graph lock (``common.sql.ADVISORY_XACT_LOCK`` of GRAPH_LOCK_CLASS and the space):
# held by whoever adds edges between existing tasks.


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


# --- Similar tasks (tasks.similarity, SPEC §16) ---------------------------------------------

@cache
def term_counts(cap: int) -> str:
    """How many live titles of the space have each term, counted up to ``cap`` (a term that
    common weighs as little as a weight gets; LIVE_TERM's count is the live titles'): ``(term,
    count)`` rows. Params: space, terms."""
    index, space, term = table(TitleTerm), column(TitleTerm, "space"), column(TitleTerm, "term")
    counted = (f"(SELECT count(*) FROM (SELECT 1 FROM {index} AS p WHERE p.{space} = %(space)s "
               f"AND p.{term} = {{}} LIMIT {cap}) AS c)")
    return f"SELECT q.term, {counted.format('q.term')} FROM unnest(%(terms)s::text[]) AS q(term)"


@cache
def similar_candidates(cap: int) -> str:
    """A title's best candidates and what scoring them needs. The candidates: live tasks (the
    index holds only those) with one of the title's probe terms, but ``exclude``; at most
    ``read`` of them are read, taken term by term in the order ``probe`` gives (rarest first),
    at most ``cap`` a term. Those that share at least ``bound`` of the title's weight (its terms
    come with their weights: ``terms``, ``weights``) are kept, the ``keep`` sharing most; then
    how many live titles have each of their terms not ``known``, counted up to ``cap``. Rows
    ``(id, number, title, status, terms, NULL, NULL)``, then ``(NULL, …, term, count)``. Params:
    space, terms, weights, probe, exclude, read, bound, keep, known."""
    index, space, term, task = (table(TitleTerm), column(TitleTerm, "space"), column(TitleTerm, "term"),
                                column(TitleTerm, "task"))
    tasks, task_id, terms = table(Task), column(Task, "id"), column(Task, "title_terms")
    shown = ", ".join(f"t.{column(Task, name)}" for name in ("id", "number", "title", "status", "title_terms"))
    return (f"WITH q AS (SELECT * FROM unnest(%(terms)s::text[], %(weights)s::float8[]) AS q(term, w)), "
            "found AS MATERIALIZED (SELECT f.task FROM unnest(%(probe)s::text[]) WITH ORDINALITY AS r(term, rank) "
            f"CROSS JOIN LATERAL (SELECT p.{task} AS task FROM {index} AS p WHERE p.{space} = %(space)s "
            f"AND p.{term} = r.term AND p.{task} IS DISTINCT FROM %(exclude)s LIMIT {cap}) AS f "
            "ORDER BY r.rank LIMIT %(read)s), "
            f"candidate AS MATERIALIZED (SELECT {shown}, (SELECT sum(q.w) FROM q WHERE q.term = ANY(t.{terms})) "
            f"AS shared FROM {tasks} AS t WHERE t.{task_id} IN (SELECT found.task FROM found)), "
            "best AS MATERIALIZED (SELECT * FROM candidate WHERE shared >= %(bound)s "
            f"ORDER BY shared DESC, {column(Task, 'number')} LIMIT %(keep)s), "
            f"other AS (SELECT DISTINCT u.term FROM best, unnest(best.{terms}) AS u(term) "
            "WHERE u.term <> ALL(%(known)s::text[])) "
            f"SELECT {', '.join(column(Task, n) for n in ('id', 'number', 'title', 'status', 'title_terms'))}, "
            "NULL::text, NULL::bigint FROM best "
            "UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, o.term, (SELECT count(*) FROM "
            f"(SELECT 1 FROM {index} AS p WHERE p.{space} = %(space)s AND p.{term} = o.term LIMIT {cap}) AS c) "
            "FROM other AS o")


# --- A task's history into the feed (SPEC §17) -----------------------------------------------
# Every history event of a task is also an event of its space's feed, written by the same
# statement that writes the history row, whichever code path wrote it (the ORM, the create
# statement, next's statement): a trigger, so there is no second path to forget. The feed's
# type is ``task.`` and the history kind; its data is the history's details; the feed numbers it
# as it commits (``events.sql.seal``).
@cache
def history_into_feed() -> Trigger:
    into = ", ".join(column(Event, name) for name in ("space", "seq", "type", "task_number", "actor", "data", "at"))
    return Trigger("tasks_history_into_feed", on=TaskEvent._meta.db_table, timing="AFTER INSERT", body=f"""
BEGIN
    INSERT INTO {table(Event)} ({into})
    SELECT NEW.{column(TaskEvent, "space")}, NULL, 'task.' || NEW.{column(TaskEvent, "kind")}, t.{column(Task, "number")},
           NEW.{column(TaskEvent, "actor")}, NEW.{column(TaskEvent, "details")}, NEW.{column(TaskEvent, "created_at")}
    FROM {table(Task)} t WHERE t.{column(Task, "id")} = NEW.{column(TaskEvent, "task")};
    RETURN NULL;
END """)

# --- Wait slots (tasks.waiting, SPEC §15 Capacity) -------------------------------------------

_slots = table(WaitSlot)
# The first of slots 1..limit no live wait holds, taken; a slot whose holder's time is past is
# taken over (ON CONFLICT … WHERE); a slot another wait took a moment before returns no row.
TAKE_WAIT_SLOT = f"""
WITH free AS (
    SELECT s FROM generate_series(1, %(limit)s) AS s
    WHERE NOT EXISTS (SELECT 1 FROM {_slots} w WHERE w.space_id = %(space)s AND w.api_key_id = %(key)s AND w.slot = s AND w.held_until > now())
    ORDER BY s LIMIT 1)
INSERT INTO {_slots} (space_id, api_key_id, slot, token, held_until)
SELECT %(space)s, %(key)s, s, %(token)s, now() + make_interval(secs => %(seconds)s) FROM free
ON CONFLICT (space_id, api_key_id, slot) DO UPDATE SET token = EXCLUDED.token, held_until = EXCLUDED.held_until
    WHERE {_slots}.held_until <= now()
RETURNING slot"""
# How many of a key's slots 1..limit live waits hold now.
HELD_WAIT_SLOTS = f"""
SELECT count(*) FROM {_slots} WHERE space_id = %(space)s AND api_key_id = %(key)s AND slot <= %(limit)s AND held_until > now()"""


# --- `next` (tasks.claims) -----------------------------------------------------------------

# `next {}` as one statement: pick the first of the ready queue with SKIP LOCKED (SPEC §13:
# open, nothing live blocks it, carrying every label asked for; lowest priority, then lowest
# number: tasks.filters.ready_queue, compiled by the ORM), mark it claimed, insert the claim
# and its event, and answer with the tasks it blocks. An open task has no live claim and no
# waiting attempt, so "claimed" is exactly what recompute_status would say. Column lists
# come from the models. It first asks whether a claim of the space is past its expiry
# (Claim.due): such a claim counts as ended, so its task may be the one to hand out; the
# statement then claims nothing and says so, and the caller records the lapse in a phase of
# its own and asks again (tasks.commands.claim_next).
SPACE, LABELS = Placeholder("space", -7_777_777), Placeholder("labels", ["next-placeholder"])
NOW = Placeholder("now", datetime(1970, 1, 2, 3, 4, 5, 678901, tzinfo=dt_timezone.utc))
AGING = Placeholder("aging", 7_777)  # SPEC §22: the space's priority_aging_minutes
FULL = Placeholder("full", ["full-placeholder"])  # SPEC §22: the space's labels at their cap
PRIORITY = Placeholder("priority", 77)  # one priority of the aged queue's (a lateral's column, not a parameter)


@cache
def claim_next(aging: bool = False) -> tuple[Statement, list[str]]:
    """The statement, and the task's attribute names in the order it returns the task's columns:
    built once, so each call hands the row straight to ``Task.from_db``. ``aging``: the queue's
    order is the effective priority (SPEC §22), the ``aging`` parameter its minutes."""
    task_table = quote(Task._meta.db_table)
    edges = quote(Dependency._meta.db_table)
    claim_values = {"space": "%(space)s", "task": "id", "member": "%(member)s", "cycle": "cycle",
                    "origin": f"'{ClaimOrigin.NEXT.value}'", "created_at": "%(now)s", "expires_at": "%(expires)s",
                    "last_heartbeat_at": "NULL", "ended_at": "NULL", "end_reason": "''"}
    event_values = {"space": "%(space)s", "task": "task_id", "kind": f"'{EventKind.CLAIMED.value}'",
                    "actor": "%(member)s", "created_at": "%(now)s",
                    "details": "jsonb_build_object('member', %(member)s, 'claim', id, "
                               "'expires_at', %(expires_iso)s::text, 'cycle', cycle)"}
    fields = written_fields(Task)
    due = Claim.objects.filter(Claim.due(NOW.example), space_id=SPACE.example)
    full = Value(FULL.example, output_field=ArrayField(CharField()))
    if aging:
        # The aged queue's head (tasks.filters.aged_head), each priority's in turn (one copy of the
        # query for the planner), then the first by (effective priority, number) no one holds.
        # Should every head be held (more agents taking work at once than AGED_CANDIDATES), the
        # queue itself in the same order: PostgreSQL runs that branch only when the first is empty.
        head = named_sql(aged_head(SPACE.example, LABELS.example, Value(AGING.example), PRIORITY.example,
                                   where=~Exists(due), full_labels=full), SPACE, LABELS, NOW, AGING, FULL, PRIORITY)
        heads = (f"SELECT h.* FROM unnest(ARRAY{list(PRIORITIES)}) AS level(priority) "
                 f"CROSS JOIN LATERAL ({head.replace('%(priority)s', 'level.priority')}) AS h")
        first = (f"SELECT t.id FROM {task_table} AS t JOIN ({heads}) AS head ON head.id = t.id "
                 f"WHERE t.{quote(Task._meta.get_field('status').column)} = '{TaskStatus.OPEN.value}' "
                 "ORDER BY head.eff, head.number LIMIT 1 FOR NO KEY UPDATE OF t SKIP LOCKED")
        queue = ready_queue(SPACE.example, LABELS.example, aging_minutes=Value(AGING.example), full_labels=full)
        rest = (f"{named_sql(queue.filter(~Exists(due)).values('id')[:1], SPACE, LABELS, NOW, AGING, FULL)} "
                f"FOR NO KEY UPDATE OF {task_table} SKIP LOCKED")
        picked = f"SELECT id FROM ({first}) AS from_heads UNION ALL SELECT id FROM ({rest}) AS from_queue LIMIT 1"
    else:
        queue = ready_queue(SPACE.example, LABELS.example, full_labels=full).filter(~Exists(due)).values("id")[:1]
        picked = f"{named_sql(queue, SPACE, LABELS, NOW, FULL)} FOR NO KEY UPDATE OF {task_table} SKIP LOCKED"
    sql = (
        f"WITH due AS (SELECT EXISTS({named_sql(due.values('id')[:1], SPACE, NOW)}) AS flag), "
        f"picked AS ({picked}), "
        f"claimed AS (UPDATE {task_table} AS t SET status = '{TaskStatus.CLAIMED.value}', updated_at = %(now)s "
        f"FROM picked WHERE t.id = picked.id RETURNING {', '.join(f't.{quote(f.column)}' for f in fields)}, t.id), "
        f"claim AS ({insert_select(Claim, claim_values)} FROM claimed RETURNING id, task_id, cycle), "
        f"event AS ({insert_select(TaskEvent, event_values)} FROM claim) "
        f"SELECT due.flag, claim.id, creator.name, ARRAY(SELECT waiting.number FROM {edges} AS d "
        f"JOIN {task_table} AS waiting ON waiting.id = d.task_id WHERE d.space_id = %(space)s "
        "AND d.blocker_id = claim.task_id ORDER BY waiting.number), "
        f"claimed.id, {', '.join(f'claimed.{quote(f.column)}' for f in fields)} "
        "FROM due LEFT JOIN (claim JOIN claimed ON claimed.id = claim.task_id) ON true "
        f"LEFT JOIN {quote(Member._meta.db_table)} AS creator ON creator.id = claimed.creator_id"
    )
    return Statement("claim the next task", sql), ["id", *(f.attname for f in fields)]


# --- The work listener (tasks.waiting, SPEC §15) ---------------------------------------------

LISTENS = (f"LISTEN {WORK_CHANNEL}", f"LISTEN {events_sql.CHANNEL}")  # what a process's listener hears


def any_work(probes: list[str]) -> str:
    """One statement for a listener's recheck: each probe (a waiter kind's compiled ORM query,
    answering whether there is work for it) as one element of an array, in order."""
    return "SELECT ARRAY[" + ", ".join(f"({probe})" for probe in probes) + "]"


# --- Priority aging (SPEC §22) ------------------------------------------------------------------
# A task's ready_since is when it last became ready: opened, whichever path opened it (a
# give-back, a lapse, a reopened cycle, an approval, an unpark: the database sets it, so no path
# forgets), or unblocked (tasks.graph.record_unblocked, the one place a task's last blocker goes).
# A create sets it with the row.
@cache
def ready_since() -> Trigger:
    status, since, opened = column(Task, "status"), column(Task, "ready_since"), TaskStatus.OPEN.value
    return Trigger("tasks_ready_since", on=Task._meta.db_table, timing="BEFORE UPDATE OF status", body=f"""
BEGIN
    IF NEW.{status} = '{opened}' AND OLD.{status} <> '{opened}' THEN
        NEW.{since} := statement_timestamp();
    END IF;
    RETURN NEW;
END """)


# --- Claim caps (tasks.caps, SPEC §22) -----------------------------------------------------------

_NOW = Placeholder("now", datetime(1970, 1, 3, 4, 5, 6, 789012, tzinfo=dt_timezone.utc))


def _live(alias: str) -> str:
    """``Claim.live`` over the claims table read as ``alias``, at the transaction's time."""
    sql, _ = condition_sql(Claim, Claim.live(_NOW.example), alias, _NOW)
    return sql.replace("%s", "now()")


@cache
def member_at_cap() -> SqlFunction:
    """Whether the member holds as many live claims as the space lets one member hold. PL/pgSQL:
    its statements' plans are kept for the session, where an SQL function's are made each call."""
    space, per_member = table(Space), column(Space, "max_claims_per_member")
    claims = table(Claim)
    return SqlFunction(caps.MEMBER_AT_CAP_FUNCTION, "p_space bigint, p_member bigint", "boolean", f"""
DECLARE
    most integer;
    held integer;
BEGIN
    SELECT s.{per_member} INTO most FROM {space} AS s WHERE s.id = p_space;
    IF most IS NULL THEN
        RETURN false;
    END IF;
    SELECT count(*) INTO held FROM (SELECT 1 FROM {claims} AS c WHERE c.{column(Claim, 'space')} = p_space
        AND c.{column(Claim, 'member')} = p_member AND {_live('c')} LIMIT most) AS h;
    RETURN held >= most;
END """, language="plpgsql")


@cache
def full_labels() -> SqlFunction:
    """The space's capped labels whose tasks hold as many live claims as the cap, in order (none,
    at the cost of one read of the space's row, when it caps no label)."""
    space, caps_column = table(Space), column(Space, "label_caps")
    claims, tasks = table(Claim), table(Task)
    return SqlFunction(caps.FULL_LABELS_FUNCTION, "p_space bigint", "varchar[]", f"""
DECLARE
    limits jsonb;
    full_ones varchar[] := '{{}}';
    cap record;
    held integer;
BEGIN
    SELECT s.{caps_column} INTO limits FROM {space} AS s WHERE s.id = p_space;
    IF limits IS NULL OR limits = '{{}}'::jsonb THEN
        RETURN full_ones;
    END IF;
    FOR cap IN SELECT l.key AS label, l.value::int AS most FROM jsonb_each_text(limits) AS l ORDER BY l.key LOOP
        SELECT count(*) INTO held FROM (SELECT 1 FROM {claims} AS c JOIN {tasks} AS t ON t.id = c.{column(Claim, 'task')}
            WHERE c.{column(Claim, 'space')} = p_space AND {_live('c')}
            AND t.{column(Task, 'labels')} @> ARRAY[cap.label]::varchar[] LIMIT cap.most) AS h;
        IF held >= cap.most THEN
            full_ones := full_ones || cap.label::varchar;
        END IF;
    END LOOP;
    RETURN full_ones;
END """, language="plpgsql")


@cache
def claim_caps() -> Trigger:
    """Before a claim is inserted: lock the member, then the task's capped labels (sorted, so
    two claims never wait on each other in opposite orders), then refuse if a cap is reached."""
    space = table(Space)
    per_member, caps_column = column(Space, "max_claims_per_member"), column(Space, "label_caps")
    return Trigger("tasks_claim_caps", on=Claim._meta.db_table, timing="BEFORE INSERT", body=f"""
DECLARE
    limits record;
    capped varchar[];
    label varchar;
BEGIN
    SELECT s.{per_member} AS per_member, s.{caps_column} AS caps INTO limits FROM {space} AS s WHERE s.id = NEW.space_id;
    IF limits.per_member IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock({caps.MEMBER_CAP_LOCK_CLASS}, mod(NEW.member_id, 2147483647)::int);
        IF {caps.MEMBER_AT_CAP_FUNCTION}(NEW.space_id, NEW.member_id) THEN
            RAISE EXCEPTION 'member at its claim cap' USING ERRCODE = '{caps.MEMBER_AT_CAP}';
        END IF;
    END IF;
    IF limits.caps <> '{{}}'::jsonb THEN
        SELECT array_agg(l ORDER BY l) INTO capped
        FROM unnest((SELECT t.{column(Task, 'labels')} FROM {table(Task)} AS t WHERE t.id = NEW.task_id)) AS l
        WHERE limits.caps ? l;
        IF capped IS NOT NULL THEN
            FOREACH label IN ARRAY capped LOOP
                PERFORM pg_advisory_xact_lock({caps.LABEL_CAP_LOCK_CLASS}, hashtext(NEW.space_id::text || ':' || label));
            END LOOP;
            IF capped && {caps.FULL_LABELS_FUNCTION}(NEW.space_id) THEN
                RAISE EXCEPTION 'label at its claim cap' USING ERRCODE = '{caps.LABEL_AT_CAP}';
            END IF;
        END IF;
    END IF;
    RETURN NEW;
END """)


# The space's labels at their cap of live claims.
FULL_LABELS = f"SELECT {caps.FULL_LABELS_FUNCTION}(%(space)s)"
# Whether a member is at its cap of live claims, and the space's labels at theirs.
CAPS_NOW = (f"SELECT {caps.MEMBER_AT_CAP_FUNCTION}(%(space)s, %(member)s), "
            f"{caps.FULL_LABELS_FUNCTION}(%(space)s)")


# --- Routines (tasks.routines, SPEC §22) -------------------------------------------------------------
# A sweep fires a routine only while it holds this session lock (class, routine id); another sweep
# that finds it taken passes the routine by. The database's unique run a period is the guarantee;
# the lock spares the others the work. Params: class, id.
ROUTINE_LOCK_CLASS = 19
TRY_ROUTINE_LOCK = "SELECT pg_try_advisory_lock(%s, (%s %% 2147483647)::int)"
ROUTINE_UNLOCK = "SELECT pg_advisory_unlock(%s, (%s %% 2147483647)::int)"
