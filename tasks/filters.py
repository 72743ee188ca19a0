"""Which tasks are ready, and in what order ``next`` takes them (SPEC §13): the predicates the
claims, the board and the list filters share (the list's query-string filters are the fronts',
``fronts.task_filters``)."""
from datetime import datetime

from django.contrib.postgres.fields import ArrayField
from django.db.models import CharField, Exists, OuterRef, Q, QuerySet, Value

from costs.selectors import within_budget
from tasks.models import Dependency, Task, TaskStatus
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


def ready_queue(space_id: int, labels: list[str]) -> QuerySet:
    """The space's ready tasks carrying every one of ``labels``, in the order ``next`` takes them.
    ``labels`` is one array parameter (not one per label), so a compiled statement fits any list."""
    wanted = Value(list(labels), output_field=ArrayField(CharField()))
    return (Task.objects.filter(space_id=space_id, labels__contains=wanted).filter(ready_condition())
            .filter(within_budget()).order_by(*NEXT_ORDER))
