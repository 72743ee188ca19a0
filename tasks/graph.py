"""The work graph (SPEC §13): blockers, cycles and readiness.

A ``Dependency`` row says a task waits on a live blocker; a blocker that ends deletes its
rows (a superseded one hands them to its survivor), so "blocked" is "a row names it" and
"ready" is "open and no row names it". ``next`` reads exactly that.

Locks, always taken in this order so writers never deadlock:
1. the space's graph lock (a transaction-level advisory lock), by every writer that adds
   edges between existing tasks: with it, the cycle check and the insert are one step, so
   racing writers never store a cycle;
2. blockers, ``FOR SHARE``: a blocker cannot end while an edge to it is being added (its end
   waits, then sees the edge and deletes it);
3. the blocked task's row (``FOR NO KEY UPDATE``, as every task lock here: inserts that
   check a foreign key to it are not blocked), by whoever adds to what blocks it;
4. a task's "unblocking" lock (an advisory lock per task, taken in id order), by whoever
   removes edges that block it: so two blockers ending at once record ``unblocked`` once. A
   task that ends holds its own row and then its dependents' unblocking locks, never their
   rows, so endings and claims do not wait on each other's tasks.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from django.db import connection, transaction

from common.refusals import InvalidRequest, NotFound
from common.sql import ADVISORY_XACT_LOCK
from spaces.models import Member, Space
from spaces.selectors import as_int
from tasks import errors, sql, wakeups
from tasks.filters import statement_time
from tasks.lifecycle import check_task_live, notify, record_event
from tasks.models import (
    LIVE_STATUSES,
    MAX_BLOCKERS,
    Dependency,
    EventKind,
    NotificationKind,
    Task,
    TaskStatus,
)
from tasks.selectors import get_task

def lock_graph(space_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(ADVISORY_XACT_LOCK, [sql.GRAPH_LOCK_CLASS, space_id])


def share_lock(task_ids: Iterable[int]) -> None:
    """Hold these tasks' rows so none of them ends until this transaction commits."""
    with connection.cursor() as cursor:
        cursor.execute(sql.share_lock_sql(), [sorted(set(task_ids))])


def hold_unblocking(task_ids: Iterable[int]) -> None:
    """The unblocking locks of these tasks, in id order (step 4 of the module's order)."""
    ids = sorted(set(task_ids))
    if ids:
        with connection.cursor() as cursor:
            cursor.execute(sql.UNBLOCKING_LOCKS_SQL, [ids])


# --- Reading the graph -------------------------------------------------------------------


def attach(tasks: Iterable[Task]) -> None:
    """Set ``graph = (blocked_by, blocks)`` (task numbers) on each task, in one query."""
    tasks = [t for t in tasks if t is not None]
    if not tasks:
        return
    ids = [t.pk for t in tasks]
    edges = (Dependency.objects.filter(space_id=tasks[0].space_id)
             .filter(task_id__in=ids).union(
                 Dependency.objects.filter(space_id=tasks[0].space_id, blocker_id__in=ids))
             .values_list("task_id", "blocker_id", "task__number", "blocker__number"))
    blocked_by: dict[int, list[int]] = defaultdict(list)
    blocks: dict[int, list[int]] = defaultdict(list)
    for task_id, blocker_id, task_number, blocker_number in edges:
        blocked_by[task_id].append(blocker_number)
        blocks[blocker_id].append(task_number)
    for task in tasks:
        task.graph = (sorted(blocked_by[task.pk]), sorted(blocks[task.pk]))


def graph_of(task: Task) -> tuple[list[int], list[int]]:
    """(blocked_by, blocks) of a task as numbers: what ``attach`` set, else one query."""
    if getattr(task, "graph", None) is None:
        attach([task])
    return task.graph


def is_ready(task: Task) -> bool:
    return task.status == TaskStatus.OPEN and not graph_of(task)[0]


def blocker_numbers(task: Task) -> list[int]:
    return sorted(Dependency.objects.filter(space_id=task.space_id, task=task)
                  .values_list("blocker__number", flat=True))


# --- Resolving blockers named by number ----------------------------------------------------


def resolve(space: Space, numbers: Iterable[object], *, field: str) -> list[Task]:
    """The tasks these numbers name; an unknown number is a 422 on ``field`` (SPEC §13)."""
    wanted = sorted({as_int(n) for n in numbers})
    found = {t.number: t for t in Task.objects.filter(space=space, number__in=wanted)}
    unknown = [n for n in wanted if n not in found]
    if unknown:
        raise InvalidRequest(f"No task {', '.join(map(str, unknown))} in this space.",
                             fields={field: [f"No task {n} in this space." for n in unknown]})
    return [found[n] for n in wanted]


def resolve_blockers(space: Space, numbers: Iterable[object]) -> list[Task]:
    """A new task's ``blocked_by``: every number known (else 422), and at most MAX_BLOCKERS of them
    live (SPEC §13: the limit counts live blockers; finished ones block nothing)."""
    named = resolve(space, numbers, field="blocked_by")
    live = {survivor.pk for survivor in map(live_survivor, named) if survivor is not None}
    if len(live) > MAX_BLOCKERS:
        raise InvalidRequest(f"{len(live)} of these tasks are live: at most {MAX_BLOCKERS} may block a task.",
                             fields={"blocked_by": [f"At most {MAX_BLOCKERS} live blockers."]})
    return named


def live_survivor(task: Task) -> Task | None:
    """The live task that blocks in ``task``'s place: itself, its survivor (SPEC §13), or none."""
    seen: set[int] = set()
    while task.status == TaskStatus.SUPERSEDED and task.superseded_by_id and task.pk not in seen:
        seen.add(task.pk)
        task = Task.objects.get(pk=task.superseded_by_id)
    return task if task.status in LIVE_STATUSES else None


def locked_live_blockers(tasks: list[Task]) -> list[Task]:
    """Share-lock the tasks and their survivors, then read which of them block (each once)."""
    share_lock(t.pk for t in tasks)
    blockers: dict[int, Task] = {}
    for task in Task.objects.filter(pk__in=[t.pk for t in tasks]).order_by("number"):
        live = live_survivor(task)
        while live is not None and live.pk != task.pk:
            # A survivor blocks instead: hold it too, then make sure it is still the one.
            share_lock([live.pk])
            task, live = live, live_survivor(Task.objects.get(pk=live.pk))
        if live is not None:
            blockers[live.pk] = live
    return list(blockers.values())


# --- Cycles --------------------------------------------------------------------------------


def find_cycle(task: Task, blocker: Task) -> list[int] | None:
    """The cycle ``task`` waiting on ``blocker`` would close, as numbers [task, blocker, …, task]."""
    if task.pk == blocker.pk:
        return [task.number, task.number]
    with connection.cursor() as cursor:
        cursor.execute(sql.reach_sql(), {"space": task.space_id, "start": blocker.pk})
        reached: dict[int, int] = {}
        for node, via in cursor.fetchall():
            reached.setdefault(node, via)
    if task.pk not in reached:
        return None
    path = [task.pk]
    while path[-1] != blocker.pk:
        path.append(reached[path[-1]])
    ids = [task.pk, *reversed(path)]  # task, blocker, …, task
    numbers = dict(Task.objects.filter(pk__in=ids).values_list("pk", "number"))
    return [numbers[i] for i in ids]


# --- Changing the graph -------------------------------------------------------------------


def insert_edges(task: Task, blockers: list[Task]) -> None:
    """``task`` waits on each blocker (an edge already there stays as it is)."""
    Dependency.objects.bulk_create([Dependency(space_id=task.space_id, task=task, blocker=b) for b in blockers],
                                   ignore_conflicts=True)


def add_on_create(task: Task, blocked_by: list[Task], actor: Member) -> None:
    """A new task's blockers, in its creating transaction. A new task blocks nothing, so no
    cycle can close and the graph lock is not needed."""
    blockers = locked_live_blockers(blocked_by)
    after = sorted(b.number for b in blockers)
    if blockers:
        insert_edges(task, blockers)
        record_event(task=task, kind=EventKind.BLOCKER_ADDED, actor=actor, before=[], after=after)
    task.graph = (after, [])


def add_blocker(*, space: Space, number: object, blocker_number: object, actor: Member) -> tuple[Task, bool]:
    """``POST …/tasks/{n}/blockers {"task": m}``: True when the edge is new (SPEC §13)."""
    with transaction.atomic():
        lock_graph(space.pk)
        (named,) = resolve(space, [blocker_number], field="task")
        task = get_task(space=space, number=number)
        blockers = locked_live_blockers([named])
        task = get_task(space=space, number=number, lock=True)
        check_task_live(task)
        before = blocker_numbers(task)
        if not blockers:
            return task, False  # the named task ended: it blocks nothing
        blocker = blockers[0]
        if blocker.number in before:
            return task, False
        cycle = find_cycle(task, blocker)
        if cycle is not None:
            raise errors.DependencyCycle(
                f"Task {task.number} cannot wait on task {blocker.number}: "
                f"{' → '.join(map(str, cycle))} would be a cycle.", cycle=cycle)
        if len(before) >= MAX_BLOCKERS:
            raise InvalidRequest(f"Task {task.number} already has {MAX_BLOCKERS} live blockers.",
                                 fields={"task": [f"At most {MAX_BLOCKERS} live blockers."]})
        insert_edges(task, [blocker])
        record_event(task=task, kind=EventKind.BLOCKER_ADDED, actor=actor, before=before,
                     after=sorted([*before, blocker.number]))
        return task, True


def remove_blocker(*, space: Space, number: object, blocker_number: object, actor: Member) -> Task:
    """``DELETE …/tasks/{n}/blockers/{m}``; 404 when ``m`` does not block ``n``."""
    with transaction.atomic():
        task = get_task(space=space, number=number)
        hold_unblocking([task.pk])
        before = blocker_numbers(task)
        m = as_int(blocker_number)
        if m not in before:
            raise NotFound(f"Task {m} does not block task {task.number}.")
        Dependency.objects.filter(space_id=space.pk, task=task, blocker__number=m, blocker__space_id=space.pk).delete()
        after = [n for n in before if n != m]
        record_event(task=task, kind=EventKind.BLOCKER_REMOVED, actor=actor, before=before, after=after)
        if not after:
            record_unblocked(task, actor=actor, reason="blocker_removed", blocker=m)
        return task


def record_unblocked(task: Task, *, actor: Member | None, **details: object) -> None:
    """The task's last blocker went: if that made it ready, say so (history, its creator); its
    priority ages from now (SPEC §22: by the time it has been ready)."""
    if task.status != TaskStatus.OPEN:
        return
    Task.objects.filter(space_id=task.space_id, pk=task.pk).update(ready_since=statement_time())
    record_event(task=task, kind=EventKind.UNBLOCKED, actor=actor, **details)
    wakeups.work_ready(task.space_id)
    if task.creator_id is not None:
        notify(members=[task.creator_id], kind=NotificationKind.TASK_UNBLOCKED, task=task, task_number=task.number)


def dependents(task: Task) -> list[Task]:
    """The live tasks ``task`` blocks, with their unblocking locks held (step 4)."""
    ids = list(Dependency.objects.filter(space_id=task.space_id, blocker=task).values_list("task_id", flat=True))
    hold_unblocking(ids)
    return list(Task.objects.filter(pk__in=ids).order_by("pk"))


def task_ended(task: Task, *, actor: Member | None) -> None:
    """``task`` is done, withdrawn or rejected (its row locked): it blocks nothing and waits on
    nothing any more. Each task it was the last blocker of, and that is open, is unblocked."""
    waiting = dependents(task)
    Dependency.objects.filter(space_id=task.space_id, blocker=task).delete()
    Dependency.objects.filter(space_id=task.space_id, task=task).delete()
    task.graph = ([], [])  # an ended task waits on nothing and blocks nothing
    still_blocked = set(Dependency.objects.filter(space_id=task.space_id, task__in=waiting)
                        .values_list("task_id", flat=True))
    for dependent in waiting:
        if dependent.pk not in still_blocked:
            record_unblocked(dependent, actor=actor, reason=f"blocker_{task.status}", blocker=task.number)


def task_superseded(task: Task, survivor: Task, *, actor: Member | None) -> None:
    """``task`` was superseded by ``survivor`` (both locked, the graph lock held): its survivor
    blocks in its place. An edge that would close a cycle (the survivor waiting on the
    duplicate, or on something that waits on the survivor) is dropped, in both histories."""
    waiting = dependents(task)
    Dependency.objects.filter(space_id=task.space_id, blocker=task).delete()
    Dependency.objects.filter(space_id=task.space_id, task=task).delete()
    for dependent in waiting:
        before = blocker_numbers(dependent) + [task.number]
        cycle = find_cycle(dependent, survivor)
        if cycle is None:
            insert_edges(dependent, [survivor])
            after = blocker_numbers(dependent)
            record_event(task=dependent, kind=EventKind.BLOCKER_ADDED, actor=actor, before=sorted(before),
                         after=after, replaces=task.number, reason="superseded")
            continue
        after = blocker_numbers(dependent)
        dropped = {"task": dependent.number, "blocker": survivor.number, "replaces": task.number, "cycle": cycle}
        record_event(task=dependent, kind=EventKind.BLOCKER_REMOVED, actor=actor, before=sorted(before), after=after,
                     dropped=dropped, reason="cycle")
        if survivor.pk != dependent.pk:
            record_event(task=survivor, kind=EventKind.BLOCKER_REMOVED, actor=actor, dropped=dropped, reason="cycle")
        if not after:
            record_unblocked(dependent, actor=actor, reason="blocker_superseded", blocker=task.number)
