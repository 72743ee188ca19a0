"""Reads of exports the fronts share: an export of a space, its state as shown, and a shared
document streamed to whoever holds its token."""
from __future__ import annotations

from typing import Iterator

from django.conf import settings

from common.refusals import NotFound
from exports.models import Export, ShareToken
from exports.services import attempts_used, last_error, shared_now, stream_document
from idempotency.models import Operation, OperationState
from spaces.models import Member
from spaces.selectors import as_int
from spaces.key_lookup import hash_secret


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

