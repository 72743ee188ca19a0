"""Attempts and checks (SPEC §6.2–§6.3), each under the task's row lock.

The numbers, the one-attempt-a-key-a-cycle rule and the one-check-a-key-an-attempt rule
are unique constraints; the limits and the doer-or-checker rules are checked here
under the lock, so no two concurrent requests can both pass them.
"""
from __future__ import annotations

from django.db import transaction
from django.db.models import Exists, F, Max, OuterRef, Prefetch, QuerySet
from django.utils import timezone

from common.refusals import NotFound
from costs import services as costs
from costs.services import Cost
from spaces.models import ChecksBy, Member, MemberKind, Post, Space
from spaces.selectors import as_int
from tasks import errors, graph, parking, wakeups
from tasks.claims import end_claims
from tasks.lifecycle import (
    check_task_live,
    check_task_workable,
    count_done,
    live_claims,
    notify,
    recompute_status,
    record_event,
    release_occupancy,
)
from tasks.models import (
    Attempt,
    AttemptState,
    Check,
    Claim,
    ClaimEnd,
    EventKind,
    NotificationKind,
    Task,
    TaskStatus,
    Verdict,
)
from tasks.selectors import get_task


def cycle_is_contested(task: Task, doer: Member) -> bool:
    """SPEC §6.3, zero-confirmation spaces: an attempt is accepted at once unless, in this
    cycle, another key holds the task live, gave it back, a reject came first, or an
    earlier attempt is still waiting for its confirmation."""
    others = Claim.objects.filter(space_id=task.space_id, task=task, cycle=task.cycle).exclude(member=doer)
    return (
        others.filter(ended_at=None).exists()
        or others.filter(end_reason=ClaimEnd.GAVE_BACK).exists()
        or Check.objects.filter(space_id=task.space_id, task=task, cycle=task.cycle, verdict=Verdict.REJECT).exists()
        or Attempt.objects.filter(space_id=task.space_id, task=task, cycle=task.cycle,
                                  state=AttemptState.WAITING).exists()
    )


def required_confirmations(task: Task, attempt: Attempt) -> int:
    # A contested attempt in a zero-confirmation space waits for one confirmation.
    return task.space.confirmations_required or 1


def find_citable_post(space: Space, post_id: object) -> Post:
    post = Post.objects.filter(space=space, pk=as_int(post_id), hidden_at=None, withheld_at=None).first()
    if post is None:
        raise errors.TaskPostNotFound(f"Post {post_id} is not a visible post of this space.")
    return post


def mark_done(*, task: Task, member: Member, post_id: object, cost: Cost | None = None) -> tuple[Task, Attempt]:
    """``POST …/done {"post"}``: a numbered attempt citing a post (SPEC §6.2). Returns the task as
    it is now and the attempt. ``cost`` (SPEC §19): the final spend of the caller's live claim, or,
    with none, of this attempt."""
    with transaction.atomic():
        task = get_task(space=task.space, number=task.number, lock=True)
        check_task_workable(task)
        space = task.space
        post = find_citable_post(space, post_id)
        of_task = {"space_id": task.space_id, "task": task}  # every read names the space (SPEC §11)
        if Attempt.objects.filter(**of_task, post=post, state=AttemptState.REJECTED).exists():
            raise errors.PostRejectedForTask(f"Post {post.pk} was rejected as task {task.number}'s result before.")
        if Check.objects.filter(**of_task, cycle=task.cycle, member=member).exists():
            raise errors.CheckerCannotAttempt(
                f"You checked an attempt on task {task.number} in cycle {task.cycle}; a key is doer or checker, not both."
            )
        this_cycle = Attempt.objects.filter(**of_task, cycle=task.cycle)
        if this_cycle.filter(member=member).exists():
            raise errors.AttemptExists(f"You already made an attempt on task {task.number} in cycle {task.cycle}.")
        if this_cycle.count() >= space.max_attempts_per_cycle:
            raise errors.AttemptLimit(
                f"Cycle {task.cycle} of task {task.number} already has {space.max_attempts_per_cycle} attempts.",
                max_attempts_per_cycle=space.max_attempts_per_cycle,
            )
        contested = space.confirmations_required == 0 and cycle_is_contested(task, member)
        first_of_cycle = not this_cycle.exists()
        holding = live_claims(task).filter(member=member).values_list("pk", flat=True).first() if cost else None
        number = (Attempt.objects.filter(**of_task).aggregate(n=Max("number"))["n"] or 0) + 1
        attempt = Attempt.objects.create(
            space_id=task.space_id, task=task, number=number, cycle=task.cycle, member=member, post=post
        )
        record_event(task=task, kind=EventKind.ATTEMPT, actor=member, attempt=number, post=post.pk, cycle=task.cycle)
        if cost is not None:
            costs.report(space=space, task_id=task.pk, member_id=member.pk, cost=cost, claim_id=holding,
                         attempt_id=None if holding else attempt.pk)
        wakeups.work_ready(task.space_id)  # an attempt to check (SPEC §15)
        to_notify = {post.author_id} - {member.pk}
        if first_of_cycle:
            holders = set(live_claims(task).values_list("member_id", flat=True))
            end_claims(live_claims(task), ClaimEnd.ATTEMPT)
            to_notify |= holders - {member.pk}
        if to_notify:
            notify(members=to_notify, kind=NotificationKind.TASK_ATTEMPT, task=task, attempt=number, post=post.pk,
                   doer=member.pk)
        if space.confirmations_required == 0 and not contested:
            accept(task=task, attempt=attempt, actor=member)
        else:
            recompute_status(task)
        attempt = Attempt.objects.prefetch_related(Prefetch("checks", Check.objects.filter(space_id=task.space_id))
                                                   ).get(space_id=task.space_id, pk=attempt.pk)
        attempt.member = member
        return task, attempt


def accept(*, task: Task, attempt: Attempt, actor: Member | None) -> None:
    now = timezone.now()
    Attempt.objects.filter(pk=attempt.pk).update(state=AttemptState.ACCEPTED, decided_at=now)
    passed = Attempt.objects.filter(task=task, cycle=task.cycle, state=AttemptState.WAITING).exclude(pk=attempt.pk)
    passed_numbers = list(passed.values_list("number", flat=True))
    passed.update(state=AttemptState.PASSED, decided_at=now)
    end_claims(live_claims(task), ClaimEnd.ATTEMPT)
    task.status = TaskStatus.DONE
    task.updated_at = now
    task.save(update_fields=["status", "updated_at"])
    release_occupancy(task)
    count_done(task)
    graph.task_ended(task, actor=actor)
    record_event(task=task, kind=EventKind.ACCEPTED, actor=actor, attempt=attempt.number, post=attempt.post_id,
                 passed=passed_numbers, cycle=task.cycle)
    notify(members=[attempt.member_id], kind=NotificationKind.ATTEMPT_ACCEPTED, task=task, attempt=attempt.number)


def lock_attempt(*, task: Task, number: object) -> tuple[Task, Attempt]:
    task = get_task(space=task.space, number=task.number, lock=True)
    check_task_live(task)
    attempt = Attempt.objects.select_related("post").filter(task=task, number=as_int(number)).first()
    if attempt is None:
        raise NotFound(f"Task {task.number} has no attempt {number}.")
    return task, attempt


def check_may_check(task: Task, attempt: Attempt, member: Member, verdict: str) -> None:
    if attempt.state != AttemptState.WAITING:
        raise errors.AttemptNotWaiting(f"Attempt {attempt.number} is {attempt.state}.", attempt_state=attempt.state)
    if attempt.member_id == member.pk:
        raise errors.DoerCannotCheck("You made this attempt; another key checks it.")
    own = Attempt.objects.filter(task=task, cycle=attempt.cycle, member=member).first()
    # Zero-confirmation spaces let a doer give the one deciding confirmation to a rival (never a reject).
    rival_allowed = task.space.confirmations_required == 0 and verdict == Verdict.CONFIRM
    if own is not None and not rival_allowed:
        raise errors.DoerCannotCheck(
            f"You made attempt {own.number} in cycle {attempt.cycle}; a key is doer or checker, not both."
        )
    if attempt.post.author_id == member.pk:
        raise errors.AuthorCannotCheck(f"You wrote post {attempt.post_id}, which attempt {attempt.number} cites.")
    if Check.objects.filter(attempt=attempt, member=member).exists():
        raise errors.CheckExists(f"You already checked attempt {attempt.number}.")


def person_check_required(space: Space, member: Member) -> bool:
    """SPEC §21: in a space whose attempts a person's confirmation accepts, an agent's would not."""
    return space.checks_by == ChecksBy.PEOPLE and member.kind != MemberKind.PERSON


def confirm_attempt(*, task: Task, number: object, member: Member) -> tuple[Task, Attempt]:
    """A confirmation; the task as it is now and the attempt."""
    if person_check_required(task.space, member):
        raise errors.PersonCheckRequired()
    with transaction.atomic():
        task, attempt = lock_attempt(task=task, number=number)
        check_may_check(task, attempt, member, Verdict.CONFIRM)
        Check.objects.create(space_id=task.space_id, task=task, attempt=attempt, member=member, cycle=attempt.cycle,
                             verdict=Verdict.CONFIRM)
        record_event(task=task, kind=EventKind.CHECK, actor=member, attempt=attempt.number, verdict=Verdict.CONFIRM,
                     cycle=attempt.cycle)
        # A check counts for its own cycle and attempt only.
        confirmations = Check.objects.filter(attempt=attempt, cycle=attempt.cycle, verdict=Verdict.CONFIRM).count()
        if confirmations >= required_confirmations(task, attempt):
            accept(task=task, attempt=attempt, actor=member)
        attempt.refresh_from_db()
        return task, attempt


def reject_attempt(*, task: Task, number: object, member: Member,
                   reason: str) -> tuple[Task, Attempt, dict | None]:
    """Set the attempt aside; returns the task as it is now, the attempt and, when no attempt
    waits any more, the reopening."""
    with transaction.atomic():
        task, attempt = lock_attempt(task=task, number=number)
        check_may_check(task, attempt, member, Verdict.REJECT)
        Check.objects.create(space_id=task.space_id, task=task, attempt=attempt, member=member, cycle=attempt.cycle,
                             verdict=Verdict.REJECT, reason=reason)
        Attempt.objects.filter(pk=attempt.pk).update(state=AttemptState.REJECTED, decided_at=timezone.now())
        record_event(task=task, kind=EventKind.CHECK, actor=member, attempt=attempt.number, verdict=Verdict.REJECT,
                     reason=reason, cycle=attempt.cycle)
        notify(members=[attempt.member_id], kind=NotificationKind.ATTEMPT_REJECTED, task=task,
               attempt=attempt.number, reason=reason)
        reopened = None
        if not Attempt.objects.filter(task=task, cycle=task.cycle, state=AttemptState.WAITING).exists():
            reopened = reopen(task=task, rejected=attempt, actor=member)
        else:
            recompute_status(task)
        attempt.refresh_from_db()
        return task, attempt, reopened


def reopen(*, task: Task, rejected: Attempt, actor: Member) -> dict:
    """No attempt waits any more: a new cycle starts, naming what was set aside."""
    old_cycle = task.cycle
    cycle_checks = Check.objects.filter(task=task, cycle=old_cycle)
    cleared = list(cycle_checks.filter(verdict=Verdict.CONFIRM).values_list("attempt__number", "member_id"))
    affected = set(Attempt.objects.filter(task=task, cycle=old_cycle).values_list("member_id", flat=True))
    affected |= set(cycle_checks.values_list("member_id", flat=True))
    details = {
        "rejected_attempt": rejected.number,
        "result_post": rejected.post_id,
        "confirmations_cleared": [{"attempt": n, "member": m} for n, m in cleared],
        "from_cycle": old_cycle,
        "cycle": old_cycle + 1,
    }
    task.cycle = old_cycle + 1
    task.status = TaskStatus.OPEN
    task.updated_at = timezone.now()
    task.save(update_fields=["cycle", "status", "updated_at"])
    record_event(task=task, kind=EventKind.REOPENED, actor=actor, **details)
    notify(members=affected, kind=NotificationKind.TASK_REOPENED, task=task, **details)
    if not parking.set_back(task):
        wakeups.work_ready(task.space_id)
    return details


def checkable_attempts(*, space: Space, member: Member) -> QuerySet[Attempt]:
    """The waiting attempts ``member`` may check, oldest task first (SPEC §6.3): of the task's
    current cycle, not its own nor citing its post, not checked by it yet, and — unless the
    space needs no confirmations — not on a task it attempted in this cycle itself."""
    waiting = (
        Attempt.objects.filter(space=space, state=AttemptState.WAITING, task__status=TaskStatus.IN_REVIEW,
                               cycle=F("task__cycle"))
        .exclude(member=member)
        .exclude(post__author=member)
        .exclude(checks__member=member)
    )
    if space.confirmations_required != 0:
        waiting = waiting.exclude(Exists(Attempt.objects.filter(task=OuterRef("task"), cycle=OuterRef("cycle"),
                                                                member=member)))
    return waiting.order_by("task__number", "number")


def offer_check(*, space: Space, member: Member) -> tuple[Task, Attempt] | None:
    """``next {"kind": "check"}``: the oldest waiting attempt the caller may check, if any (none
    for an agent where a person's check accepts, SPEC §21 ``checks_by``)."""
    if person_check_required(space, member):
        return None
    attempt = checkable_attempts(space=space, member=member).select_related("task", "post").first()
    return None if attempt is None else (attempt.task, attempt)
