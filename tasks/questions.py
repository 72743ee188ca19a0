"""Questions that pause work (SPEC §21).

A member holding a live claim on a task, its creator or a steward asks a question addressed to
the creator, the stewards or a member. While a question is open the task is ``waiting``: it
occupies its key and is not ready. The asker's claim is kept with its lease paused (``hold``:
its expiry is ``PAUSED_UNTIL``, which nothing lapses and no heartbeat shortens) or ended as a
give-back. The question closes once — answered, withdrawn or expired — under the task's row
lock and then its own, so an answer racing another answer, a withdrawal or its deadline is
decided once: the loser is ``409 question_closed`` naming it as it is. Then the kept claim's
lease starts again and the task goes back to what its claims say (``recompute_status``).

The waited ``ask`` (``wait``) waits on ``tasks.waiting``'s listener: a question that closes
wakes the space's waiters when it commits.
"""
from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from allocation.errors import ConflictKeyOccupied
from common.refusals import InvalidRequest, NotFound
from events import feed
from spaces.models import Member, Role
from spaces.selectors import as_int
from tasks import errors, wakeups
from tasks.claims import claim_expiry, end_claims
from tasks.lifecycle import check_task_usable, live_claims, notify, recompute_status, record_event
from tasks.models import (
    PAUSED_UNTIL,
    Claim,
    ClaimEnd,
    EventKind,
    NotificationKind,
    Question,
    QuestionState,
    QuestionTo,
    Task,
    TaskStatus,
)
from tasks.selectors import get_task

ASKABLE = (TaskStatus.OPEN, TaskStatus.CLAIMED, TaskStatus.ASSIGNED, TaskStatus.WAITING)


def addressee_of(task: Task, asker: Member, to: str | int) -> tuple[str, Member | None]:
    """``to`` as stored: ``(to, addressee)``; the stewards have no one addressee."""
    if to == QuestionTo.STEWARDS:
        return QuestionTo.STEWARDS, None
    if to == QuestionTo.CREATOR:
        if task.creator_id is None:
            raise InvalidRequest(f"Task {task.number} has no creator to ask.", fields={"to": ["The task has no creator."]})
        addressee, kind = task.creator, QuestionTo.CREATOR
    else:
        addressee = Member.objects.filter(space_id=task.space_id, pk=as_int(to)).first()
        if addressee is None:
            raise InvalidRequest(f"No member {to} in this space to ask.", fields={"to": ["Not a member of this space."]})
        kind = QuestionTo.MEMBER
    if addressee.pk == asker.pk:
        raise InvalidRequest("A question is asked of someone else.", fields={"to": ["You would be asking yourself."]})
    return kind, addressee


def conflict(question: Question) -> ConflictKeyOccupied:
    """The asker's open question on the task is the one question it has there (SPEC §21)."""
    return ConflictKeyOccupied(
        f"You have question {question.pk} open on this task already: wait for its answer, or withdraw it.",
        conflict_key={"kind": "ask_question", "target": f"question:{question.task_id}:{question.asker_id}",
                      "delivery_mode": "message"},
        outcome="redirect", winner={"type": "question", "id": question.pk, "state": question.state},
        write_occurred=False)


def ask(*, task: Task, asker: Member, body: str, to: str | int, options: list[str] | None = None,
        hold: bool | None = None, expires_at: datetime | None = None) -> Question:
    """Open a question on ``task``; the task is ``waiting`` until every open question on it closes."""
    with transaction.atomic():
        task = get_task(space=task.space, number=task.number, lock=True)
        check_task_usable(task)
        if task.status not in ASKABLE:
            raise errors.TaskNotOpen(f"Task {task.number} is {task.status}: questions are asked on live work "
                                     "that is not proposed or in review.", task_status=task.status)
        claim = live_claims(task).filter(member=asker).first()
        if claim is None and asker.role != Role.STEWARD and task.creator_id != asker.pk:
            raise errors.NotAsker(f"You hold no claim on task {task.number}, did not create it and are not a steward.")
        if hold and claim is None:
            raise InvalidRequest("You hold no claim on this task to keep.", fields={"hold": ["You hold no claim."]})
        hold = claim is not None if hold is None else hold
        now = timezone.now()
        if expires_at is not None and expires_at <= now:
            raise InvalidRequest("A question's deadline is in the future.", fields={"expires_at": ["Not in the future."]})
        kind, addressee = addressee_of(task, asker, to)
        mine = Question.objects.filter(space_id=task.space_id, task=task, asker=asker, state=QuestionState.OPEN).first()
        if mine is not None:
            raise conflict(mine)
        try:
            with transaction.atomic():
                question = Question.objects.create(
                    space_id=task.space_id, task=task, asker=asker, to=kind, addressee=addressee, body=body,
                    options=options or [], claim=claim if hold else None, expires_at=expires_at, created_at=now)
        except IntegrityError:  # question_one_open_per_asker: under the task's lock, only a stale read
            raise conflict(Question.objects.get(space_id=task.space_id, task=task, asker=asker,
                                                state=QuestionState.OPEN)) from None
        if claim is not None and hold:
            Claim.objects.filter(space_id=task.space_id, pk=claim.pk).update(expires_at=PAUSED_UNTIL)
        elif claim is not None:
            end_claims(Claim.objects.filter(space_id=task.space_id, pk=claim.pk), ClaimEnd.GAVE_BACK)
            record_event(task=task, kind=EventKind.GIVEN_BACK, actor=asker, claim=claim.pk, cycle=claim.cycle)
        task.status, task.updated_at = TaskStatus.WAITING, now
        Task.objects.filter(space_id=task.space_id, pk=task.pk).update(status=task.status, updated_at=now)
        record_event(task=task, kind=EventKind.ASKED, actor=asker, question=question.pk, to=kind,
                     addressee=addressee.pk if addressee else None, hold=hold)
        feed.record(space_id=task.space_id, type="question.asked", actor_id=asker.pk,
                    data={"task": task.number, "question": question.pk, "to": kind,
                          "addressee": addressee.pk if addressee else None})
        notify(members=addressees(question), kind=NotificationKind.QUESTION_ASKED, task=task,
               task_number=task.number, question=question.pk)
    question.task = task
    return question


def addressees(question: Question) -> list[int]:
    if question.addressee_id is not None:
        return [question.addressee_id]
    return list(Member.objects.filter(space_id=question.space_id, role=Role.STEWARD)
                .exclude(pk=question.asker_id).values_list("pk", flat=True))


def addressed_to(member: Member):
    """The space's open questions addressed to ``member``, oldest first."""
    return Question.objects.filter(space_id=member.space_id, state=QuestionState.OPEN, addressee=member).order_by("pk")


def awaits_answer_by(member: Member) -> bool:
    """Whether an open question of the space is addressed to ``member``."""
    return addressed_to(member).exists()


def to_creator(*, space_id: int, number: object):
    """Task ``number``'s questions addressed to its creator (A2A's input required)."""
    return Question.objects.filter(space_id=space_id, task__space_id=space_id, task__number=as_int(number),
                                   to=QuestionTo.CREATOR)


def open_to_creator(*, space_id: int, number: object) -> Question | None:
    """The oldest open one: the question a requester is shown."""
    return to_creator(space_id=space_id, number=number).filter(state=QuestionState.OPEN).order_by("pk").first()


def may_answer(question: Question, member: Member) -> bool:
    return member.role == Role.STEWARD or (question.addressee_id is not None and question.addressee_id == member.pk)


def get_question(*, task: Task, question_id: object) -> Question:
    question = Question.objects.filter(space_id=task.space_id, task=task, pk=as_int(question_id)).first()
    if question is None:
        raise NotFound(f"No question {question_id} on task {task.number}.")
    question.task = task
    return question


def locked(question: Question) -> tuple[Task, Question]:
    """The task's row lock, then the question's: the order every close takes."""
    task = get_task(space=question.task.space, number=question.task.number, lock=True)
    question = Question.objects.select_for_update(of=("self",), no_key=True).get(space_id=task.space_id, pk=question.pk)
    question.task = task
    return task, question


def closed(question: Question) -> errors.QuestionClosed:
    verb = {QuestionState.ANSWERED: "was answered", QuestionState.EXPIRED: "expired",
            QuestionState.WITHDRAWN: "was withdrawn"}[question.state]
    return errors.QuestionClosed(f"Question {question.pk} {verb} already.", question=closed_body(question))


def closed_body(question: Question) -> dict:
    return {"id": question.pk, "state": question.state, "answer": question.answer, "option": question.option or None,
            "answered_by": question.answered_by_id}


def close(task: Task, question: Question, *, state: str, actor: Member | None, event: str, feed_type: str,
          **data) -> None:
    """Close an open question: its state, the kept claim's lease started again, the task's status
    from its claims (still ``waiting`` while another question is open), the event, the feed
    entry and the waiters woken. The caller holds both locks and checked it is open."""
    now = timezone.now()
    question.state, question.closed_at = state, now
    question.save(update_fields=["state", "closed_at", "answer", "option", "answered_by"])
    if question.claim_id is not None:
        Claim.objects.filter(space_id=task.space_id, pk=question.claim_id, ended_at=None).update(
            expires_at=claim_expiry(task.space, now))
    recompute_status(task)
    record_event(task=task, kind=event, actor=actor, question=question.pk, **data)
    feed.record(space_id=task.space_id, type=feed_type, actor_id=actor.pk if actor else None,
                data={"task": task.number, "question": question.pk, **data})
    told = {QuestionState.ANSWERED: NotificationKind.QUESTION_ANSWERED,
            QuestionState.EXPIRED: NotificationKind.QUESTION_EXPIRED}.get(state)
    if told is not None:
        notify(members=[question.asker_id], kind=told, task=task, task_number=task.number, question=question.pk)
    wakeups.work_ready(task.space_id)  # the asker waiting for its answer, and any agent when it is open again


def expire_if_due(task: Task, question: Question, now: datetime) -> bool:
    if question.state != QuestionState.OPEN or question.expires_at is None or question.expires_at > now:
        return False
    close(task, question, state=QuestionState.EXPIRED, actor=None, event=EventKind.QUESTION_EXPIRED,
          feed_type="question.expired")
    return True


def answer(*, question: Question, actor: Member, body: str = "", option: str | None = None) -> Question:
    """The first answer closes the question; a later one is ``409 question_closed`` naming the winner."""
    if not may_answer(question, actor):
        raise errors.NotAddressee(f"Question {question.pk} is addressed to "
                                  f"{'the stewards' if question.addressee_id is None else 'another member'}.")
    if not body and option is None:
        raise InvalidRequest("An answer has a body, an option or both.", fields={"body": ["Give a body or an option."]})
    if option is not None and question.options and option not in question.options:
        raise InvalidRequest(f"`option` is one of the question's: {', '.join(question.options)}.",
                             fields={"option": ["Not one of the question's options."]})
    with transaction.atomic():
        task, question = locked(question)
        expire_if_due(task, question, timezone.now())
        if question.state == QuestionState.OPEN:
            question.answer, question.option, question.answered_by = body, option or "", actor
            close(task, question, state=QuestionState.ANSWERED, actor=actor, event=EventKind.ANSWERED,
                  feed_type="question.answered", by=actor.pk)
            return question
    raise closed(question)  # outside the block: an expiry recorded on the way stays recorded


def withdraw(*, question: Question, actor: Member) -> Question:
    """The asker (or a steward) takes its open question back; the task goes on as if answered."""
    if actor.pk != question.asker_id and actor.role != Role.STEWARD:
        raise errors.NotAsker(f"Question {question.pk} is another member's.")
    with transaction.atomic():
        task, question = locked(question)
        expire_if_due(task, question, timezone.now())
        if question.state == QuestionState.OPEN:
            close(task, question, state=QuestionState.WITHDRAWN, actor=actor, event=EventKind.UNASKED,
                  feed_type="question.withdrawn")
            return question
    raise closed(question)


def close_with_task(task: Task) -> None:
    """A task that ends (superseded, withdrawn, rejected) takes its open questions with it, and
    their waiting askers hear of it. The caller holds the task's row lock."""
    if Question.objects.filter(space_id=task.space_id, task=task, state=QuestionState.OPEN).update(
            state=QuestionState.WITHDRAWN, closed_at=timezone.now()):
        wakeups.work_ready(task.space_id)


def expire_questions(*, now: datetime | None = None, dry_run: bool = False) -> int:
    """Every open question past its deadline closed as expired (the sweep); how many. Each under
    its task's and its own lock, so a sweep racing an answer closes it once."""
    now = now or timezone.now()
    due = Question.objects.filter(state=QuestionState.OPEN, expires_at__lte=now).select_related("task__space")
    if dry_run:
        return due.count()
    expired = 0
    for question in due.order_by("expires_at")[:1000]:
        with transaction.atomic():
            task, question = locked(question)
            expired += expire_if_due(task, question, now)
    return expired
