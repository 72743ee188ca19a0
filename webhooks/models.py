"""The tables of webhooks (SPEC §17).

The feed is the outbox: an event commits with its change, and an endpoint's ``cursor`` says
how far along the feed its deliveries were written. The delivery worker moves the cursor and
writes a ``Delivery`` for each event the endpoint takes, in one transaction under the
endpoint's lease, so nothing committed is skipped and nothing is written twice; each try is
a ``DeliveryAttempt``.
"""
from __future__ import annotations

from datetime import timedelta

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from common.space_keys import SpaceForeignKey

ROTATION_OVERLAP = timedelta(hours=24)  # the old secret signs beside the new one this long
DELIVERY_LIFETIME = timedelta(hours=24)  # a delivery is retried this long, then failed


class Endpoint(models.Model):
    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    url = models.URLField(max_length=2000)
    types = ArrayField(models.CharField(max_length=64), default=list, blank=True)  # empty: every type
    description = models.CharField(max_length=500, blank=True, default="")
    enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=200, blank=True, default="")
    # Signing secrets (whsec_…). They sign, so they are kept as they are, never shown again.
    secret = models.CharField(max_length=80)
    previous_secret = models.CharField(max_length=80, blank=True, default="")
    previous_secret_until = models.DateTimeField(null=True, blank=True)  # it signs beside the new one until then
    cursor = models.BigIntegerField(default=0)  # the last seq of the feed taken into deliveries
    failing_since = models.DateTimeField(null=True, blank=True)  # the first failure since the last 2xx
    # The worker serving the endpoint holds it until then (a worker killed mid-delivery lets go by expiry).
    lease_until = models.DateTimeField(null=True, blank=True)
    lease_token = models.CharField(max_length=32, blank=True, default="")  # whose lease: a late one records nothing
    created_by = SpaceForeignKey("spaces.Member", null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+", db_index=False)
    created_at = models.DateTimeField(default=timezone.now)
    # What a delivery's body is (webhooks.formats): the feed's event, or another front's rendering
    # of it (an A2A push notification, SPEC §18).
    format = models.CharField(max_length=16, default="event")
    # An A2A push notification config (SPEC §18): one task's events, to the requester's URL, with
    # its id, token and Authorization as the requester gave them (they are the requester's to send).
    task_number = models.BigIntegerField(null=True, blank=True)
    push_id = models.CharField(max_length=64, blank=True, default="")
    push_token = models.CharField(max_length=500, blank=True, default="")
    push_authorization = models.CharField(max_length=1000, blank=True, default="")

    class Meta:
        indexes = [models.Index(fields=["space", "id"], name="endpoint_space_id")]
        constraints = [models.UniqueConstraint(fields=["space", "task_number", "push_id"], name="endpoint_push_once",
                                               condition=models.Q(task_number__isnull=False))]

    def extra_headers(self) -> dict[str, str]:
        """What an A2A push config asks each delivery to carry (its token, its Authorization)."""
        headers = {}
        if self.push_token:
            headers["X-A2A-Notification-Token"] = self.push_token
        if self.push_authorization:
            headers["Authorization"] = self.push_authorization
        return headers

    def __str__(self) -> str:
        return self.url


class DeliveryState(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class Delivery(models.Model):
    """One event for one endpoint. ``body`` is the event as sent, the same bytes on every try;
    ``event_id`` its ``webhook-id``. An endpoint's pending deliveries go in ``id`` order (the
    order the worker wrote them, which is seq order), one at a time."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    endpoint = SpaceForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries", db_index=False)
    event_id = models.CharField(max_length=64)
    seq = models.BigIntegerField(null=True, blank=True)  # null for a test
    type = models.CharField(max_length=64)
    body = models.TextField()
    state = models.CharField(max_length=16, choices=DeliveryState.choices, default=DeliveryState.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_at = models.DateTimeField(default=timezone.now)
    give_up_at = models.DateTimeField()  # failed when a try fails after this
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["space", "endpoint", "seq"], name="delivery_once_per_event",
                                               condition=models.Q(seq__isnull=False))]
        indexes = [
            # An endpoint's queue, head first.
            models.Index(fields=["endpoint", "id"], name="delivery_pending",
                         condition=models.Q(state="pending")),
            models.Index(fields=["endpoint", "-id"], name="delivery_endpoint_recent"),
        ]

    def __str__(self) -> str:
        return f"delivery {self.pk} ({self.type})"


class DeliveryAttempt(models.Model):
    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    delivery = SpaceForeignKey(Delivery, on_delete=models.CASCADE, related_name="tries")
    at = models.DateTimeField(default=timezone.now)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)  # null: no answer (see error)
    latency_ms = models.PositiveIntegerField(default=0)
    answer = models.TextField(blank=True, default="")  # its first 1 KiB
    error = models.CharField(max_length=300, blank=True, default="")
