"""The runner (SPEC §7.1): every mutating request is one unit of work, whose work and answer commit together.

Every front runs a mutating request through ``run_unit``: the REST middleware, the MCP
tools, the admin's actions and the management commands alike, with or without an
``Idempotency-Key``. The runner owns the unit's transaction — ``transaction.atomic(durable=True)``,
so nothing outside it can hold a transaction open around it — and nothing else commits:

1. with an ``Idempotency-Key``, the first touch (``idempotency.first_touch``) authenticates the
   key, takes the unit's liveness lock and stores or reads the operation; a completed
   operation is replayed; a live attempt of the same operation holds the lock, so this one
   answers ``409 idempotency_in_progress``;
2. the work runs (a command of the front's choosing, given the unit);
3. with an operation, the work's answer is settled on it in the same transaction, so no
   crash leaves committed work without its answer; a ``5xx`` rolls everything back.

Every statement of the work runs in the unit's transaction, whoever runs it; nothing below the
runner reads or changes the transaction's state, and services never ask how they were called.

Two phases. A command whose first part must be seen by everyone before its second part runs is
a two-phase command, and ``UnitOfWork.commit_phase`` is its one boundary: what the unit wrote
so far commits, and the unit goes on in a new transaction, which takes the unit's liveness
lock again before it writes (``commit_phase(hold=True)``, or the mutation statement itself:
``lock_params``); a unit whose operation another attempt took over in between writes nothing.
Windows and review notes have two phases (SPEC §4.7, §4.8: the reservations commit, then the
tasks are inserted; a crash between them leaves reservations naming the operation, which the
retry takes over), and so has ``next`` when it meets a claim past its expiry (the lapse commits,
then the claim: ``tasks.commands.claim_next``). A single create is one transaction (SPEC §4.5 as
amended). The answer always commits with the last phase.
"""
from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from django.db import connection, transaction

from idempotency import errors
from idempotency.first_touch import relock, touch_first
from idempotency.services import carry, check_tuple, request_fingerprint, settle_operation
from idempotency.models import Operation, OperationState
from common import gate
from common.idempotency_keys import check_idempotency_key
from common.refusals import DomainError
from telemetry import counters, tracing
from spaces.models import ApiKey
from spaces.secrets import SecretAnswer, reissue, without_secret

IN_PROGRESS_RETRY_AFTER_MS = 500
RELOCK_PAUSES = (0, 0.005, 0.01, 0.02, 0.04, 0.08)  # seconds before each try of UnitOfWork.hold


@dataclass
class Answer:
    """What a unit answers: stored on the operation (without ``response``) and replayed."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    response: Any = None  # the front's own response object, when the work made one
    secret: SecretAnswer | None = None  # which fields hold a secret, never stored (spaces.secrets)
    replayed: bool = False
    content: str | None = None  # the body as the front sent it, replayed as it is (SPEC §7.1)

    @classmethod
    def stored(cls, operation: Operation) -> "Answer":
        return cls(operation.response_status, operation.response_body, dict(operation.response_headers or {}),
                   replayed=True, content=operation.response_content)


@dataclass(frozen=True)
class Idempotent:
    """What a request with an ``Idempotency-Key`` brings to its unit (SPEC §7.1)."""

    raw_key: str  # the API key presented, authenticated by the first touch
    key: str
    method: str
    path: str
    body: Any


def replay(operation: Operation) -> Answer:
    """The stored answer; one that carried a secret gets a fresh one, and the earlier one is
    revoked (SPEC §7.1). Runs under the unit's lock, so replays reissue one at a time."""
    answer = Answer.stored(operation)
    if operation.secret:
        answer.content = None  # rendered again, around the fresh secret
        answer.body, operation.secret = reissue(operation.secret, answer.body)
        Operation.objects.filter(pk=operation.pk).update(secret=operation.secret)  # the ref to revoke next time
    return answer


class Waitable(Protocol):
    """What a command waits on (``tasks.waiting.Waiter``): woken when work may be there."""

    def admit(self, key_id: int | None, seconds: float) -> None:
        """Before the first wait: refuses when the caller may not wait now; nothing after that."""

    def wait(self, timeout: float) -> bool: ...

    def renew(self, other: "Waitable") -> None: ...

    def leave(self) -> None: ...

    def open(self) -> bool: ...

    def woken_by(self) -> str | None: ...


@dataclass
class Waiting:
    """A request's wait across the runs of its unit: when it ends, and what it waits on."""

    deadline: float | None = None
    waiter: Waitable | None = None
    requested: bool = False  # the last run asked to wait (UnitOfWork.wait_for)
    client_gone: Callable[[], bool] | None = None  # the front's: has the caller hung up?
    carried: dict[str, Any] = field(default_factory=dict)  # what a run committed, for the runs after it
    block: bool = True  # False: the caller follows the wait elsewhere (``WaitElsewhere``)


class WaitElsewhere(Exception):
    """The work found nothing yet and may wait, but its caller follows it elsewhere instead of
    holding this request open (an MCP task, polled with ``tasks/get``: fronts.mcp.long_calls).
    Nothing of this run was written but what a phase of its own committed and carried; the
    caller runs the same operation again, with the same deadline, to learn how it ends."""


class ClientGone(Exception):
    """The caller of a waiting request hung up while it waited (SPEC §15: a waiter who left
    claims nothing). Nothing was written; the front has no one to answer."""


class UnitOvertaken(errors.IdempotencyInProgress):
    """Between this unit's transactions another attempt took its operation over. Wherever it
    surfaces it reads as ``409 idempotency_in_progress``; the runner, told by the unit, answers
    with the operation's settled answer instead when there is one, and commits nothing more."""

    def __init__(self, operation: Operation) -> None:
        super().__init__(f"Another request with this Idempotency-Key took it over; retry in "
                         f"{IN_PROGRESS_RETRY_AFTER_MS} ms.", retry_after_ms=IN_PROGRESS_RETRY_AFTER_MS,
                         headers={"Retry-After": "1"})
        self.operation = operation


class UnitOfWork:
    """One mutating request's transaction (and the second one of a create), owned by ``run_unit``."""

    def __init__(self, operation: Operation | None = None, api_key: ApiKey | None = None,
                 waiting: "Waiting | None" = None) -> None:
        self.operation = operation
        self.api_key = api_key
        self.waiting = waiting
        self.overtaken: Operation | None = None  # set when another attempt took the operation over
        # A unit without an operation holds a lock of its own, so the mutation statement's lock
        # is one expression whoever runs it (nothing else ever asks for this one).
        self.own_lock = secrets.token_hex(8)
        self._transaction: Any = None

    def begin(self) -> None:
        self._transaction = transaction.atomic(durable=True)
        self._transaction.__enter__()

    def end(self, *, commit: bool) -> None:
        if self._transaction is None:
            return
        if not commit:
            transaction.set_rollback(True)
        atomic, self._transaction = self._transaction, None
        atomic.__exit__(None, None, None)

    def fail(self, error: BaseException) -> None:
        if self._transaction is not None:
            atomic, self._transaction = self._transaction, None
            atomic.__exit__(type(error), error, error.__traceback__)

    # Lock order. Every unit takes its locks in this order, so no two units wait for each other:
    #   1. the unit's liveness lock (an advisory lock on (member, Idempotency-Key), or the
    #      unit's own): taken by the first touch, and again first thing in each new phase;
    #   2. a create's reservation row (unique on space and key): a single create holds it to
    #      its commit (a rival create of the key waits on its index entry); a window's and a
    #      note's first phase commits before anything else is locked (commit_phase);
    #   3. task rows (FOR NO KEY UPDATE): one task's by the commands that change it
    #      (tasks.selectors.get_task(lock=True)), several in id order (tasks.lapses.lapse_due;
    #      the work graph takes its space's advisory lock, then its tasks' rows FOR SHARE);
    #      next's claim skips what others hold (SKIP LOCKED);
    #   4. the rows a change writes beside its task (claims, attempts, events, the space's
    #      counters): each taken after the task's row it belongs to.
    # A unit that waits for a row another transaction holds holds no row of its own while it
    # waits: next records lapses in a phase of their own before it claims, and waits for a
    # held ready row in a savepoint it rolls back (tasks.claims.ready_once_unlocked).
    def commit_phase(self, *, hold: bool = True) -> None:
        """The boundary of a two-phase command: commit what this unit wrote so far, then go on
        in a new transaction holding the unit's lock again (``hold``), or leave that to the next
        phase's mutation statement (``hold=False``: it takes ``lock_params`` before it writes)."""
        self.end(commit=True)
        self.begin()
        if hold:
            self.hold()

    def hold(self) -> None:
        """Take this unit's lock again in its new transaction; raises ``UnitOvertaken`` when
        another attempt holds or has settled the operation. A unit without an operation has
        nobody to be overtaken by.

        A request with this Idempotency-Key and another body may hold the lock for a moment:
        when the operation it is refused by committed after its first touch read, it takes
        the lock before it can tell (``idempotency.first_touch``) and lets go when it refuses,
        a round trip later. So the unit waits such a moment out (about 150 ms in all) before
        it counts itself overtaken; an attempt that really took the operation over holds the
        lock for its whole work, or has completed it by then."""
        if self.operation is None:
            return
        for pause in RELOCK_PAUSES:
            time.sleep(pause)
            locked, current = relock(self.operation)
            if locked or current.state == OperationState.COMPLETED:
                break
        if not locked or current.state == OperationState.COMPLETED:
            self.overtaken = current
            raise UnitOvertaken(current)

    def yield_to_another_attempt(self) -> None:
        """Another attempt at this unit's operation took its work over while both were between
        their two transactions (it replaced this unit's reservation while the lock was free),
        although this unit holds the lock again: this unit writes nothing more and answers as an
        attempt that lost the lock does (``UnitOvertaken``: in progress, or the settled answer)."""
        current = Operation.objects.get(pk=self.operation.pk)
        self.overtaken = current
        raise UnitOvertaken(current)

    def wait_for(self, waiter: "Waitable", seconds: float) -> bool:
        """The work found nothing it may take and the caller may wait up to ``seconds`` (SPEC
        §15): True when the runner will wait on ``waiter`` and run this unit again once it is
        woken (the command answers as it likes; that answer is dropped), False when the time is
        up (the command answers "nothing")."""
        waiting = self.waiting
        if waiting is None or seconds <= 0:
            return False
        now = time.monotonic()
        if waiting.deadline is None:
            waiting.deadline = now + seconds
        if now >= waiting.deadline:
            return False
        if waiting.waiter is None:
            waiting.waiter = waiter
        else:
            waiting.waiter.renew(waiter)  # the same waiter, keeping its place in line
        waiting.requested = True
        return True

    def carried(self, name: str) -> Any:
        """What an earlier run of this waiting unit committed and ``carry``-ed (None: nothing).
        A command that writes before it waits (``ask`` with ``wait``) carries its write and
        commits it in a phase of its own, so the runs after a wake-up read it instead of
        writing again. A unit with an operation keeps it on the operation too, so an attempt
        in another request (a retry after a crash, a poll of an MCP task) reads it as well."""
        if self.waiting is not None and name in self.waiting.carried:
            return self.waiting.carried[name]
        return (self.operation.carried or {}).get(name) if self.operation is not None else None

    def carry(self, name: str, value: Any) -> None:
        """Before the phase that commits it: ``value`` commits with what it names."""
        if self.waiting is not None:
            self.waiting.carried[name] = value
        if self.operation is not None:
            carry(operation=self.operation, name=name, value=value)

    def lock_params(self) -> dict[str, Any]:
        """The unit's liveness lock, as the mutation statement takes it (``LOCK_KEY``)."""
        if self.operation is None:
            return {"lock_member": 0, "lock_key": self.own_lock}
        return {"lock_member": self.operation.member_id, "lock_key": self.operation.key}


def in_progress() -> errors.IdempotencyInProgress:
    wait = IN_PROGRESS_RETRY_AFTER_MS
    return errors.IdempotencyInProgress(
        f"The first request with this Idempotency-Key is still running; retry in {wait} ms.",
        retry_after_ms=wait, headers={"Retry-After": "1"},
    )


def run_unit(work: Callable[[UnitOfWork], Answer], *, idempotent: Idempotent | None = None,
             client_gone: Callable[[], bool] | None = None, caller_key: int | None = None,
             followed_until: float | None = None) -> tuple[ApiKey | None, Answer | None]:
    """Run ``work`` as one unit of work; ``(key, answer)``.

    Without ``idempotent`` the key is the front's business (None here) and the answer is the
    work's. With it, ``(None, None)`` when its API key is not valid (nothing was written: the
    front answers 401); the refusals of the tuple (``idempotency_key_reused``,
    ``idempotency_binding_mismatch``) and ``idempotency_in_progress`` are raised with nothing
    written. A 5xx answer (the work crashed) commits nothing, so a retry runs again; a
    transient answer (SPEC §7.1) leaves the operation retryable; any other completes it.

    ``client_gone``, when the front can tell, says whether the caller hung up: a waiting request
    asks it each time it wakes, before it runs again, and raises ``ClientGone`` instead of
    claiming for no one (the work goes to the next waiter in line). ``caller_key``: the API key
    the front authenticated (a keyed unit's own is the first touch's), whose waits are counted
    before the first one begins (SPEC §15 Capacity: a refusal then, with nothing written).

    ``followed_until`` (a ``time.monotonic()`` instant): the caller follows a waiting request
    elsewhere, by running it again until then (an MCP task's polls): its wait ends at that
    instant whatever the work asks, and instead of waiting here the runner raises
    ``WaitElsewhere``. Its polls are not waits: they hold nothing between them.
    """
    fingerprint = None
    if idempotent is not None:
        check_idempotency_key(idempotent.key)
        fingerprint = request_fingerprint(idempotent.method, idempotent.path, idempotent.body)
    waiting = Waiting(client_gone=client_gone, deadline=followed_until, block=followed_until is None)
    woken_at = None
    try:
        while True:
            outcome = run_once(work, idempotent, fingerprint, waiting)
            if waiting.requested and not waiting.block:
                raise WaitElsewhere()
            if not waiting.requested:
                if woken_at is not None:  # its answer came after a wake-up: how long the pickup took
                    counters.PICKUP.observe(time.monotonic() - woken_at)
                return outcome
            # The work found nothing and may wait (SPEC §15): its unit ended with nothing
            # written, and nothing is held while it waits, not even a connection.
            waiting.requested = False
            key = outcome[0].pk if outcome[0] is not None else caller_key
            waiting.waiter.admit(key, max(0.0, waiting.deadline - time.monotonic()))  # once: later calls pass
            connection.close()
            with gate.released():  # a waiting request takes none of its process's running slots
                woken = waiting.waiter.wait(max(0.0, waiting.deadline - time.monotonic()))
            woken_at = time.monotonic() if woken else None
            if woken:
                tracing.link_to(waiting.waiter.woken_by())
            if waiting.client_gone is not None and waiting.client_gone():
                raise ClientGone()  # leaving (below) hands its turn to the next waiter
            if not waiting.waiter.open():
                waiting.deadline = time.monotonic()  # the process is stopping: the last run answers now
    finally:
        if waiting.waiter is not None:
            waiting.waiter.leave()


def run_once(work: Callable[[UnitOfWork], Answer], idempotent: Idempotent | None, fingerprint: str | None,
             waiting: "Waiting") -> tuple[ApiKey | None, Answer | None]:
    """One run of ``run_unit``'s unit (a waiting request's unit runs once per wake-up)."""
    unit = UnitOfWork(waiting=waiting)
    unit.begin()
    try:
        api_key = None
        if idempotent is not None:
            api_key, touch = touch_first(raw_key=idempotent.raw_key, idempotency_key=idempotent.key,
                                         method=idempotent.method, path=idempotent.path, fingerprint=fingerprint)
            if touch is None:
                unit.end(commit=False)
                return None, None
            if not touch.locked:
                if touch.operation is not None:  # another tuple's operation: its refusal, no lock taken
                    check_tuple(touch.operation, api_key=api_key, idempotency_key=idempotent.key,
                                fingerprint=fingerprint)
                raise in_progress()
            operation = touch.operation or Operation.objects.get(
                space_id=api_key.space_id, member_id=api_key.member_id, key=idempotent.key)  # committed after the touch read
            if not touch.created:
                check_tuple(operation, api_key=api_key, idempotency_key=idempotent.key, fingerprint=fingerprint)
                if operation.state == OperationState.COMPLETED:
                    answer = replay(operation)
                    unit.end(commit=True)
                    return api_key, answer
            unit.operation, unit.api_key = operation, api_key
        try:
            answer = work(unit)
        except UnitOvertaken:
            answer = None  # a front that lets it through (MCP); REST renders it, and the unit says so
        if waiting.requested:
            unit.end(commit=False)  # nothing found: nothing to keep, the runner waits and runs it again
            return api_key, None
        if unit.overtaken is not None:
            unit.end(commit=False)
            if unit.overtaken.state == OperationState.COMPLETED:
                return api_key, Answer.stored(unit.overtaken)  # no reissue: this unit holds no lock now
            raise in_progress()
        if answer.status >= 500 or connection.needs_rollback:
            unit.end(commit=False)  # the work crashed: nothing of it stays, a retry runs again
            return api_key, answer
        if unit.operation is not None:
            settle_operation(operation=unit.operation, status=answer.status,
                             body=without_secret(answer.body, answer.secret), headers=answer.headers,
                             secret=answer.secret.as_stored() if answer.secret else None,
                             content=None if answer.secret else answer.content)
        unit.end(commit=True)
        return api_key, answer
    except BaseException as error:
        unit.fail(error)
        raise


def in_unit(command: Callable[..., Any], /, **arguments: Any) -> Any:
    """``command(unit=…, **arguments)`` as one unit of work of its own, for callers that are not a
    request (management commands, scripts, the suite): what it returns, or the refusal it raises.
    A refusal ends the unit as it does a request's: what the command wrote before refusing (a
    dropped reservation, a counted conflict) commits with it."""
    result: Any = None
    refusal: DomainError | None = None

    def work(unit: UnitOfWork) -> Answer:
        nonlocal result, refusal
        try:
            result = command(unit=unit, **arguments)
        except DomainError as error:
            refusal = error
            return Answer(error.http_status, error.as_body())
        return Answer(200, None)

    run_unit(work)
    if refusal is not None:
        raise refusal
    return result


def in_transaction(function: Callable[..., Any], /, **arguments: Any) -> Any:
    """``function(**arguments)`` in a transaction of its own, for callers that are not a request
    (the suite, scripts) calling a service that takes no unit (``tasks.claims.claim_next_task``)."""
    with transaction.atomic(durable=True):
        return function(**arguments)
