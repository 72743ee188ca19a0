"""Dead letters (SPEC §22): a task set back ``max_cycles`` times is parked.

A setback is an attempt rejected (the task reopens a new cycle), a claim that lapsed, or a claim
given back. Each is counted on the task (``Task.setbacks``) by the transaction that records it,
under the task's row lock; when the count reaches the space's ``max_cycles`` and nobody holds
the task any more, it is ``parked``: it keeps its conflict key and is not ready, the feed says
``task.parked`` and the stewards are notified. A steward unparks it (open again, its count back
to 0: ``tasks.stewardship.unpark``) or withdraws it.
"""
from __future__ import annotations

from django.db.models import F
from django.utils import timezone

from tasks.lifecycle import notify_stewards, record_event
from tasks.models import EventKind, NotificationKind, Task, TaskStatus


def set_back(task: Task, *, count: int = 1) -> bool:
    """Count ``count`` setbacks of ``task`` (its row lock held, its status recomputed); park it
    when they reach the space's ``max_cycles`` and it is open. Whether it was parked."""
    Task.objects.filter(space_id=task.space_id, pk=task.pk).update(setbacks=F("setbacks") + count)
    task.setbacks += count
    limit = task.space.max_cycles
    if limit is None or task.setbacks < limit or task.status != TaskStatus.OPEN:
        return False
    task.status, task.updated_at = TaskStatus.PARKED, timezone.now()
    Task.objects.filter(space_id=task.space_id, pk=task.pk).update(status=task.status, updated_at=task.updated_at)
    record_event(task=task, kind=EventKind.PARKED, actor=None, setbacks=task.setbacks, max_cycles=limit)
    notify_stewards(space_id=task.space_id, kind=NotificationKind.TASK_PARKED, task_number=task.number,
                    setbacks=task.setbacks)
    return True

