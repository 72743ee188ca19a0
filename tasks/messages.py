"""Messages between members (SPEC §21): a task's thread, and direct messages.

A task's thread reaches its creator, its holders, its askers, its checkers and whoever a
message of it named or sent; a direct message the members it names. The same sender, thread
and body within 24 hours is one message: the check and the insert run under an advisory lock
on the three, so two such posts at once make one (the other is ``409 allocation_conflict``,
kind ``post_message``, naming it). Each recipient gets a notification, which is the message's
place in its inbox until it is marked read.
"""
from __future__ import annotations

import hashlib
from datetime import timedelta

from django.db import connection, transaction
from django.utils import timezone

from allocation.errors import ConflictKeyOccupied
from common.refusals import InvalidRequest
from common.sql import ADVISORY_XACT_LOCK
from events import feed
from spaces.models import Member, Role, Space
from tasks import errors, sql
from tasks.lifecycle import live_claims, notify
from tasks.models import Check, Message, NotificationKind, Question, Task

REPEAT_WINDOW = timedelta(hours=24)


def thread_of(task: Task) -> str:
    return f"task:{task.number}"


def thread_members(task: Task) -> set[int]:
    """Who a task's thread reaches: its creator, holders, askers, checkers, and every member a
    message of the thread named or sent."""
    of_task = {"space_id": task.space_id, "task": task}
    members = {task.creator_id} if task.creator_id else set()
    members.update(live_claims(task).values_list("member_id", flat=True))
    members.update(Question.objects.filter(**of_task).values_list("asker_id", flat=True))
    members.update(Check.objects.filter(**of_task).values_list("member_id", flat=True))
    for sender, recipients in Message.objects.filter(**of_task).values_list("sender_id", "recipients"):
        members.add(sender)
        members.update(recipients)
    return members


def may_read_thread(task: Task, member: Member) -> bool:
    return member.role == Role.STEWARD or member.pk in thread_members(task)


def check_members(space_id: int, ids: list[int]) -> None:
    found = set(Member.objects.filter(space_id=space_id, pk__in=ids).values_list("pk", flat=True))
    missing = sorted(set(ids) - found)
    if missing:
        raise InvalidRequest(f"No member {', '.join(map(str, missing))} in this space.",
                             fields={"to": [f"Not members of this space: {missing}."]})


def post_to_task(*, task: Task, sender: Member, body: str, to: list[int]) -> Message:
    """A message on ``task``'s thread: to everyone the thread reaches and the members ``to`` names."""
    check_members(task.space_id, to)
    recipients = (thread_members(task) | set(to)) - {sender.pk}
    return post(space_id=task.space_id, task=task, sender=sender, thread=thread_of(task), body=body,
                recipients=recipients)


def post_direct(*, space: Space, sender: Member, body: str, to: list[int]) -> Message:
    """A message to the members ``to`` names (the sender may name itself: a note to self)."""
    check_members(space.pk, to)
    thread = "direct:" + ",".join(map(str, sorted({*to, sender.pk})))
    return post(space_id=space.pk, task=None, sender=sender, thread=thread[:200], body=body,
                recipients=set(to) - {sender.pk} or {sender.pk})


def post(*, space_id: int, task: Task | None, sender: Member, thread: str, body: str,
         recipients: set[int]) -> Message:
    digest = hashlib.sha256(body.encode()).hexdigest()
    now = timezone.now()
    with transaction.atomic():
        fold = int.from_bytes(hashlib.sha256(f"{space_id}:{sender.pk}:{thread}:{digest}".encode()).digest()[:4])
        with connection.cursor() as cursor:
            cursor.execute(ADVISORY_XACT_LOCK, [sql.MESSAGE_LOCK_CLASS, fold])
        earlier = Message.objects.filter(space_id=space_id, sender=sender, thread=thread, body_sha256=digest,
                                         created_at__gt=now - REPEAT_WINDOW).order_by("pk").first()
        if earlier is not None:
            raise ConflictKeyOccupied(
                f"You sent this message to this thread in the last 24 hours: it is message {earlier.pk}.",
                conflict_key={"kind": "post_message", "target": f"message:{thread}:{digest}",
                                                "delivery_mode": "message"},
                outcome="redirect", winner={"type": "message", "id": earlier.pk}, write_occurred=False)
        message = Message.objects.create(space_id=space_id, task=task, sender=sender, thread=thread, body=body,
                                         body_sha256=digest, recipients=sorted(recipients), created_at=now)
        feed.record(space_id=space_id, type="message.posted", actor_id=sender.pk,
                    data={"message": message.pk, "task": task.number if task else None, "to": sorted(recipients)})
        notify(members=recipients, kind=NotificationKind.MESSAGE, task=task, space_id=space_id, message=message.pk,
               sender=sender.pk)
    return message


def task_thread(task: Task, member: Member):
    """A task's messages, oldest first, for a member its thread includes (or a steward)."""
    if not may_read_thread(task, member):
        raise errors.NotInThread(f"Task {task.number}'s thread does not include you.")
    return Message.objects.filter(space_id=task.space_id, task=task).select_related("task").order_by("pk")
