"""Settlement (SPEC §7.2): the only code that changes an operation's authoritative state.

``observe`` stores a report as an ``OperationObservation`` and then runs the stages on
a fresh read of the operation, committing with a compare-and-set whose predicate is the
whole tuple plus the revision. When the compare-and-set loses (someone settled in
between) it reloads and runs every stage again; it never assigns blindly.

- Stage A, tuple gate: a report whose (key, fingerprint, binding generation) differs
  from the operation's, or whose fencing token (lease epoch) is older than the
  operation's, is quarantined and changes nothing. It never blocks a later exact match.
- Stage B, non-terminal rank: ``unknown`` < ``in_progress``, the latter only while a lease
  is live. A heartbeat after the lease expired demotes to ``unknown``; it never resurrects.
- Stage C, terminal resolver: a matching success dominates ``unknown`` in either order;
  between two matching terminals (success, failure) the first commit wins and the second is
  a conflict. Only a steward's ``retry`` turns ``failed`` back into ``unknown``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.utils import timezone

from idempotency import sql
from idempotency.models import (
    ObservationKind,
    ObservationVerdict,
    Operation,
    OperationObservation,
    OperationState,
)

logger = logging.getLogger("spaces.settlement")
WARNINGS_PER_RECORD_PER_DAY = 8
MAX_ROUNDS = 10
TERMINAL_KINDS = {ObservationKind.SUCCESS, ObservationKind.FAILURE}
ENDING_KINDS = {ObservationKind.TRANSIENT, ObservationKind.TIMEOUT, ObservationKind.LEASE_EXPIRED,
                ObservationKind.TRANSPORT_ERROR}


@dataclass(frozen=True)
class Report:
    """What an attempt reports, with the tuple and fencing token the server gave it."""

    kind: str
    key: str
    fingerprint: str
    binding_generation: int
    lease_epoch: int | None = None
    status: int | None = None
    body: Any = None
    content: str | None = None  # the body as sent (Operation.response_content)
    headers: dict[str, str] | None = None
    secret: dict[str, Any] | None = None

    @classmethod
    def for_attempt(cls, operation: Operation, kind: str, **fields: Any) -> "Report":
        return cls(kind=kind, key=operation.key, fingerprint=operation.fingerprint,
                   binding_generation=operation.binding_generation, lease_epoch=operation.lease_epoch, **fields)


@dataclass(frozen=True)
class Settled:
    operation: Operation
    observation: OperationObservation

    @property
    def verdict(self) -> str:
        return self.observation.verdict


def lease_seconds() -> int:
    return settings.SPACES_OPERATION_LEASE_SECONDS


def open_operation(*, space, member, key: str, fingerprint: str, binding_generation: int, method: str,
                   path: str) -> Operation:
    """A new operation for work that outlives a request (an export, SPEC §7.2): ``unknown``
    until a worker's lease, from then on changed only by ``observe``."""
    return Operation.objects.create(space=space, member=member, key=key, fingerprint=fingerprint,
                                    binding_generation=binding_generation, method=method, path=path,
                                    state=OperationState.UNKNOWN, lease_epoch=0)


def observe(*, operation: Operation, report: Report) -> Settled:
    """Store ``report`` and settle it against ``operation``; returns the record after it.

    The first round trusts the caller's copy of the record (usually just read or written
    by it); the compare-and-set proves it current, and a verdict that changes nothing is
    re-checked on a fresh read before it is final.
    """
    current, fresh = operation, False
    for _ in range(MAX_ROUNDS):
        verdict, changes = decide(current, report)
        if changes:
            # The compare-and-set and the observation row in one statement (one round trip).
            observation_id = settle_and_record(current, changes, report)
            if observation_id is None:
                current, fresh = Operation.objects.get(pk=operation.pk), True
                continue  # someone settled in between: reload and run every stage again
            for name, value in changes.items():
                setattr(current, name, value)
            current.revision += 1
            observation = OperationObservation(
                pk=observation_id, space_id=operation.space_id, operation_id=operation.pk, kind=report.kind,
                key=report.key, fingerprint=report.fingerprint, binding_generation=report.binding_generation,
                lease_epoch=report.lease_epoch, response_status=report.status, response_body=report.body,
                verdict=verdict,
            )
            return Settled(current, observation)
        if not fresh:
            current, fresh = Operation.objects.get(pk=operation.pk), True
            continue
        observation = OperationObservation.objects.create(
            space_id=operation.space_id, operation_id=operation.pk, kind=report.kind, key=report.key,
            fingerprint=report.fingerprint, binding_generation=report.binding_generation,
            lease_epoch=report.lease_epoch, response_status=report.status, response_body=report.body,
            verdict=verdict,
        )
        if verdict == ObservationVerdict.QUARANTINED:
            warn_quarantined(current, observation)
        return Settled(current, observation)
    raise RuntimeError(f"operation {operation.pk}: settlement did not converge")


def settle_and_record(current: Operation, changes: dict[str, Any], report: Report) -> int | None:
    """Compare-and-set the record and, only if it won, insert the applied
    observation; returns the observation's id, or None when the compare-and-set lost."""
    db = connections[DEFAULT_DB_ALIAS]  # the wrapper itself: each use of the proxy is a thread-local lookup
    now = timezone.now()
    op_field, body_field = Operation._meta.get_field, OperationObservation._meta.get_field("response_body")
    params = [op_field(name).get_db_prep_save(value, db) for name, value in changes.items()]
    params += [now, current.space_id, current.pk, current.key, current.fingerprint, current.binding_generation, current.revision]
    observation = {
        "space_id": current.space_id, "operation_id": current.pk, "kind": report.kind, "key": report.key,
        "fingerprint": report.fingerprint, "binding_generation": report.binding_generation,
        "lease_epoch": report.lease_epoch, "response_status": report.status,
        "response_body": body_field.get_db_prep_save(report.body, db), "verdict": ObservationVerdict.APPLIED,
        "warned": False, "created_at": now,
    }
    params += [observation[column] for column in sql.OBSERVATION_COLUMNS]
    with connection.cursor() as cursor:
        cursor.execute(sql.settle(tuple(changes)), params)
        row = cursor.fetchone()
    return row[0] if row else None


def decide(op: Operation, report: Report) -> tuple[str, dict[str, Any]]:
    """The stages, as a pure decision over the current record: (verdict, fields to change)."""
    now = timezone.now()
    # Stage A: the tuple gate, then the fencing token.
    if (report.key, report.fingerprint, report.binding_generation) != (op.key, op.fingerprint, op.binding_generation):
        return ObservationVerdict.QUARANTINED, {}
    if report.kind != ObservationKind.LEASE and report.lease_epoch != op.lease_epoch:
        return ObservationVerdict.QUARANTINED, {}  # a dead attempt's late report
    settled = op.state in (OperationState.COMPLETED, OperationState.FAILED)
    lease_live = op.state == OperationState.IN_PROGRESS and op.lease_expires_at is not None and op.lease_expires_at > now
    # Stage C: terminals.
    if report.kind in TERMINAL_KINDS:
        if settled:
            return ObservationVerdict.CONFLICT, {}  # first commit wins
        state = OperationState.COMPLETED if report.kind == ObservationKind.SUCCESS else OperationState.FAILED
        return ObservationVerdict.APPLIED, {
            "state": state, "response_status": report.status, "response_body": report.body,
            "response_content": report.content, "response_headers": report.headers or {}, "secret": report.secret, "completed_at": now,
            "lease_expires_at": None,
        }
    if report.kind == ObservationKind.RETRY:
        if op.state != OperationState.FAILED:
            return ObservationVerdict.RECORDED, {}
        return ObservationVerdict.APPLIED, {"state": OperationState.UNKNOWN, "completed_at": None}
    if settled:
        return ObservationVerdict.RECORDED, {}  # a settled outcome dominates every non-terminal
    # Stage B: non-terminal rank.
    if report.kind == ObservationKind.LEASE:
        if lease_live:
            return ObservationVerdict.REFUSED, {}
        return ObservationVerdict.APPLIED, {
            "state": OperationState.IN_PROGRESS, "lease_epoch": op.lease_epoch + 1,
            "lease_expires_at": now + timedelta(seconds=lease_seconds()),
        }
    if report.kind == ObservationKind.IN_PROGRESS:
        if lease_live:
            return ObservationVerdict.APPLIED, {"lease_expires_at": now + timedelta(seconds=lease_seconds())}
        if op.state == OperationState.UNKNOWN:
            return ObservationVerdict.RECORDED, {}  # no resurrection
        return ObservationVerdict.APPLIED, {"state": OperationState.UNKNOWN, "lease_expires_at": None}  # demote
    # Timeouts, lease expiry, transport errors, transient outcomes: retryable.
    if op.state == OperationState.UNKNOWN:
        return ObservationVerdict.RECORDED, {}
    return ObservationVerdict.APPLIED, {"state": OperationState.UNKNOWN, "lease_expires_at": None}


def warn_quarantined(op: Operation, observation: OperationObservation) -> None:
    """One warning per distinct (fingerprint, generation) pair on a record, at most 8 a
    record in a rolling 24 hours; every mismatch is stored all the same."""
    with transaction.atomic():
        Operation.objects.select_for_update().filter(pk=op.pk).first()  # serialize the cap check per record
        warned = OperationObservation.objects.filter(operation_id=op.pk, warned=True)
        if warned.filter(fingerprint=observation.fingerprint,
                         binding_generation=observation.binding_generation).exists():
            return
        if warned.filter(created_at__gt=timezone.now() - timedelta(hours=24)).count() >= WARNINGS_PER_RECORD_PER_DAY:
            return
        OperationObservation.objects.filter(pk=observation.pk).update(warned=True)
    logger.warning(
        "tuple_mismatch_quarantined operation=%s key=%s fingerprint=%s generation=%s epoch=%s",
        op.pk, observation.key, observation.fingerprint, observation.binding_generation, observation.lease_epoch,
    )
