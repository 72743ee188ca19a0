"""The feed's tables (SPEC §17). Events are written by the changes themselves, in their own
transaction: a task's history row becomes an event by a trigger on ``tasks_taskevent``
(tasks/migrations), a change of the space's settings, members, keys or catalog by
``events.feed.record``. Their ``seq`` is given at commit (``events_seal``, below)."""
from __future__ import annotations

from django.db import models
from django.utils import timezone

from common.space_keys import SpaceForeignKey


class Event(models.Model):
    """One event of a space's feed. ``seq`` is NULL until the writing transaction commits: a
    deferred trigger then numbers its events from the space's ``FeedCounter`` under that row's
    lock, held until the commit, so seqs are drawn in the order transactions commit and a
    reader that has seen seq N never meets a smaller one later (docs/architecture.md)."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    seq = models.BigIntegerField(null=True, blank=True)
    type = models.CharField(max_length=64)
    task_number = models.PositiveBigIntegerField(null=True, blank=True)
    actor = SpaceForeignKey("spaces.Member", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                            db_index=False)
    data = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["space", "seq"], name="event_unique_seq_per_space")]
        indexes = [
            # A task's events in order (?task=N).
            models.Index(fields=["space", "task_number", "seq"], name="event_task_seq",
                         condition=models.Q(task_number__isnull=False)),
            models.Index(fields=["at"], name="event_at"),  # retention (sweep)
        ]

    def __str__(self) -> str:
        return f"{self.type} #{self.seq}"


class FeedCounter(models.Model):
    """A space's last event seq, and the last one purged (older reads are ``410``)."""

    space = models.OneToOneField("spaces.Space", primary_key=True, on_delete=models.CASCADE, related_name="+")
    last_seq = models.BigIntegerField(default=0)
    purged_through = models.BigIntegerField(default=0)
