"""Reads of exports the fronts share: an export of a space, its state as shown, and a shared
document streamed to whoever holds its token."""
from __future__ import annotations

import json
from typing import Iterator

from django.conf import settings
from django.utils import timezone

from common.refusals import NotFound
from exports.document import SECTIONS
from exports.models import Export, ExportChunk, ExportResult, ShareToken
from idempotency.models import ObservationKind, Operation, OperationObservation, OperationState
from spaces.models import Member
from spaces.selectors import as_int
from spaces.key_lookup import hash_secret


CHUNKS_A_READ = 20  # a share reads this many chunks (of SPACES_EXPORT_BATCH_ROWS rows) at a time


def get_export(member: Member, export_id: object) -> Export:
    export = Export.objects.filter(space=member.space, pk=as_int(export_id)).first()
    if export is None:
        raise NotFound(f"No export {export_id} in this space.")
    return export


def export_state(export: Export) -> dict:
    operation = Operation.objects.get(pk=export.operation_id)
    body = {"id": export.pk, "state": operation.state, "attempts": attempts_used(export, operation),
            "max_attempts": settings.SPACES_EXPORT_MAX_ATTEMPTS,
            "created_at": export.created_at, "shared": shared_now(export),
            "share_expires_at": export.share_expires_at if shared_now(export) else None,
            "last_error": last_error(operation)}
    if operation.state == OperationState.COMPLETED:
        body["result"] = operation.response_body
    return body


def shared_export(*, token: str) -> Iterator[bytes]:
    """The shared document, streamed (``stream_document``); 404 unless the token opens a share now."""
    share = ShareToken.objects.filter(token_hash=hash_secret(token)).first() if token else None
    export = None if share is None else Export.objects.select_related("operation").filter(
        space_id=share.space_id, pk=share.export_id, share_token_hash=share.token_hash).first()
    if export is None or not shared_now(export):
        raise NotFound("No export is shared under this token (it may have expired or been revoked).")
    return stream_document(export, export.operation.response_body["result_epoch"])


def stream_document(export: Export, epoch: int) -> Iterator[bytes]:
    """The shared JSON document, read back chunk by chunk: ``{"space", "exported_at", "tasks": [
    …], "claims": […], …}``, in bounded memory."""
    header = ExportResult.objects.get(export=export, lease_epoch=epoch).data
    yield json.dumps({"space": header["space"], "exported_at": header["exported_at"]})[:-1].encode()
    chunks = ExportChunk.objects.filter(export=export, lease_epoch=epoch)
    for section in SECTIONS:
        yield f', "{section.name}": ['.encode()
        last, first = -1, True
        while True:
            page = list(chunks.filter(section=section.name, seq__gt=last).order_by("seq")
                        .values_list("seq", "data")[:CHUNKS_A_READ])
            for seq, data in page:
                yield (data if first else "," + data).encode()
                first, last = False, seq
            if len(page) < CHUNKS_A_READ:
                break
        yield b"]"
    yield b"}"


def attempts_used(export: Export, operation: Operation) -> int:
    return operation.lease_epoch - export.attempts_before_retry


def last_error(operation: Operation) -> dict | None:
    """The reason the latest failed attempt gave (a failed export's is its final one)."""
    if operation.state == OperationState.FAILED:
        return operation.response_body
    report = (OperationObservation.objects.filter(operation=operation, kind=ObservationKind.TRANSIENT)
              .exclude(response_body=None).order_by("-pk").values_list("response_body", flat=True).first())
    return report


def shared_now(export: Export) -> bool:
    return export.share_token_hash is not None and (export.share_expires_at or timezone.now()) > timezone.now()
