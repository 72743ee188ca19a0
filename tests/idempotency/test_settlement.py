"""SPEC §7.2: every ordering of reports settles the same, table-driven."""
from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from idempotency.models import ObservationKind as K
from idempotency.models import Operation, OperationObservation, OperationState
from idempotency.settlement import Report, observe

OK = {"id": 1}


@pytest.fixture
def operation(writer) -> Operation:
    return Operation.objects.create(
        space_id=writer.member.space_id, member=writer.member, key="k", fingerprint="f" * 64, binding_generation=1,
        method="POST", path="/x", state=OperationState.IN_PROGRESS, lease_epoch=1,
        lease_expires_at=timezone.now() + timedelta(seconds=30),
    )


def report(op: Operation, kind: str, *, epoch: int | None = None, fingerprint: str | None = None,
           generation: int | None = None, body=OK) -> Report:
    return Report(kind=kind, key=op.key, fingerprint=fingerprint or op.fingerprint,
                  binding_generation=generation or op.binding_generation,
                  lease_epoch=op.lease_epoch if epoch is None else epoch,
                  status=201 if kind == K.SUCCESS else None, body=body if kind == K.SUCCESS else None)


def send(op: Operation, *reports: Report) -> tuple[Operation, list[str]]:
    verdicts = []
    for r in reports:
        settled = observe(operation=Operation.objects.get(pk=op.pk), report=r)
        verdicts.append(settled.verdict)
    return Operation.objects.get(pk=op.pk), verdicts


CASES = {
    "success then timeout stays completed": ([K.SUCCESS, K.TIMEOUT], "completed", ["applied", "recorded"]),
    "timeout then success upgrades": ([K.TIMEOUT, K.SUCCESS], "completed", ["applied", "applied"]),
    "transport error then success upgrades": ([K.TRANSPORT_ERROR, K.SUCCESS], "completed", ["applied", "applied"]),
    "two terminals: the first commit wins": ([K.SUCCESS, K.SUCCESS], "completed", ["applied", "conflict"]),
    "lease expiry makes it unknown": ([K.LEASE_EXPIRED], "unknown", ["applied"]),
    "transient outcome is retryable": ([K.TRANSIENT], "unknown", ["applied"]),
    "heartbeat under a live lease": ([K.IN_PROGRESS], "in_progress", ["applied"]),
    "stale in_progress after expiry does not resurrect": ([K.LEASE_EXPIRED, K.IN_PROGRESS], "unknown",
                                                          ["applied", "recorded"]),
}


@pytest.mark.parametrize("kinds, state, verdicts", CASES.values(), ids=CASES.keys())
def test_orderings(operation, kinds, state, verdicts):
    op, got = send(operation, *[report(operation, k) for k in kinds])
    assert op.state == state and got == verdicts
    assert OperationObservation.objects.filter(operation=op).count() == len(kinds)
    if state == "completed":
        assert op.response_body == OK


def test_an_in_progress_report_after_the_lease_ran_out_demotes(operation):
    Operation.objects.filter(pk=operation.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    op, verdicts = send(operation, report(operation, K.IN_PROGRESS))
    assert op.state == "unknown" and verdicts == ["applied"]


def test_a_mismatch_is_quarantined_then_an_exact_match_completes(operation):
    op, verdicts = send(operation, report(operation, K.SUCCESS, fingerprint="0" * 64, body={"id": "forged"}),
                        report(operation, K.SUCCESS))
    assert verdicts == ["quarantined", "applied"]
    assert op.state == "completed" and op.response_body == OK


def test_a_binding_change_is_quarantined(operation):
    op, verdicts = send(operation, report(operation, K.SUCCESS, generation=2))
    assert verdicts == ["quarantined"] and op.state == "in_progress"


def test_a_dead_attempts_late_report_is_quarantined_after_a_new_lease(operation):
    send(operation, report(operation, K.LEASE_EXPIRED))
    op, verdicts = send(operation, Report.for_attempt(Operation.objects.get(pk=operation.pk), K.LEASE))
    assert verdicts == ["applied"] and op.lease_epoch == 2 and op.state == "in_progress"
    op, verdicts = send(op, report(op, K.SUCCESS, epoch=1, body={"stale": True}))
    assert verdicts == ["quarantined"] and op.state == "in_progress"
    op, verdicts = send(op, report(op, K.SUCCESS, epoch=2))
    assert verdicts == ["applied"] and op.response_body == OK


def test_a_lease_is_refused_while_another_is_live(operation):
    op, verdicts = send(operation, Report.for_attempt(operation, K.LEASE))
    assert verdicts == ["refused"] and op.lease_epoch == 1


def test_quarantine_warnings_one_per_pair_at_most_eight_a_day(operation, caplog):
    caplog.set_level(logging.WARNING, logger="spaces.settlement")
    for i in range(12):
        send(operation, report(operation, K.SUCCESS, fingerprint=f"{i:064d}"))
    send(operation, report(operation, K.SUCCESS, fingerprint=f"{0:064d}"))  # a repeated pair: no new warning
    warnings = [r for r in caplog.records if "tuple_mismatch_quarantined" in r.getMessage()]
    assert len(warnings) == 8
    assert OperationObservation.objects.filter(verdict="quarantined").count() == 13  # all stored
    assert Operation.objects.get(pk=operation.pk).state == "in_progress"


def test_a_repeated_pair_warns_once(operation, caplog):
    caplog.set_level(logging.WARNING, logger="spaces.settlement")
    for _ in range(3):
        send(operation, report(operation, K.SUCCESS, generation=7))
    assert len([r for r in caplog.records if "tuple_mismatch_quarantined" in r.getMessage()]) == 1
