"""Idempotent operations and the reports about them (SPEC §7): one ``Idempotency-Key`` of one
member, its tuple, its lease and its settled answer. Their tables keep the names the allocation
app gave them (``allocation_operation``, ``allocation_operationobservation``): the models moved
here by state alone (migration ``idempotency.0001``)."""
from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from common.space_keys import SpaceForeignKey


class OperationState(models.TextChoices):
    IN_PROGRESS = "in_progress"  # a lease is live: one attempt is running
    UNKNOWN = "unknown"  # nothing settled: retryable (lease expired, or a transient outcome)
    COMPLETED = "completed"  # settled: replays answer the stored response
    FAILED = "failed"  # settled: work outliving a request ran out of attempts; its body names the reason


class Operation(models.Model):
    """One ``Idempotency-Key`` of one member (SPEC §7.1).

    ``(key, fingerprint, binding_generation)`` is written once and never changes. Every
    change of ``state`` goes through ``idempotency.settlement``: a compare-and-set on the
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
    # What a waiting attempt committed before it waited (``UnitOfWork.carry``: the question an
    # ``ask`` with ``wait`` wrote), so a later attempt at the operation reads it instead of
    # writing it again: an attempt in another process, or a poll of an MCP task (fronts.mcp).
    carried = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "allocation_operation"  # taken over from the allocation app by state alone
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
    overwrite the operation themselves; ``idempotency.settlement.observe`` decides."""

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
        db_table = "allocation_operationobservation"
        indexes = [models.Index(fields=["operation", "created_at"], name="observation_operation_time")]
