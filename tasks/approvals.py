"""Approval before work starts (SPEC §21): which creates are ``proposed``, and the approval or
refusal that ends a proposal.

A proposed task occupies its conflict key (a second create of the same work is ``409`` naming
it) but is not ready: ``next`` hands out open tasks only. A steward, or the member the create
named ``approver``, approves it (→ ``open``, and the agents waiting for work hear of it) or
refuses it (→ ``rejected``, its key freed). Both take the task's row lock and read its status
under it, so an approval racing a refusal is decided once: the loser is ``409
task_not_proposed`` naming the status the winner left.
"""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from common.refusals import InvalidRequest
from events import feed
from spaces.models import ApprovalRequired, Member, MemberKind, Role, Space
from tasks import errors, wakeups
from tasks.lifecycle import notify, record_event
from tasks.stewardship import close_task, lock_tasks
from tasks.models import EventKind, NotificationKind, Task, TaskStatus


def needs_approval(space: Space, actor: Member, *, asked: bool, work_item_id: str | None) -> bool:
    """Whether a create by ``actor`` is proposed: asked for, or the space's setting says so. A
    steward's own create is approved at once."""
    if actor.role == Role.STEWARD:
        return False
    setting = space.approval_required
    return asked or setting == ApprovalRequired.ALL or (
        setting == ApprovalRequired.UNCATALOGUED and work_item_id is None) or (
        setting == ApprovalRequired.AGENTS and actor.kind == MemberKind.AGENT)


def approver_in(space: Space, member_id: int | None) -> Member | None:
    """The member a create names to approve it: one of this space's, else ``422``."""
    if member_id is None:
        return None
    approver = Member.objects.filter(space=space, pk=member_id).first()
    if approver is None:
        raise InvalidRequest(f"No member {member_id} in this space to approve the task.",
                             fields={"approver": ["Not a member of this space."]})
    return approver


def announce(task: Task) -> None:
    """A proposed task was created: ``approval.requested`` on the feed, and a notification to
    its approver, or else to the stewards. In the create's transaction."""
    feed.record(space_id=task.space_id, type="approval.requested", actor_id=task.creator_id,
                data={"task": task.number, "approver": task.approver_id})
    addressees = [task.approver_id] if task.approver_id else list(
        Member.objects.filter(space_id=task.space_id, role=Role.STEWARD).values_list("pk", flat=True))
    notify(members=addressees, kind=NotificationKind.APPROVAL_REQUESTED, task=task, task_number=task.number)


def awaits_decision_by(member: Member) -> bool:
    """Whether a proposal of the space names ``member`` its approver."""
    return Task.objects.filter(space_id=member.space_id, status=TaskStatus.PROPOSED, approver=member).exists()


def may_decide(task: Task, actor: Member) -> bool:
    return actor.role == Role.STEWARD or (task.approver_id is not None and task.approver_id == actor.pk)


def locked_proposal(task: Task, actor: Member) -> Task:
    """``task`` under its row lock, still proposed, and ``actor`` one who may decide it."""
    if not may_decide(task, actor):
        raise errors.NotApprover()
    (task,) = lock_tasks(task)
    if task.status != TaskStatus.PROPOSED:
        raise errors.TaskNotProposed(f"Task {task.number} is {task.status}: it was decided already.",
                                     task_status=task.status)
    return task


def approve(*, task: Task, actor: Member) -> Task:
    """A proposal approved: the task is open, and ready unless blocked (the waiting agents hear of it)."""
    with transaction.atomic():
        task = locked_proposal(task, actor)
        task.status, task.updated_at = TaskStatus.OPEN, timezone.now()
        task.save(update_fields=["status", "updated_at"])
        record_event(task=task, kind=EventKind.APPROVED, actor=actor)
        feed.record(space_id=task.space_id, type="approval.given", actor_id=actor.pk, data={"task": task.number})
        if task.creator_id and task.creator_id != actor.pk:
            notify(members=[task.creator_id], kind=NotificationKind.APPROVAL_GIVEN, task=task, task_number=task.number)
        wakeups.work_ready(task.space_id)
    return task


def refuse(*, task: Task, actor: Member, reason: str = "") -> Task:
    """A proposal refused: the task is rejected and its key freed (SPEC §4.4)."""
    with transaction.atomic():
        task = locked_proposal(task, actor)
        close_task(task, status=TaskStatus.REJECTED, actor=actor, reason=reason)
        record_event(task=task, kind=EventKind.REFUSED, actor=actor, reason=reason)
        feed.record(space_id=task.space_id, type="approval.refused", actor_id=actor.pk,
                    data={"task": task.number, "reason": reason})
        if task.creator_id and task.creator_id != actor.pk:
            notify(members=[task.creator_id], kind=NotificationKind.APPROVAL_REFUSED, task=task,
                   task_number=task.number, reason=reason)
    return task
