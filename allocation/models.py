"""Reservations, occupancy, steward holds and idempotent operations (SPEC §4, §5.2, §7)."""
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
        "allocation.Operation", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
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


class OperationState(models.TextChoices):
    IN_PROGRESS = "in_progress"  # a lease is live: one attempt is running
    UNKNOWN = "unknown"  # nothing settled: retryable (lease expired, or a transient outcome)
    COMPLETED = "completed"  # settled: replays answer the stored response
    FAILED = "failed"  # settled: work outliving a request ran out of attempts; its body names the reason


class Operation(models.Model):
    """One ``Idempotency-Key`` of one member (SPEC §7.1).

    ``(key, fingerprint, binding_generation)`` is written once and never changes. Every
    change of ``state`` goes through ``allocation.settlement``: a compare-and-set on the
    tuple, the lease epoch and ``revision``.
    """

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+",
                              db_index=False)  # operation_one_per_member_key
    # No index of its own either: every lookup goes by (space, member, key), and with a
    # member index beside the unique one a generic plan made before any statistics picked
    # it. A member's deletion (rare) scans the operations kept (a day's, see purge).
    member = SpaceForeignKey("spaces.Member", on_delete=models.CASCADE, related_name="operations",
                             db_index=False)
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)
    binding_generation = models.PositiveIntegerField()
    method = models.CharField(max_length=8)
    path = models.CharField(max_length=500)
    state = models.CharField(max_length=16, choices=OperationState.choices, default=OperationState.IN_PROGRESS)
    # Fencing token: increases with every new lease; a report must carry the current one.
    lease_epoch = models.PositiveIntegerField(default=1)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    revision = models.PositiveIntegerField(default=1)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)
    # The answer's body as it was sent, character for character (SPEC §7.1: a replay is the same
    # bytes; ``jsonb`` keeps neither key order nor spacing). None for an answer that carried a
    # secret, whose replay is rendered again with a fresh one, and for work no request answered.
    response_content = models.TextField(null=True, blank=True)
    response_headers = models.JSONField(default=dict, blank=True)
    # An answer that carried a secret is stored without it; this says how a replay gets a
    # fresh one (spaces.secrets): {"kind", "fields", "ref"}.
    secret = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["space", "member", "key"], name="operation_one_per_member_key"),
            models.CheckConstraint(condition=Q(state__in=OperationState.values), name="operation_state_valid"),
        ]
        indexes = [
            models.Index(fields=["created_at"], name="operation_created_at"),
            models.Index(
                fields=["lease_expires_at"], name="operation_live_leases", condition=Q(state="in_progress")
            ),
        ]

    def __str__(self) -> str:
        return f"operation {self.key} ({self.state})"


class ObservationKind(models.TextChoices):
    LEASE = "lease"  # an attempt asks to run: a new lease and fencing token
    IN_PROGRESS = "in_progress"  # a heartbeat from the running attempt
    SUCCESS = "success"  # a terminal outcome with the response to replay
    FAILURE = "failure"  # a terminal failure (attempts ran out), with its reason
    RETRY = "retry"  # a steward makes a failed operation retryable again
    TRANSIENT = "transient"  # an outcome a retry may change (409 reserved, 429, 5xx, worker error)
    TIMEOUT = "timeout"
    LEASE_EXPIRED = "lease_expired"
    TRANSPORT_ERROR = "transport_error"


class ObservationVerdict(models.TextChoices):
    APPLIED = "applied"  # it changed the operation
    RECORDED = "recorded"  # kept, changed nothing (e.g. a timeout after completion)
    QUARANTINED = "quarantined"  # its tuple (or fencing token) did not match: set aside
    CONFLICT = "conflict"  # a second matching terminal: the first commit won
    REFUSED = "refused"  # a lease asked for while another attempt holds a live one


class OperationObservation(models.Model):
    """One report about an operation, kept apart from it (SPEC §7.2): observations never
    overwrite the operation themselves; ``allocation.settlement.observe`` decides."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+")
    operation = SpaceForeignKey(Operation, on_delete=models.CASCADE, related_name="observations",
                                db_index=False)  # observation_operation_time
    kind = models.CharField(max_length=16, choices=ObservationKind.choices)
    # The tuple and fencing token the report carries, as committed by the server for its attempt.
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)
    binding_generation = models.PositiveIntegerField()
    lease_epoch = models.PositiveIntegerField(null=True, blank=True)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)
    verdict = models.CharField(max_length=16, choices=ObservationVerdict.choices, blank=True)
    warned = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["operation", "created_at"], name="observation_operation_time")]


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
