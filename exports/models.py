"""An export, what each of its attempts wrote, and its chunks of rows (SPEC §7.3).

The tables keep the names the tasks app gave them (``tasks_export`` …): the models moved
here by state alone (migrations ``tasks.0011`` and ``exports.0001``), no row was copied.
"""
from __future__ import annotations

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models import Q
from django.utils import timezone

from common.space_keys import SpaceForeignKey


class Export(models.Model):
    """A steward's export of a space (SPEC §7.3), settled through its own operation."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+")
    requested_by = SpaceForeignKey("spaces.Member", null=True, on_delete=models.SET_NULL, related_name="+")
    operation = SpaceForeignKey("idempotency.Operation", on_delete=models.PROTECT, related_name="exports")
    # The tuple the export was reserved with; a share opens only for a completion under it.
    reserved_fingerprint = models.CharField(max_length=64)
    reserved_generation = models.PositiveIntegerField()
    # The share link (SPEC §7.3): only a hash of its token is kept, with its expiry. The token
    # is a global lookup (a share has no space in its URL): ``ShareToken`` finds its space.
    share_token_hash = models.CharField(max_length=64, null=True, blank=True)
    share_expires_at = models.DateTimeField(null=True, blank=True)
    # Attempts (lease epochs) spent before a steward's last retry: they count no more.
    attempts_before_retry = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "tasks_export"  # made by the tasks app, which held exports before
        constraints = [
            models.UniqueConstraint(fields=["space", "operation"], name="export_one_per_operation"),
            models.UniqueConstraint(fields=["space", "share_token_hash"], name="export_unique_share_token_hash",
                                    condition=Q(share_token_hash__isnull=False)),
        ]


class ShareToken(models.Model):
    """The global lookup of a share token's hash (SPEC §11): the space and export it opens, so the
    export's own read goes to that space. Written and dropped with the export's share; a
    reference table under Citus. Holds the token's uniqueness across all spaces."""

    token_hash = models.CharField(max_length=64, primary_key=True)
    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+")
    export_id = models.BigIntegerField()

    class Meta:
        indexes = [models.Index(fields=["export_id"], name="sharetoken_by_export")]


class ExportResult(models.Model):
    """What one attempt (lease epoch) of an export wrote, once it had written it all: the
    header (space, time, counts); the rows are its ``ExportChunk``s. Settlement names the
    attempt that counts."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+")
    export = SpaceForeignKey(Export, on_delete=models.CASCADE, related_name="results")
    lease_epoch = models.PositiveIntegerField()
    data = models.JSONField(encoder=DjangoJSONEncoder)  # timestamps as ISO 8601
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "tasks_exportresult"
        constraints = [
            models.UniqueConstraint(fields=["space", "export", "lease_epoch"], name="export_result_one_per_epoch"),
        ]


class ExportChunk(models.Model):
    """A batch of one section's rows (``tasks``, ``claims``, …) written by one attempt, as the
    JSON array members they are in the shared document: a worker writes an export in bounded
    memory, and a share streams it back the same way. Rows in PostgreSQL rather than files, so
    any server process, on any machine, can stream any export."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    export = SpaceForeignKey(Export, on_delete=models.CASCADE, related_name="chunks", db_index=False)
    lease_epoch = models.PositiveIntegerField()
    seq = models.PositiveIntegerField()
    section = models.CharField(max_length=16)
    rows = models.PositiveIntegerField()
    data = models.TextField()

    class Meta:
        db_table = "tasks_exportchunk"
        constraints = [
            models.UniqueConstraint(fields=["space", "export", "lease_epoch", "seq"], name="exportchunk_one_per_seq"),
        ]
        indexes = [models.Index(fields=["export", "lease_epoch", "seq"], name="exportchunk_by_export")]
