"""Export, then share (SPEC §7.3).

An export is an operation like any idempotent request: a worker takes a lease (a new
fencing token) through settlement, writes the space as JSON under that epoch, in chunks
of rows (``ExportChunk``) read by keyset, so its memory holds one batch whatever the
space's size, extending its lease as it goes; then it reports success with the tuple the
server committed for its lease. A share streams the chunks back as one JSON document. A
worker killed mid-export loses its lease when it expires; the next worker runs under a
new epoch, and the dead one's late report is quarantined, so it can never open a share.
An attempt that fails reports why; after SPACES_EXPORT_MAX_ATTEMPTS the export is
``failed`` until a steward retries it.
"""
from __future__ import annotations

import hashlib
import json
import logging
import secrets
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Callable, Iterator

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from idempotency.models import (
    ObservationKind,
    ObservationVerdict,
    Operation,
    OperationState,
)
from common.sql import ADVISORY_XACT_LOCK
from idempotency.settlement import Report, observe, open_operation
from spaces.models import ApiKey, Member, Space
from spaces.key_lookup import hash_secret
from exports import errors
from exports.document import SECTIONS, Section
from exports.models import Export, ExportChunk, ExportResult, ShareToken
from exports.selectors import attempts_used

logger = logging.getLogger("spaces.exports")


# First key of the export queue's advisory lock (tasks uses 13 and 14); the second is the space's id.
QUEUE_LOCK_CLASS = 15
QUEUE_RETRY_AFTER_MS = 5000


def request_export(*, space: Space, actor: Member, api_key: ApiKey | None) -> Export:
    """A new export, unless the space has ``max_queued_exports`` waiting or running: then 429.
    The count and the insert happen under the space's export-queue lock, so racing requests
    never queue one more than the limit."""
    key = f"export:{uuid.uuid4()}"
    generation = api_key.generation if api_key is not None else 1
    fingerprint = hashlib.sha256(f"export\n{space.slug}\n{actor.pk}\n{key}".encode()).hexdigest()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(ADVISORY_XACT_LOCK, [QUEUE_LOCK_CLASS, space.pk])
        queued = Export.objects.filter(space=space, operation__state__in=[OperationState.UNKNOWN,
                                                                          OperationState.IN_PROGRESS]).count()
        limit = Space.objects.values_list("max_queued_exports", flat=True).get(pk=space.pk)
        if queued >= limit:
            raise errors.ExportQueueFull(
                f"The space has {queued} exports waiting or running (at most {limit}): retry once one has "
                "completed or failed.", retry_after_ms=QUEUE_RETRY_AFTER_MS,
                headers={"Retry-After": str(QUEUE_RETRY_AFTER_MS // 1000)})
        operation = open_operation(space=space, member=actor, key=key, fingerprint=fingerprint,
                                   binding_generation=generation, method="EXPORT",
                                   path=f"/v1/spaces/{space.slug}/exports")
        return Export.objects.create(space=space, requested_by=actor, operation=operation,
                                     reserved_fingerprint=fingerprint, reserved_generation=generation)


def batches(space: Space, section: Section, size: int) -> Iterator[list[dict]]:
    """A section's rows, ``size`` at a time, by keyset (no server-side cursor: a transaction-mode
    pooler allows none), so memory holds one batch whatever the space's size."""
    last = None
    rows = section.model.objects.filter(space=space).order_by(section.key)
    while True:
        page = rows.filter(**{f"{section.key}__gt": last}) if last is not None else rows
        values = list(page.values_list(section.key, *section.fields)[:size])
        if not values:
            return
        last = values[-1][0]
        yield [dict(zip(section.fields, row[1:])) for row in values]


class LeaseLost(Exception):
    """Another attempt took the export over: this one stops writing."""


Progress = Callable[[int, str, int], None]  # export id, section, rows of it written so far


def write_chunks(export: Export, operation: Operation, progress: Progress | None = None) -> dict[str, int]:
    """Write every section in chunks under the attempt's epoch, extending its lease as it goes
    (and telling ``progress`` after each chunk); the counts of rows written."""
    size = settings.SPACES_EXPORT_BATCH_ROWS
    counts: dict[str, int] = {}
    seq = 0
    beat = time.monotonic()
    ExportChunk.objects.filter(export=export, lease_epoch=operation.lease_epoch).delete()  # a rerun of this epoch
    for section in SECTIONS:
        counts[section.name] = 0
        for batch in batches(export.space, section, size):
            ExportChunk.objects.create(
                space_id=export.space_id, export=export, lease_epoch=operation.lease_epoch, seq=seq,
                section=section.name, rows=len(batch),
                data=",".join(json.dumps(row, cls=DjangoJSONEncoder, ensure_ascii=False) for row in batch))
            seq += 1
            counts[section.name] += len(batch)
            if progress is not None:
                progress(export.pk, section.name, counts[section.name])
            if time.monotonic() - beat > heartbeat_seconds():
                heartbeat(operation)
                beat = time.monotonic()
    return counts


def heartbeat_seconds() -> float:
    return max(1.0, settings.SPACES_OPERATION_LEASE_SECONDS / 3)


def heartbeat(operation: Operation) -> None:
    """Extend the attempt's lease (settlement refuses once it expired or was taken over)."""
    settled = observe(operation=operation, report=Report.for_attempt(operation, ObservationKind.IN_PROGRESS))
    if settled.verdict != ObservationVerdict.APPLIED or settled.operation.state != OperationState.IN_PROGRESS:
        raise LeaseLost(f"attempt {operation.lease_epoch} lost its lease")


def runnable_exports():
    """Exports nobody is running: never started, retryable, or whose lease ran out."""
    return Export.objects.filter(
        Q(operation__state=OperationState.UNKNOWN)
        | Q(operation__state=OperationState.IN_PROGRESS, operation__lease_expires_at__lte=timezone.now())
    )


def lease_next_export(*, skip: set[int] = frozenset()) -> tuple[Export, Operation] | None:
    """Take a lease on the oldest runnable export; SKIP LOCKED keeps workers off each other's rows.
    An export whose attempts ran out (the last one's lease expired: its worker is gone) is failed
    instead, and the next one is looked at."""
    while True:
        with transaction.atomic():
            export = (
                runnable_exports().exclude(pk__in=skip)
                .select_for_update(skip_locked=True, of=("self",)).select_related("operation", "space")
                .order_by("pk").first()
            )
            if export is None:
                return None
            operation = export.operation
            if operation.state == OperationState.IN_PROGRESS:  # its lease ran out: say so first
                if attempts_used(export, operation) >= settings.SPACES_EXPORT_MAX_ATTEMPTS:
                    fail(export, operation, f"attempt {attempts_used(export, operation)} of "
                         f"{settings.SPACES_EXPORT_MAX_ATTEMPTS} ended without a report (its lease expired)")
                    skip = {*skip, export.pk}
                    continue
                observe(operation=operation, report=Report.for_attempt(operation, ObservationKind.LEASE_EXPIRED))
                operation = Operation.objects.get(pk=operation.pk)
            settled = observe(operation=operation, report=Report.for_attempt(operation, ObservationKind.LEASE))
            if settled.verdict != ObservationVerdict.APPLIED:
                return None
            return export, settled.operation


def fail(export: Export, operation: Operation, reason: str) -> str:
    """Settle the export failed (terminal until a steward retries it), naming the reason."""
    body = {"export": export.pk, "reason": reason, "attempts": attempts_used(export, operation)}
    return observe(operation=operation, report=Report.for_attempt(
        operation, ObservationKind.FAILURE, status=500, body=body)).verdict


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to: ``completed``, ``retryable`` or ``failed``, and why not completed."""

    export: int
    attempt: int
    state: str
    reason: str = ""


def write_export(export: Export, operation: Operation, progress: Progress | None = None) -> Outcome:
    """Run one leased attempt: write the data under its epoch in chunks, then report with its
    fencing token. A failure is reported with its reason: retryable while attempts remain
    (SPACES_EXPORT_MAX_ATTEMPTS), then failed."""
    attempt = attempts_used(export, operation)
    try:
        counts = write_chunks(export, operation, progress)
        header = {"space": export.space.slug, "exported_at": timezone.now().isoformat(), "counts": counts}
        ExportResult.objects.update_or_create(
            space_id=export.space_id, export=export, lease_epoch=operation.lease_epoch, defaults={"data": header})
        body = {"export": export.pk, "result_epoch": operation.lease_epoch, "counts": counts}
        verdict = observe(operation=operation, report=Report.for_attempt(
            operation, ObservationKind.SUCCESS, status=200, body=body)).verdict
        if verdict == ObservationVerdict.APPLIED:
            return Outcome(export.pk, attempt, OperationState.COMPLETED)
        return Outcome(export.pk, attempt, OperationState.UNKNOWN, f"its report was {verdict} (another attempt "
                                                                     "took the export over)")
    except Exception as error:  # the attempt failed: say why, and settle it as such
        logger.exception("export %s attempt %s failed", export.pk, operation.lease_epoch)
        reason = f"{type(error).__name__}: {error}"[:500]
        if isinstance(error, LeaseLost):
            return Outcome(export.pk, attempt, OperationState.UNKNOWN, reason)
        if attempt >= settings.SPACES_EXPORT_MAX_ATTEMPTS:
            fail(export, operation, reason)
            return Outcome(export.pk, attempt, OperationState.FAILED, reason)
        body = {"export": export.pk, "reason": reason, "attempts": attempt}
        observe(operation=operation, report=Report.for_attempt(operation, ObservationKind.TRANSIENT, status=500,
                                                               body=body))
        return Outcome(export.pk, attempt, OperationState.UNKNOWN, reason)


def drain_exports(progress: Progress | None = None) -> list[Outcome]:
    """Run every waiting export once; one that fails stays retryable for the next drain (until
    its attempts run out)."""
    tried: set[int] = set()
    outcomes = []
    while True:
        leased = lease_next_export(skip=tried)
        if leased is None:
            return outcomes
        tried.add(leased[0].pk)
        outcomes.append(write_export(*leased, progress=progress))


def retry_export(*, export: Export) -> Export:
    """``POST …/exports/{id}/retry``: a failed export is retryable again, with its attempts anew."""
    with transaction.atomic():
        export = Export.objects.select_for_update().get(pk=export.pk)
        operation = Operation.objects.get(pk=export.operation_id)
        if operation.state != OperationState.FAILED:
            raise errors.ExportNotFailed(f"Export {export.pk} is {operation.state}: only a failed export is retried "
                                         "by hand.", state=operation.state)
        observe(operation=operation, report=Report.for_attempt(operation, ObservationKind.RETRY))
        export.attempts_before_retry = operation.lease_epoch
        export.save(update_fields=["attempts_before_retry"])
    return export


DEFAULT_SHARE_HOURS = 7 * 24


def share_export(*, export: Export, expires_in_hours: int = DEFAULT_SHARE_HOURS) -> str:
    """A new share token, only for an export completed under the tuple it was reserved with.
    Only its hash is stored, so each share is a new token; the export's earlier token stops
    opening it. It expires after ``expires_in_hours`` (SPEC §7.3: default 7 days)."""
    with transaction.atomic():
        export = Export.objects.select_for_update().get(pk=export.pk)
        operation = Operation.objects.get(pk=export.operation_id)
        completed = (
            operation.state == OperationState.COMPLETED
            and (operation.fingerprint, operation.binding_generation)
            == (export.reserved_fingerprint, export.reserved_generation)
            and ExportResult.objects.filter(export=export,
                                            lease_epoch=(operation.response_body or {}).get("result_epoch")).exists()
        )
        if not completed:
            raise errors.ExportNotCompleted(f"Export {export.pk} is {operation.state}; share it once it completes.",
                                            state=operation.state)
        token = secrets.token_urlsafe(24)
        ShareToken.objects.filter(export_id=export.pk).delete()
        export.share_token_hash = hash_secret(token)
        ShareToken.objects.create(token_hash=export.share_token_hash, space_id=export.space_id, export_id=export.pk)
        export.share_expires_at = timezone.now() + timedelta(hours=expires_in_hours)
        export.save(update_fields=["share_token_hash", "share_expires_at"])
        return token


def unshare_export(*, export: Export) -> bool:
    """Revoke the export's share link; False when it had none."""
    with transaction.atomic():
        ShareToken.objects.filter(export_id=export.pk).delete()
        return Export.objects.filter(space_id=export.space_id, pk=export.pk, share_token_hash__isnull=False).update(
            share_token_hash=None, share_expires_at=None) == 1
