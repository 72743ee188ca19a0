"""A long call its caller follows (SPEC §23): what to run again, and until when."""
from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from common.space_keys import SpaceForeignKey


class LongCall(models.Model):
    """A waited call made durable before its caller is told to follow it (the MCP task).

    It is not the call's outcome: the call runs under ``idempotency_key`` as an attempt at one
    operation (SPEC §7.1), and each poll runs it again, so the operation holds the outcome (its
    work and answer commit together) and a poll after the end replays it. This row says which
    call to run again, for whom, and when its wait ends."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    member = SpaceForeignKey("spaces.Member", on_delete=models.CASCADE, related_name="+", db_index=False)
    tool = models.CharField(max_length=64)
    arguments = models.JSONField(default=dict)
    idempotency_key = models.CharField(max_length=255)
    deadline = models.DateTimeField()
    # Input requests (questions to the caller) it answered or declined, by key: never listed again.
    responded = models.JSONField(default=list, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # A retried call with the same key follows the same task (SPEC §7.1).
            models.UniqueConstraint(fields=["space", "member", "idempotency_key"], name="long_call_one_per_member_key"),
        ]
        indexes = [models.Index(fields=["created_at"], name="long_call_by_age")]  # the purge's
