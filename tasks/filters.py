"""Which tasks are ready, and in what order ``next`` takes them (SPEC §13): the predicates the
claims, the board and the list filters share (the list's query-string filters are the fronts',
``fronts.task_filters``)."""
from datetime import datetime

from django.contrib.postgres.fields import ArrayField
from django.db.models import (
    CharField, DateTimeField, DurationField, Exists, ExpressionWrapper, F, FloatField, Func, IntegerField, OuterRef, Q,
    QuerySet, Subquery, Value,
)
from django.db.models.functions import Extract, Floor, Greatest

from costs.selectors import within_budget
from tasks import caps
from tasks.models import PRIORITIES, Dependency, Task, TaskStatus
from tasks.status import shown_as


def blocked() -> Exists:
    """A live task blocks this one (SPEC §13): a dependency row names it."""
    return Exists(Dependency.objects.filter(space_id=OuterRef("space_id"), task_id=OuterRef("pk")))


def ready_condition(now: datetime | None = None) -> Q:
    """Ready (SPEC §13): open, and no live task blocks it. With ``now``, open as a read at ``now``
    shows it (``tasks.status``: a claim past its expiry counts as ended): the lists, the board and
    the summary. Without, the stored status: ``next``'s statement is compiled from ``ready_queue``
    (``tasks.sql.claim_next``), which records every due lapse before it picks."""
    is_open = Q(status=TaskStatus.OPEN) if now is None else shown_as(TaskStatus.OPEN, now)
    return is_open & ~blocked()


NEXT_ORDER = ("priority", "number")  # the most urgent first, then the oldest (SPEC §13)


def statement_time() -> Func:
    """The statement's start: later than any ``ready_since`` the statement can see (a task opened by
    a transaction that committed before it began), as the transaction's start is not."""
    return Func(template="statement_timestamp()", output_field=DateTimeField())


def effective_priority(aging_minutes) -> Func:
    """SPEC §22 priority aging: a task's priority, better by one for every ``aging_minutes`` it
    has been ready (``ready_since``), never past 0. ``aging_minutes`` is an expression (a
    statement's parameter)."""
    open_for = Extract(ExpressionWrapper(statement_time() - F("ready_since"), output_field=DurationField()), "epoch",
                       output_field=FloatField())
    steps = Floor(open_for / (aging_minutes * Value(60.0)), output_field=IntegerField())
    return Greatest(Value(0), F("priority") - steps, output_field=IntegerField())


def ready_queue(space_id: int, labels: list[str], *, aging_minutes=None, full_labels=None) -> QuerySet:
    """The space's ready tasks carrying every one of ``labels`` and none whose claim cap is
    reached (SPEC §22), in the order ``next`` takes them: by priority, or with
    ``aging_minutes`` (an expression: the space's setting) by the effective priority, then the
    number. ``labels`` is one array parameter (not one per label), so a compiled statement fits
    any list; ``full_labels`` the labels at their cap, when the caller asked (``caps.not_full``)."""
    wanted = Value(list(labels), output_field=ArrayField(CharField()))
    queue = (Task.objects.filter(space_id=space_id, labels__contains=wanted).filter(ready_condition())
             .filter(within_budget()).filter(caps.not_full(space_id, full_labels)))
    return queue.order_by(*next_order(aging_minutes))


AGED_CANDIDATES = 16  # of each priority, more than the agents a space has taking work at once


def aged_head(space_id: int, labels: list[str], aging_minutes, priority, *, where=Q(), full_labels=None
              ) -> QuerySet:
    """The head of the aged queue's tasks of one ``priority``, found without reading all of them:
    its ready tasks at the best effective priority any of them has now (the oldest one's, since
    within a priority the effective one only improves with age), lowest numbers first, at most
    ``AGED_CANDIDATES``, with ``eff`` and ``number``. The queue's first task, in ``next_order``,
    is the first of the five priorities' heads by (eff, number) — and so is the first not
    locked, while fewer than ``AGED_CANDIDATES`` of a priority's are locked. Each head is two
    index reads (the oldest by ``task_open_by_age``, then by number), however many tasks are
    open. ``where``: a further condition on the tasks (``next``'s: no claim of the space is due)."""
    queue = (ready_queue(space_id, labels, full_labels=full_labels).filter(where, priority=priority)
             .alias(eff=effective_priority(aging_minutes)))
    best = queue.order_by("ready_since").annotate(best=effective_priority(aging_minutes)).values("best")[:1]
    return (queue.filter(eff__lte=Subquery(best)).annotate(eff=effective_priority(aging_minutes))
            .order_by("number").values("id", "eff", "number")[:AGED_CANDIDATES])


def next_order(aging_minutes=None) -> list:
    """The order ``next`` takes ready tasks in (SPEC §13, §22): priority (the effective one when
    ``aging_minutes``, a number or an expression, is set), then number."""
    if aging_minutes is None:
        return list(NEXT_ORDER)
    if not hasattr(aging_minutes, "resolve_expression"):
        aging_minutes = Value(aging_minutes)
    return [effective_priority(aging_minutes).asc(), "number"]
