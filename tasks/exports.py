"""Export, then share (SPEC §7.3).

An export is an operation like any idempotent request: a worker takes a lease (a new
fencing token) through settlement, writes the space as JSON under that epoch, and
reports success with the tuple the server committed for its lease. A worker killed
mid-export loses its lease when it expires; the next worker runs under a new epoch, and
the dead one's late report is quarantined, so it can never open a share.
"""
from __future__ import annotations

import hashlib
import logging
import secrets
import uuid
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from allocation.models import (
    ObservationKind,
    ObservationVerdict,
    Operation,
    OperationState,
)
from allocation.settlement import Report, observe
from common.refusals import NotFound
from spaces.models import ApiKey, Member, Space
from spaces.services import hash_secret
from tasks import errors
from tasks.models import (
    Attempt,
    Check,
    Claim,
    Export,
    ExportResult,
    Note,
    Task,
    TaskEvent,
)

logger = logging.getLogger("spaces.exports")


def request_export(*, space: Space, actor: Member, api_key: ApiKey | None) -> Export:
    key = f"export:{uuid.uuid4()}"
    generation = api_key.generation if api_key is not None else 1
    fingerprint = hashlib.sha256(f"export\n{space.slug}\n{actor.pk}\n{key}".encode()).hexdigest()
    with transaction.atomic():
        operation = Operation.objects.create(
            space=space, member=actor, key=key, fingerprint=fingerprint, binding_generation=generation,
            method="EXPORT", path=f"/v1/spaces/{space.slug}/exports", state=OperationState.UNKNOWN, lease_epoch=0,
        )
        return Export.objects.create(space=space, requested_by=actor, operation=operation,
                                     reserved_fingerprint=fingerprint, reserved_generation=generation)


def export_data(space: Space) -> dict:
    def rows(queryset, *fields):
        return [dict(zip(fields, values)) for values in queryset.values_list(*fields)]

    tasks = Task.objects.filter(space=space).order_by("number")
    return {
        "space": space.slug,
        "exported_at": timezone.now().isoformat(),
        "tasks": rows(tasks, "number", "title", "body", "status", "delivery_mode", "work_item_id", "conflict_target",
                      "cycle", "creator_id", "superseded_by__number", "created_at"),
        "claims": rows(Claim.objects.filter(space=space).order_by("pk"), "id", "task__number", "member_id", "cycle",
                       "origin", "created_at", "expires_at", "ended_at", "end_reason"),
        "attempts": rows(Attempt.objects.filter(space=space).order_by("pk"), "task__number", "number", "cycle",
                         "member_id", "post_id", "state", "created_at", "decided_at"),
        "checks": rows(Check.objects.filter(space=space).order_by("pk"), "task__number", "attempt__number",
                       "member_id", "cycle", "verdict", "reason", "created_at"),
        "notes": rows(Note.objects.filter(space=space).order_by("pk"), "id", "task__number", "author_id",
                      "criterion", "body", "created_at"),
        "history": rows(TaskEvent.objects.filter(space=space).order_by("pk"), "task__number", "kind", "actor_id",
                        "details", "created_at"),
    }


def runnable_exports():
    """Exports nobody is running: never started, retryable, or whose lease ran out."""
    return Export.objects.filter(
        Q(operation__state=OperationState.UNKNOWN)
        | Q(operation__state=OperationState.IN_PROGRESS, operation__lease_expires_at__lte=timezone.now())
    )


def lease_next_export(*, skip: set[int] = frozenset()) -> tuple[Export, Operation] | None:
    """Take a lease on the oldest runnable export; SKIP LOCKED keeps workers off each other's rows."""
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
            observe(operation=operation, report=Report.for_attempt(operation, ObservationKind.LEASE_EXPIRED))
            operation = Operation.objects.get(pk=operation.pk)
        settled = observe(operation=operation, report=Report.for_attempt(operation, ObservationKind.LEASE))
        if settled.verdict != ObservationVerdict.APPLIED:
            return None
        return export, settled.operation


def write_export(export: Export, operation: Operation) -> str:
    """Run one leased attempt: write the data under its epoch, then report with its fencing token."""
    try:
        data = export_data(export.space)
        ExportResult.objects.update_or_create(
            space_id=export.space_id, export=export, lease_epoch=operation.lease_epoch, defaults={"data": data}
        )
        body = {"export": export.pk, "result_epoch": operation.lease_epoch,
                "counts": {name: len(data[name]) for name in ["tasks", "claims", "attempts", "checks", "notes",
                                                                "history"]}}
        report = Report.for_attempt(operation, ObservationKind.SUCCESS, status=200, body=body)
    except Exception:
        logger.exception("export %s attempt %s failed", export.pk, operation.lease_epoch)
        report = Report.for_attempt(operation, ObservationKind.TRANSIENT)
    return observe(operation=operation, report=report).verdict


def drain_exports() -> int:
    """Run every waiting export once; one that fails stays retryable for the next drain."""
    tried: set[int] = set()
    while True:
        leased = lease_next_export(skip=tried)
        if leased is None:
            return len(tried)
        tried.add(leased[0].pk)
        write_export(*leased)


def export_state(export: Export) -> dict:
    operation = Operation.objects.get(pk=export.operation_id)
    body = {"id": export.pk, "state": operation.state, "attempts": operation.lease_epoch,
            "created_at": export.created_at, "shared": shared_now(export),
            "share_expires_at": export.share_expires_at if shared_now(export) else None}
    if operation.state == OperationState.COMPLETED:
        body["result"] = operation.response_body
    return body


DEFAULT_SHARE_HOURS = 7 * 24


def shared_now(export: Export) -> bool:
    return export.share_token_hash is not None and (export.share_expires_at or timezone.now()) > timezone.now()


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
        export.share_token_hash = hash_secret(token)
        export.share_expires_at = timezone.now() + timedelta(hours=expires_in_hours)
        export.save(update_fields=["share_token_hash", "share_expires_at"])
        return token


def unshare_export(*, export: Export) -> bool:
    """Revoke the export's share link; False when it had none."""
    return Export.objects.filter(pk=export.pk, share_token_hash__isnull=False).update(
        share_token_hash=None, share_expires_at=None) == 1


def shared_export(*, token: str) -> dict:
    export = (Export.objects.select_related("operation").filter(share_token_hash=hash_secret(token)).first()
              if token else None)
    if export is None or not shared_now(export):
        raise NotFound("No export is shared under this token (it may have expired or been revoked).")
    epoch = export.operation.response_body["result_epoch"]
    return ExportResult.objects.get(export=export, lease_epoch=epoch).data
