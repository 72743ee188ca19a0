"""Reservations, occupancy and steward holds (SPEC §4, §5.2); the idempotent operations are the
``idempotency`` app's."""
from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from common.space_keys import SpaceForeignKey


class ConflictKind(models.TextChoices):
    CREATE_TASK = "create_task"
    POST_REVIEW_NOTE = "post_review_note"


class DeliveryMode(models.TextChoices):
    RESULT = "result"
    REPOSITORY_CHANGE = "repository_change"
    REVIEW = "review"
    MESSAGE = "message"  # a note's mode (SPEC §4.1)


TASK_DELIVERY_MODES = (DeliveryMode.RESULT, DeliveryMode.REPOSITORY_CHANGE, DeliveryMode.REVIEW)
TASK_DELIVERY_MODE_CHOICES = [(m.value, m.label) for m in TASK_DELIVERY_MODES]


class Reservation(models.Model):
    """A create intent's claim on a conflict key for one allocation window (SPEC §4.5.4)."""

    # No foreign-key constraints in the database: checking one locks the referenced row,
    # a write to a logged table, which would make every reservation's commit wait for the
    # disk. A reservation lives for one window and means nothing after it, so a dangling
    # reference is harmless (Django still cascades deletions made through the ORM).
    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+",
                              db_index=False, db_constraint=False)  # reservation_one_per_conflict_key
    kind = models.CharField(max_length=32, choices=ConflictKind.choices)
    target = models.TextField()
    delivery_mode = models.CharField(max_length=32, choices=DeliveryMode.choices)
    received_seq = models.BigIntegerField()
    payload_sha256 = models.CharField(max_length=64)
    member = models.ForeignKey("spaces.Member", on_delete=models.CASCADE, related_name="+", db_constraint=False)
    # The idempotent operation that made it, so that operation's retry can take it over.
    operation = models.ForeignKey(
        "idempotency.Operation", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        db_constraint=False,
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["space", "kind", "target", "delivery_mode"], name="reservation_one_per_conflict_key"
            ),
        ]
        indexes = [models.Index(fields=["expires_at"], name="reservation_expires_at")]

    def __str__(self) -> str:
        return f"reservation {self.pk} {self.target} ({self.delivery_mode})"


class Occupancy(models.Model):
    """The durable record of which live task (or note) holds a conflict key (SPEC §4.4).

    The unique constraint is the final referee of "one task per key": whichever
    transaction inserts the row first wins, every other gets an IntegrityError.
    """

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+",
                              db_index=False)  # occupancy_one_per_conflict_key
    kind = models.CharField(max_length=32, choices=ConflictKind.choices)
    target = models.TextField()
    delivery_mode = models.CharField(max_length=32, choices=DeliveryMode.choices)
    task = SpaceForeignKey("tasks.Task", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    note = SpaceForeignKey("tasks.Note", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "occupancy"
        constraints = [
            models.UniqueConstraint(fields=["space", "kind", "target", "delivery_mode"], name="occupancy_one_per_conflict_key"),
            models.CheckConstraint(
                condition=Q(task__isnull=False, note__isnull=True) | Q(task__isnull=True, note__isnull=False),
                name="occupancy_names_one_occupant",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.target} ({self.delivery_mode}) → {'task ' + str(self.task_id) if self.task_id else 'note ' + str(self.note_id)}"


class SlotHold(models.Model):
    """A steward's hold on a catalog slot: new tasks binding to it are refused (SPEC §5.2)."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+",
                              db_index=False)  # hold_one_per_slot
    work_item_id = models.CharField(max_length=32)
    held_by = SpaceForeignKey("spaces.Member", null=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["space", "work_item_id"], name="hold_one_per_slot")]

    def __str__(self) -> str:
        return f"hold {self.work_item_id}"


class ConflictCount(models.Model):
    """How many ``409 conflict_key_occupied`` answers a space gave in an hour (SPEC §14's
    duplicates prevented), apart from the domain rows. Counted in ``shard``s (a server
    process's backend id, modulo ``CONFLICT_COUNT_SHARDS``) so that racing refusals, each in
    its own transaction, do not queue on one row. UNLOGGED: a count lost in a database crash
    only under-reports a figure on the board."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False,
                              db_constraint=False)  # conflictcount_one_per_shard
    hour = models.DateTimeField()
    shard = models.SmallIntegerField()
    count = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["space", "hour", "shard"], name="conflictcount_one_per_shard"),
        ]
