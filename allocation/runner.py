"""The idempotency runner (SPEC §7.1): one attempt at an operation, whose work and answer commit together.

Every front runs an ``Idempotency-Key`` request through ``run_attempt``: the REST
middleware and the MCP tools alike. The attempt is one database transaction, managed
here and nowhere else:

1. the first touch (``allocation.first_touch``) authenticates the key, takes the
   attempt's liveness lock and stores or reads the operation;
2. a completed operation is replayed; a live attempt of the same operation holds the
   lock, so this one answers ``409 idempotency_in_progress``;
3. otherwise the work runs, and its answer is settled on the operation in the same
   transaction, so no crash leaves committed work without its answer. A retry after a
   crash finds the lock free at once (the dead attempt's transaction ended with it).

A service that must commit part of its work first (create's reservation, SPEC §4.5)
calls ``Attempt.commit_reservation``: the transaction commits there and the attempt
goes on in a new one, which takes the same lock again before it writes. A crash between
the two leaves a committed reservation naming the operation, which the retry takes over.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from django.db import connection

from allocation import errors
from allocation.binding import has_control_characters
from allocation.first_touch import relock, touch_first
from allocation.idempotency import check_tuple, request_fingerprint, settle_operation
from allocation.models import Operation, OperationState
from common.refusals import InvalidRequest
from spaces.models import ApiKey
from spaces.secrets import SecretAnswer, reissue, without_secret

IN_PROGRESS_RETRY_AFTER_MS = 500


@dataclass
class Answer:
    """What an attempt answers: stored on the operation (without ``response``) and replayed."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    response: Any = None  # the front's own response object, when the work made one
    secret: SecretAnswer | None = None  # which fields hold a secret, never stored (spaces.secrets)
    replayed: bool = False

    @classmethod
    def stored(cls, operation: Operation) -> "Answer":
        return cls(operation.response_status, operation.response_body, dict(operation.response_headers or {}),
                   replayed=True)


def replay(operation: Operation) -> Answer:
    """The stored answer; one that carried a secret gets a fresh one, and the earlier one is
    revoked (SPEC §7.1). Runs under the attempt's lock, so replays reissue one at a time."""
    answer = Answer.stored(operation)
    if operation.secret:
        answer.body, operation.secret = reissue(operation.secret, answer.body)
        Operation.objects.filter(pk=operation.pk).update(secret=operation.secret)  # the ref to revoke next time
    return answer


class AttemptOvertaken(errors.IdempotencyInProgress):
    """Between this attempt's transactions another attempt took the operation over. Wherever it
    surfaces it reads as ``409 idempotency_in_progress``; the runner, told by the attempt, answers
    with the operation's settled answer instead when there is one, and commits nothing more."""

    def __init__(self, operation: Operation) -> None:
        super().__init__(f"Another request with this Idempotency-Key took it over; retry in "
                         f"{IN_PROGRESS_RETRY_AFTER_MS} ms.", retry_after_ms=IN_PROGRESS_RETRY_AFTER_MS,
                         headers={"Retry-After": "1"})
        self.operation = operation


@dataclass
class Attempt:
    api_key: ApiKey
    operation: Operation
    overtaken: Operation | None = None  # set when another attempt took the operation over

    def commit_reservation(self) -> None:
        """Commit what this attempt wrote so far (SPEC §4.5: the reservation commits before the
        mutation); the attempt goes on in a new transaction, which must take the lock again
        (``hold``, or the mutation statement itself: ``allocation.services.mutation_ctes``)."""
        connection.commit()

    def hold(self) -> None:
        """Take this attempt's lock again in its new transaction; raises ``AttemptOvertaken`` when
        another attempt holds or has settled the operation."""
        locked, current = relock(self.operation)
        if not locked or current.state == OperationState.COMPLETED:
            self.overtaken = current
            raise AttemptOvertaken(current)

    def lock_params(self) -> dict[str, Any]:
        return {"lock_member": self.operation.member_id, "lock_key": self.operation.key}


NO_LOCK = {"lock_member": None, "lock_key": None}


def in_progress() -> errors.IdempotencyInProgress:
    wait = IN_PROGRESS_RETRY_AFTER_MS
    return errors.IdempotencyInProgress(
        f"The first request with this Idempotency-Key is still running; retry in {wait} ms.",
        retry_after_ms=wait, headers={"Retry-After": "1"},
    )


MAX_KEY_LENGTH = 255


def check_idempotency_key(key: str) -> None:
    """An Idempotency-Key is 1 to 255 printable characters, whichever front it came through."""
    try:
        key.encode("utf-8")
        printable = not has_control_characters(key)
    except UnicodeEncodeError:  # a lone surrogate
        printable = False
    if not key.strip() or len(key) > MAX_KEY_LENGTH or not printable:
        raise InvalidRequest(f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} printable characters.",
                             fields={"Idempotency-Key": [f"1 to {MAX_KEY_LENGTH} printable characters."]})


def run_attempt(
    *, raw_key: str, idempotency_key: str, method: str, path: str, body: Any, work: Callable[[Attempt], Answer]
) -> tuple[ApiKey | None, Answer | None]:
    """Run ``work`` as an attempt at the caller's operation; ``(key, answer)``.

    ``(None, None)`` when ``raw_key`` is not a valid key (nothing was written: the front
    answers 401). Raises the refusals of the tuple (``idempotency_key_reused``,
    ``idempotency_binding_mismatch``) and ``idempotency_in_progress``, each with nothing
    written. A 5xx answer (the work crashed) commits nothing, so a retry runs again; a
    transient answer (SPEC §7.1) leaves the operation retryable; any other completes it.
    """
    check_idempotency_key(idempotency_key)
    fingerprint = request_fingerprint(method, path, body)
    connection.ensure_connection()
    connection.set_autocommit(False)
    try:
        api_key, touch = touch_first(raw_key=raw_key, idempotency_key=idempotency_key, method=method, path=path,
                                     fingerprint=fingerprint)
        if touch is None:
            connection.rollback()
            return None, None
        if not touch.locked:
            raise in_progress()
        operation = touch.operation or Operation.objects.get(
            space_id=api_key.space_id, member_id=api_key.member_id, key=idempotency_key)  # committed after the touch read
        if not touch.created:
            check_tuple(operation, api_key=api_key, idempotency_key=idempotency_key, fingerprint=fingerprint)
            if operation.state == OperationState.COMPLETED:
                answer = replay(operation)
                connection.commit()
                return api_key, answer
        attempt = Attempt(api_key, operation)
        try:
            answer = work(attempt)
        except AttemptOvertaken:
            pass  # a front that lets it through (MCP); REST renders it, and the attempt says so
        if attempt.overtaken is not None:
            connection.rollback()
            if attempt.overtaken.state == OperationState.COMPLETED:
                return api_key, Answer.stored(attempt.overtaken)  # no reissue: this attempt holds no lock now
            raise in_progress()
        if answer.status >= 500:
            connection.rollback()  # the work crashed: nothing of it stays, a retry runs again
            return api_key, answer
        settle_operation(operation=operation, status=answer.status, body=without_secret(answer.body, answer.secret),
                         headers=answer.headers, secret=answer.secret.as_stored() if answer.secret else None)
        connection.commit()
        return api_key, answer
    except BaseException:
        connection.rollback()
        raise
    finally:
        connection.set_autocommit(True)
