"""Claims (SPEC §6.1): next, claim by number, join, give back, assign, lapse.

An open task (status ``open``) has no live claim and no waiting attempt, and no check
in its current cycle (a cycle with checks either ends ``done`` or reopens as a new
cycle), so anyone may take it.

Limits are enforced under the task's row lock; ``claim_one_live_per_member_task`` makes
a double claim impossible whatever the timing. Plain ``next`` takes the lowest open
task with ``FOR NO KEY UPDATE SKIP LOCKED``, so agents calling it at once never wait on each
other and never receive the same task.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from functools import cache

from contextlib import nullcontext

from django.db import DatabaseError, IntegrityError, OperationalError, connection, transaction
from django.utils import timezone

from common.refusals import InvalidRequest
from costs import services as costs
from costs.services import Cost
from spaces.models import Member, Role, Space
from tasks import caps, errors, graph, parking, sql, wakeups
from tasks.lifecycle import (
    check_task_live,
    check_task_workable,
    check_task_usable,
    live_claims,
    recompute_status,
    record_event,
)
from tasks.models import (
    Claim,
    ClaimEnd,
    ClaimOrigin,
    EventKind,
    Task,
    TaskStatus,
)
from tasks.filters import ready_queue
from tasks.lapses import due_claims, lapse_due
from tasks.selectors import get_task

DEADLOCK_DETECTED = "40P01"


def claim_expiry(space: Space, now: datetime) -> datetime:
    """When a claim made or renewed at ``now`` lapses (SPEC §15): the space's lease when it has
    one, else ``task_claim_hours``."""
    if space.claim_lease_seconds is not None:
        return now + timedelta(seconds=space.claim_lease_seconds)
    return now + timedelta(hours=space.task_claim_hours)


def open_claim(*, task: Task, member: Member, origin: str, actor: Member | None = None) -> Claim:
    """Insert the claim and its event; the caller holds the task lock and checked the limits."""
    now = timezone.now()
    try:
        with transaction.atomic():
            claim = Claim.objects.create(
                space_id=task.space_id, task=task, member=member, cycle=task.cycle, origin=origin,
                created_at=now, expires_at=claim_expiry(task.space, now),
            )
    except IntegrityError:
        # claim_one_live_per_member_task: this member already holds the task.
        return live_claims(task).get(member=member)
    except DatabaseError as error:
        reached = caps.cap_reached(error)
        if reached is None:
            raise
        raise (member_at_cap(task.space, member) if reached == "member" else label_at_cap(task)) from None
    kind = {ClaimOrigin.NEXT: EventKind.CLAIMED, ClaimOrigin.JOIN: EventKind.JOINED}.get(origin, EventKind.ASSIGNED)
    record_event(task=task, kind=kind, actor=actor or member, member=member.pk, claim=claim.pk,
                 expires_at=claim.expires_at.isoformat(), cycle=task.cycle)
    recompute_status(task)
    return claim


# --- The statement of next ----------------------------------------------------------------

@cache
def claim_attnames() -> list[str]:
    return [f.attname for f in Claim._meta.concrete_fields]


NEXT_ROUNDS = 5  # statement runs a next may take: each after a holder it waited for


class LapsesDue:
    """What ``claim_next_task`` answers when a claim of the space is past its expiry: it claimed
    nothing, and the lapse is the caller's to record first, in a phase of its own
    (``tasks.commands.claim_next``)."""


LAPSES_DUE = LapsesDue()


def claim_next_task(*, space: Space, member: Member,
                    labels: list[str] = ()) -> tuple[Task, Claim] | LapsesDue | None:
    """The most urgent ready task (with all of ``labels``), claimed for the caller; None when
    there is none; ``LAPSES_DUE`` when a claim of the space is past its expiry (it counts as
    ended already, so its task may be the one to hand out: the lapse is recorded, then this is
    asked again).

    SKIP LOCKED passes over rows another transaction is claiming right now instead of
    queueing behind it, and the partial index task_open_by_priority keeps the search small
    however many tasks have finished.
    """
    aging = space.priority_aging_minutes
    statement, task_attnames = sql.claim_next(aging=aging is not None)
    parameters = {"aging": aging} if aging is not None else {}
    capped = space.max_claims_per_member is not None or bool(space.label_caps)
    for _ in range(NEXT_ROUNDS):
        now = timezone.now()
        expires_at = claim_expiry(space, now)
        parameters.update({"space": space.pk, "member": member.pk, "now": now, "expires": expires_at,
                           "expires_iso": expires_at.isoformat(), "labels": list(labels),
                           "full": full_labels(space, member)})
        try:
            # Under caps the claim's trigger may refuse it: in a savepoint, so the unit goes on.
            with transaction.atomic() if capped else nullcontext(), connection.cursor() as cursor:
                statement.run(cursor, parameters)
                due, *row = cursor.fetchone()
        except DatabaseError as error:
            reached = caps.cap_reached(error)
            if reached is None:
                raise
            if reached == "member":
                raise member_at_cap(space, member) from None
            continue  # a label's last place went to another claim a moment before: look again
        if due:
            return LAPSES_DUE
        if row[0] is not None or not ready_once_unlocked(space=space, labels=labels):
            break
    else:
        return None
    if row[0] is None:
        return None
    claim_id, creator_name, blocks = row[0], row[1], row[2]
    task = Task.from_db(connection.alias, task_attnames, row[3:])
    task.space = space
    task.graph = ([], blocks)  # ready, so nothing blocks it
    if task.creator_id is not None:
        # Only what a task's author shows (id, name); other fields load on first use.
        task.creator = Member.from_db(connection.alias, ["id", "space_id", "name"],
                                      (task.creator_id, space.pk, creator_name))
    values = {"id": claim_id, "space_id": space.pk, "task_id": task.pk, "member_id": member.pk,
              "cycle": task.cycle, "origin": ClaimOrigin.NEXT, "created_at": now, "expires_at": expires_at,
              "last_heartbeat_at": None, "ended_at": None, "end_reason": ""}
    claim = Claim.from_db(connection.alias, claim_attnames(), [values[name] for name in claim_attnames()])
    claim.task, claim.member = task, member
    return task, claim


def member_at_cap(space: Space, member: Member) -> errors.ClaimCap:
    """SPEC §22: the refusal of a claim by a member holding its cap of live claims, naming them."""
    held = list(Claim.objects.filter(Claim.live(timezone.now()), space_id=space.pk, member=member)
                .order_by("task__number").values_list("task__number", "expires_at"))
    return errors.ClaimCap(
        f"You hold {len(held)} live claims, the most a member may hold in this space: finish or give one back "
        "before you take another.", max_claims_per_member=space.max_claims_per_member,
        claims=[{"task": number, "expires_at": expires.isoformat()} for number, expires in held])


def label_at_cap(task: Task) -> errors.ClaimCap:
    """SPEC §22: the refusal of a claim on a task one of whose labels holds its cap of live
    claims, naming those labels (asked again: the trigger refused, and says no more)."""
    with connection.cursor() as cursor:
        cursor.execute(sql.FULL_LABELS, {"space": task.space_id})
        full = sorted(set(task.labels) & set(cursor.fetchone()[0]))
    full = full or sorted(set(task.labels) & set(task.space.label_caps))  # freed since: name the capped ones
    return errors.ClaimCap(
        f"Task {task.number} carries a label at its cap of live claims ({', '.join(full)}): it can be claimed once "
        "one of them ends.", label_caps={label: task.space.label_caps[label] for label in full})


def full_labels(space: Space, member: Member) -> list[str]:
    """The space's labels at their cap of live claims, asked of the database's functions in one
    round trip with whether ``member`` is at its own cap (refused here, so an empty queue does
    not hide the refusal); nothing to ask where the space caps nothing. A cap reached after
    this is the claim trigger's to refuse, and ``next`` asks again."""
    if space.max_claims_per_member is None and not space.label_caps:
        return []
    with connection.cursor() as cursor:
        cursor.execute(sql.CAPS_NOW, {"space": space.pk, "member": member.pk})
        at_cap, full = cursor.fetchone()
    if at_cap:
        raise member_at_cap(space, member)
    return list(full)


def ready_once_unlocked(*, space: Space, labels: list[str]) -> bool:
    """Whether the ready queue still has a task once the rows it holds are free: asked when the
    claim statement found none. SKIP LOCKED passes over a row another transaction holds, and not
    only another ``next`` claiming it: a heartbeat or a lapse holds a ready task's row for a
    moment too, and that task is work to do (SPEC §6.1 answers ``{"task": null}`` only when there
    is none). So this waits for the first such row's holder to end, then says whether a task is
    ready (the statement runs again) or not (another ``next`` took it: nothing to do). Only the
    caller with nothing else to take waits, and only as long as the holder's transaction lasts.

    The wait keeps nothing: the lock it waited for is taken in a savepoint that is rolled back,
    and PostgreSQL lets go of a row lock when the savepoint it was taken in is rolled back. A
    ``next`` that kept the row of one round while it waited in the next round could wait for
    another that waits for it (lock order: commands.unit).

    The claim statement itself may keep a row it locked and did not claim (PostgreSQL keeps the
    lock on a row that a recheck after ``SKIP LOCKED`` leaves out), so two such waits, each seeing
    the queue in its own snapshot, can still wait on each other: PostgreSQL then ends one wait
    (``deadlock_detected``, after its ``deadlock_timeout``) and that ``next`` looks again."""
    queue = ready_queue(space.pk, labels).select_for_update(of=("self",), no_key=True)
    waited = transaction.savepoint()
    try:
        return queue.values_list("pk", flat=True).first() is not None
    except OperationalError as error:
        if getattr(error.__cause__, "sqlstate", None) != DEADLOCK_DETECTED:
            raise
        return True  # a task may be ready: the statement runs again
    finally:
        transaction.savepoint_rollback(waited)


def claim_task(*, space: Space, member: Member, number: object, join: bool = False) -> tuple[Task, Claim]:
    """``next {"number": N, "join"?}``: claim task N if open, or hold it beside others with ``join``."""
    with transaction.atomic():
        task = get_task(space=space, number=number, lock=True)
        check_task_live(task)  # a done, rejected or withdrawn task is closed, whichever it is
        mine = live_claims(task).filter(member=member).first()
        if mine is not None:
            return task, mine  # already holding it: claiming again changes nothing
        refusal = costs.task_over_budget(task)  # SPEC §19: a task at its budget is handed out no more
        if refusal is not None:
            raise refusal
        blockers = graph.blocker_numbers(task)
        if blockers:
            raise errors.TaskBlocked(
                f"Task {task.number} waits on task(s) {', '.join(map(str, blockers))}: it can be claimed once "
                "they end.", blocked_by=blockers)
        if task.status == TaskStatus.OPEN:
            return task, open_claim(task=task, member=member, origin=ClaimOrigin.NEXT)
        if task.status in (TaskStatus.CLAIMED, TaskStatus.ASSIGNED):
            holders = live_claims(task).count()
            if not join:
                raise errors.TaskNotOpen(
                    f"Task {task.number} is held by {holders} other key(s); send {{\"number\": {task.number}, "
                    "\"join\": true} to join them.",
                    task_status=task.status, holders=holders, join=True,
                )
            if holders >= space.max_claims_per_task:
                raise errors.ClaimLimit(
                    f"Task {task.number} already has {holders} live claims (the most a task may have).",
                    max_claims_per_task=space.max_claims_per_task,
                )
            return task, open_claim(task=task, member=member, origin=ClaimOrigin.JOIN)
        raise errors.TaskNotOpen(
            f"Task {task.number} is {task.status}: it takes no claims now.", task_status=task.status, join=False
        )


def give_back(*, task: Task, member: Member, cost: Cost | None = None) -> tuple[Task, Claim]:
    """End the caller's own live claim; other keys holding the task keep theirs. Returns the task
    as it is now and the ended claim. ``cost``: the claim's final spend (SPEC §19)."""
    with transaction.atomic():
        task = get_task(space=task.space, number=task.number, lock=True)
        check_task_usable(task)
        claim = live_claims(task).filter(member=member).first()
        if claim is None:
            raise errors.NotHolding(f"You hold no live claim on task {task.number}.")
        end_claims(Claim.objects.filter(space_id=task.space_id, pk=claim.pk), ClaimEnd.GAVE_BACK)
        if cost is not None:
            costs.report(space=task.space, task_id=task.pk, member_id=member.pk, claim_id=claim.pk, cost=cost)
        record_event(task=task, kind=EventKind.GIVEN_BACK, actor=member, claim=claim.pk, cycle=claim.cycle)
        recompute_status(task)
        if not parking.set_back(task) and task.status == TaskStatus.OPEN:
            wakeups.work_ready(task.space_id)
        claim.refresh_from_db()
        return task, claim


def assign_task(*, task: Task, member: Member, actor: Member) -> tuple[Task, Claim]:
    """A steward's claim for ``member`` (status ``assigned``); same limits as a join. Returns the
    task as it is now and the claim. A reader attempts nothing (SPEC §2), so is assigned nothing."""
    if member.role == Role.READER:
        raise InvalidRequest(f"{member.name} is a reader and cannot attempt tasks; assign a writer or a steward.",
                             fields={"member": ["A reader cannot be assigned a task."]})
    with transaction.atomic():
        task = get_task(space=task.space, number=task.number, lock=True)
        check_task_workable(task)
        if task.status == TaskStatus.IN_REVIEW:
            raise errors.TaskNotOpen(f"Task {task.number} is in review: it takes no claims now.", task_status=task.status)
        mine = live_claims(task).filter(member=member).first()
        if mine is not None:
            return task, mine
        if live_claims(task).count() >= task.space.max_claims_per_task:
            raise errors.ClaimLimit(max_claims_per_task=task.space.max_claims_per_task)
        return task, open_claim(task=task, member=member, origin=ClaimOrigin.ASSIGNED, actor=actor)


def claims_in_flight(space_id: int) -> int:
    """The space's live claims (what ``next`` counts against what is left of a budget)."""
    return Claim.objects.filter(Claim.live(timezone.now()), space_id=space_id).count()


def end_claims(claims, reason: str) -> int:
    """Compare-and-set: only claims still live are ended, so concurrent callers end each once."""
    return claims.filter(ended_at=None).update(ended_at=timezone.now(), end_reason=reason)


def heartbeat(*, task: Task, member: Member, cost: Cost | None = None) -> Claim:
    """Renew the caller's live claim (SPEC §15): its expiry moves to a lease from now. A caller
    whose claim lapsed is told so (``claim_lapsed``; a done is still an attempt), anyone else
    that they hold nothing (``not_holder``). Under the task's row lock, so a lapse and a
    heartbeat meeting at the expiry are ordered: the one that came first wins.

    ``cost`` (SPEC §19) is the claim's spend so far, recorded first; when the task's spend has
    reached its budget, or the space's this month has, the claim is not renewed and the caller is
    told ``budget_exhausted``: an agent that stops when told passes the space's budget by at most
    one report a claim in flight (docs/architecture.md)."""
    with transaction.atomic():
        task = get_task(space=task.space, number=task.number, lock=True)  # lapses what is due first
        # The clock is read after the lock: a heartbeat that waited for it past the expiry is late.
        now = timezone.now()
        claim = task.claims.filter(Claim.live(now), space_id=task.space_id, member=member).first()
        if claim is not None and cost is not None:
            costs.report(space=task.space, task_id=task.pk, member_id=member.pk, claim_id=claim.pk, cost=cost,
                         now=now)
        exhausted = (costs.task_over_budget(task) or costs.space_over_budget(task.space)) if claim is not None else None
        if claim is not None and not exhausted:
            # Never moved back: a claim kept while its question is open stays paused (SPEC §21).
            claim.expires_at, claim.last_heartbeat_at = max(claim.expires_at, claim_expiry(task.space, now)), now
            Claim.objects.filter(space_id=claim.space_id, pk=claim.pk).update(
                expires_at=claim.expires_at, last_heartbeat_at=now)
            claim.member = member
            return claim
        # What lapsed while this waited for the lock is recorded now, by the same rule (one query).
        lapse_due(task=task, now=now, locked=True)
        last = None if exhausted else task.claims.filter(space_id=task.space_id, member=member).order_by("-pk").first()
    # Refused outside the block, so the lapse (or the spend) recorded on the way stays recorded.
    if exhausted:
        raise exhausted
    if last is not None and last.end_reason == ClaimEnd.LAPSED:
        raise errors.ClaimLapsed(
            f"Your claim on task {task.number} lapsed at {last.ended_at.isoformat()}; claim it again "
            "to go on (a done still counts as an attempt).", lapsed_at=last.ended_at.isoformat())
    raise errors.NotHolder(f"You hold no claim on task {task.number}.")


def expire_claims(*, now: datetime | None = None, dry_run: bool = False) -> int:
    """Record the lapse of every claim past its expiry (``tasks.lapses``); how many lapsed.

    Safe to run from several places at once, and beside ``next`` and the reads that record
    lapses too: each claim is ended by one compare-and-set, and only the one that ended it
    notifies and records the event.
    """
    now = now or timezone.now()
    if dry_run:
        return due_claims(now=now).count()
    return lapse_due(now=now)
