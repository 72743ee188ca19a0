"""Idempotent operations (SPEC §7.1): the tuple, its checks, settlement of an attempt's answer,
and the operator's expiry and purge. ``commands.unit`` runs an attempt; every change
after the first touch goes through ``idempotency.settlement.observe``.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from idempotency import errors
from idempotency.models import (
    ObservationKind,
    ObservationVerdict,
    Operation,
    OperationState,
)
from idempotency.settlement import Report, lease_seconds, observe
from spaces.fingerprints import request_fingerprint  # noqa: F401  (the runner's, and join's)
from spaces.models import ApiKey

TRANSIENT_CODES = frozenset({"conflict_key_reserved"})


def check_tuple(operation: Operation, *, api_key: ApiKey, idempotency_key: str, fingerprint: str) -> None:
    """The stored tuple is immutable: a touch that does not match it is refused, and changes nothing."""
    if operation.fingerprint != fingerprint:
        raise errors.IdempotencyKeyReused(
            f"Idempotency-Key {idempotency_key!r} was first used for {operation.method} {operation.path} "
            "with another body; use a new key for a new request."
        )
    if operation.binding_generation != api_key.generation:
        raise errors.IdempotencyBindingMismatch(
            f"Idempotency-Key {idempotency_key!r} is bound to key generation {operation.binding_generation}, "
            f"this key is generation {api_key.generation}; use a new Idempotency-Key.",
            stored_generation=operation.binding_generation,
            presented_generation=api_key.generation,
        )


def first_touch_row(*, space_id: int, member_id: int, binding_generation: int, idempotency_key: str, method: str,
                    path: str, fingerprint: str) -> Operation:
    """The record a first touch stores: the tuple, in progress under a new lease (epoch 1)."""
    now = timezone.now()
    return Operation(
        space_id=space_id, member_id=member_id, key=idempotency_key, fingerprint=fingerprint,
        binding_generation=binding_generation, method=method, path=path, state=OperationState.IN_PROGRESS,
        lease_epoch=1, lease_expires_at=now + timedelta(seconds=lease_seconds()), created_at=now, updated_at=now,
    )


def is_transient(status: int, body: Any) -> bool:
    """Outcomes a retry may change (SPEC §7.1): 409 conflict_key_reserved, 429, 5xx."""
    if status == 429 or status >= 500:
        return True
    return status == 409 and isinstance(body, dict) and body.get("code") in TRANSIENT_CODES


# What jsonb cannot hold: lone surrogates (valid JSON escapes, not valid Unicode), which
# json.dumps(ensure_ascii=False) writes as themselves, and NUL, which it writes as the escape
# \u0000 (one not itself behind an escaped backslash).
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
NUL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def storable(body: Any) -> Any:
    """``body`` as PostgreSQL's jsonb takes it: a refusal may echo what the request sent, lone
    surrogates and NULs included, which are stored as U+FFFD (and replayed so)."""
    text = json.dumps(body, ensure_ascii=False)
    if not LONE_SURROGATE.search(text) and "\\u0000" not in text:
        return body
    return json.loads(NUL_ESCAPE.sub("\\1\ufffd", LONE_SURROGATE.sub("\ufffd", text)))


def settle_operation(*, operation: Operation, status: int, body: Any, headers: dict[str, str],
                     secret: dict[str, Any] | None = None, content: str | None = None) -> bool:
    """Report what the attempt holding ``operation.lease_epoch`` observed; True if it settled.

    A transient outcome only ends the lease, so a retry can run; anything else completes
    the operation with the response to replay.
    """
    kind = ObservationKind.TRANSIENT if is_transient(status, body) else ObservationKind.SUCCESS
    report = Report.for_attempt(operation, kind, status=status, body=storable(body), content=content, headers=headers,
                                secret=secret)
    settled = observe(operation=operation, report=report)
    return settled.verdict == ObservationVerdict.APPLIED


def carry(*, operation: Operation, name: str, value: Any) -> None:
    """Keep ``value`` on ``operation`` under ``name``, in the attempt's transaction (``carried``)."""
    operation.carried = {**(operation.carried or {}), name: value}
    Operation.objects.filter(pk=operation.pk).update(carried=operation.carried)


def expire_operations(*, dry_run: bool = False, ids: list[int] | None = None) -> int:
    """Leases that ran out become ``unknown`` (retryable); returns how many.

    With ``ids`` (the admin's *Expire now*), those in-progress operations end their lease
    at once. Each goes through settlement with the epoch it had, so a run racing another
    (or a new lease) changes each operation at most once and never ends a newer lease.
    """
    stale = Operation.objects.filter(state=OperationState.IN_PROGRESS)
    stale = stale.filter(lease_expires_at__lte=timezone.now()) if ids is None else stale.filter(pk__in=ids)
    if dry_run:
        return stale.count()
    expired = 0
    for operation in stale.order_by("pk").iterator():
        report = Report.for_attempt(operation, ObservationKind.LEASE_EXPIRED)
        expired += observe(operation=operation, report=report).verdict == ObservationVerdict.APPLIED
    return expired


def retention_cutoff() -> datetime:
    """Operations made before this are past their retention (SPACES_OPERATION_RETENTION_HOURS)."""
    return timezone.now() - timedelta(hours=settings.SPACES_OPERATION_RETENTION_HOURS)


def purge_operations(*, dry_run: bool = False) -> int:
    """Delete operations older than the retention (default 24 hours); in-flight ones stay."""
    old = Operation.objects.filter(created_at__lt=retention_cutoff()).exclude(state=OperationState.IN_PROGRESS)
    if dry_run:
        return old.count()
    return old.delete()[1].get(Operation._meta.label, 0)  # operations, not their cascaded observations
