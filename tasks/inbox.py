"""What waits on a member (SPEC §21 ``GET /v1/inbox``): open questions addressed to it, approvals
it may give, attempts it may check, unread messages — each with its task. Reads only; a
message leaves the inbox when it is marked read (``mark_read``), the rest when acted on."""
from __future__ import annotations

from django.db.models import Q
from django.utils import timezone

from spaces.models import Member, Role
from tasks.attempts import checkable_attempts, person_check_required
from tasks.models import Message, Notification, NotificationKind, Question, QuestionState, Task, TaskStatus

LIMIT = 100  # of each kind, oldest first; what is past it shows once the first are dealt with


def open_questions(member: Member):
    """Open questions addressed to ``member``, or to the stewards when it is one (not its own)."""
    to_me = Q(addressee=member)
    if member.role == Role.STEWARD:
        to_me |= Q(addressee__isnull=True)
    return (Question.objects.filter(to_me, space_id=member.space_id, state=QuestionState.OPEN)
            .exclude(asker=member).select_related("task").order_by("pk"))


def approvals(member: Member):
    proposals = Task.objects.filter(space_id=member.space_id, status=TaskStatus.PROPOSED)
    if member.role != Role.STEWARD:
        proposals = proposals.filter(approver=member)
    return proposals.order_by("number")


def checks(member: Member):
    if person_check_required(member.space, member):
        return []
    return checkable_attempts(space=member.space, member=member).select_related("task")


def unread_messages(member: Member) -> list[Message]:
    ids = (Notification.objects.filter(member=member, kind=NotificationKind.MESSAGE, read_at=None)
           .order_by("pk").values_list("details__message", flat=True)[:LIMIT])
    return list(Message.objects.filter(space_id=member.space_id, pk__in=list(ids)).select_related("task")
                .order_by("pk"))


def mark_read(*, member: Member, ids: list[int] | None = None) -> int:
    """Messages of the inbox (those of ``ids``, or all) marked read; how many."""
    unread = Notification.objects.filter(member=member, kind=NotificationKind.MESSAGE, read_at=None)
    if ids is not None:
        unread = unread.filter(details__message__in=ids)
    return unread.update(read_at=timezone.now())
