"""The A2A operations (SPEC §18), whichever binding carried them: each is a thin adapter over
the same commands as REST and MCP (``tasks.commands``), run by the same runner, with the same
role checks and refusals (``commands.running``); a refusal is raised as an A2A error.
"""
from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone as dt_timezone
from typing import Any

from a2a.types import a2a_pb2 as pb
from django.db.models import Q
from django.utils import timezone

from commands.unit import Answer
from common.refusals import DomainError, InvalidRequest
from fronts.a2a import messages, push
from fronts.a2a.answers import FRONT, answered
from fronts.a2a.errors import of_domain, refused
from fronts.a2a.card import agent_card
from fronts.a2a.tasks import as_task, statuses_of
from commands.running import Caller, run_command
from commands.base import Command
from spaces.models import Role
from spaces.permissions import role_refusal
from tasks import commands, questions
from tasks.models import Task, TaskStatus
from tasks.serializers import TaskSerializer
from tasks.status import shown_in, with_shown_status

RESERVED_PATIENCE = 3.0  # seconds a send waits out another request creating the same work (converging)
DEFAULT_PAGE, MAX_PAGE = 50, 100
EPOCH = datetime(1970, 1, 1, tzinfo=dt_timezone.utc)


def task_body(caller: Caller, number: object) -> dict[str, Any]:
    """A task's answer as ``GET …/tasks/{n}`` gives it (the reader's role, its 404)."""
    return answered(caller, commands.get_task, number=number).body


def history_length(request: Any) -> int | None:
    """What a request asks of the history: None for all of it (unset), else at most that many; a
    negative length is refused, as the A2A SDK's own server does."""
    if not request.HasField("history_length"):
        return None
    if request.history_length < 0:
        raise of_domain(InvalidRequest("Bad historyLength.", fields={"historyLength": ["Zero or more."]}))
    return request.history_length


def send_message(caller: Caller, request: pb.SendMessageRequest) -> pb.SendMessageResponse:
    return pb.SendMessageResponse(task=sent_task(caller, request))


def sent_task(caller: Caller, request: pb.SendMessageRequest) -> pb.Task:
    """``SendMessage``: a task created through ``POST …/tasks``'s command (the message id is its
    Idempotency-Key), or a note on the task the message names. Work another task already
    occupies answers that task, saying so (``metadata.spaces.outcome = "redirect"``). A push
    notification config in the message's configuration is registered for the task it answers;
    one that could never be sent is refused before anything is written."""
    if request.configuration.HasField("task_push_notification_config"):
        push.check(request.configuration.task_push_notification_config)
    task = answered_task(caller, request)
    if request.configuration.HasField("task_push_notification_config"):
        config = pb.TaskPushNotificationConfig()
        config.CopyFrom(request.configuration.task_push_notification_config)
        config.task_id = task.id
        config.id = config.id or f"message-{request.message.message_id}"[:64]  # a retried message: the same config
        push.create(caller, config)
    return task


def answered_task(caller: Caller, request: pb.SendMessageRequest) -> pb.Task:
    space = caller.member.space
    if not request.message.message_id:
        raise of_domain(InvalidRequest("A message needs its messageId.",
                                                fields={"messageId": ["The message's id: its Idempotency-Key."]}))
    if request.message.context_id and request.message.context_id != space.slug:
        # A2A v1.0: a context the agent cannot take is refused, never replaced by another.
        raise of_domain(InvalidRequest("Bad contextId.", fields={"contextId": [
            f"This agent's one context, '{space.slug}' (the space), or none."]}))
    try:
        asked = messages.asked(request.message)
    except DomainError as error:
        raise of_domain(error) from None
    shown = history_length(request.configuration) if request.HasField("configuration") else 0
    shown = 0 if shown is None else shown
    key = request.message.message_id
    if asked.note:
        reply = answer_of_reply(caller, asked, key)
        if reply is not None:
            extra = {"outcome": "answered", "question": reply.body["id"], "replayed": reply.replayed}
            return as_task(space, task_body(caller, asked.task), history_length=shown, extra=extra)
        answer = converged(caller, commands.add_note, "note", data=asked.data, idempotency_key=key,
                           number=asked.task)
        if answer.status == 409:  # the same note is on the task already: answered by it, as a create is
            extra = {"outcome": "redirect", "note": answer.body["winner"]["id"], "replayed": answer.replayed}
        else:
            extra = {"outcome": "noted", "note": answer.body.get("id"), "replayed": answer.replayed}
        return as_task(space, task_body(caller, asked.task), history_length=shown, extra=extra)
    answer = converged(caller, commands.create_task, "task", data=asked.data, idempotency_key=key)
    if answer.status == 201:
        extra = {"outcome": "created", "replayed": answer.replayed}
        if "similar" in answer.body:
            extra["similar"] = answer.body["similar"]
        return as_task(space, answer.body, history_length=shown, extra=extra)
    body = answer.body  # 409: the work is another task's (SPEC §4.6)
    extra = {"outcome": "redirect", "conflict_key": body.get("conflict_key"), "winner": body["winner"]["id"],
             "replayed": answer.replayed}
    return as_task(space, task_body(caller, body["winner"]["id"]), history_length=shown, extra=extra)


def answer_of_reply(caller: Caller, asked: messages.Asked, key: str) -> Answer | None:
    """SPEC §21: the requester's message to a task whose question to it is open is the answer
    (its latest question to the creator, so a retried message replays the answer it gave);
    None when there is no such question or it closed first: the message is a note then."""
    latest = questions.to_creator(space_id=caller.member.space_id, number=asked.task).order_by("-pk").first()
    if latest is None or latest.addressee_id != caller.member.pk:
        return None
    try:
        answer = run_command(caller, commands.answer_question, front=FRONT, data={"body": asked.data["body"]},
                             idempotency_key=key, number=asked.task, question=latest.pk)
    except DomainError as error:
        raise of_domain(error) from None
    if answer.status == 200:
        return answer
    if answer.status == 409 and answer.body.get("error") == "question_closed":
        return None
    raise refused(answer.status, answer.body)


def converged(caller: Caller, command: Command, winner: str, **arguments: Any) -> Answer:
    """The answer of a create or a note: 201, or a 409 naming the ``winner`` (a task, a note)
    that holds the same work, which the message is answered by (requesters converge instead of
    failing). Another request writing the same work right now (``conflict_key_reserved``) is
    waited out, as a client told to retry would; any other refusal is raised."""
    deadline = time.monotonic() + RESERVED_PATIENCE
    while True:
        try:
            answer = run_command(caller, command, front=FRONT, **arguments)
        except DomainError as error:
            raise of_domain(error) from None
        body = answer.body if isinstance(answer.body, dict) else {}
        if answer.status < 400 or (answer.status == 409 and (body.get("winner") or {}).get("type") == winner):
            return answer
        if body.get("code") == "conflict_key_reserved" and time.monotonic() < deadline:
            time.sleep(body.get("retry_after_ms", 100) / 1000)
            continue
        raise refused(answer.status, body)


def get_task(caller: Caller, request: pb.GetTaskRequest) -> pb.Task:
    return as_task(caller.member.space, task_body(caller, request.id), history_length=history_length(request))


def cancel_task(caller: Caller, request: pb.CancelTaskRequest) -> pb.Task:
    """``CancelTask``: the task withdrawn (SPEC §5.2: its creator or a steward)."""
    reason = request.metadata.fields["reason"].string_value if "reason" in request.metadata.fields else ""
    answer = answered(caller, commands.withdraw_task, cancel=True, data={"reason": reason}, number=request.id)
    return as_task(caller.member.space, answer.body, history_length=0)


def list_tasks(caller: Caller, request: pb.ListTasksRequest) -> pb.ListTasksResponse:
    """``ListTasks``: the space's tasks, the last changed first (A2A v1.0: by status timestamp,
    descending), by state and changed since, a page at a time (the page token is the last task's
    change time and number). A superseded task is shown by its survivor."""
    member = caller.member
    refusal = role_refusal(member, Role.READER)
    if refusal is not None:
        raise of_domain(refusal)
    size = request.page_size if request.HasField("page_size") else DEFAULT_PAGE
    if not 1 <= size <= MAX_PAGE:
        raise of_domain(InvalidRequest("Bad pageSize.", fields={"pageSize": [f"From 1 to {MAX_PAGE}."]}))
    if request.context_id and request.context_id != member.space.slug:
        return pb.ListTasksResponse(page_size=size)
    now = timezone.now()
    tasks = Task.objects.filter(space=member.space).exclude(status=TaskStatus.SUPERSEDED)
    if request.status:
        tasks = tasks.filter(shown_in(statuses_of(request.status), now))
    if request.HasField("status_timestamp_after"):  # changed since then
        tasks = tasks.filter(updated_at__gt=request.status_timestamp_after.ToDatetime(tzinfo=dt_timezone.utc))
    total = tasks.count()
    if request.page_token:
        changed, number = after_token(request.page_token)
        tasks = tasks.filter(Q(updated_at__lt=changed) | Q(updated_at=changed, number__lt=number))
    page = list(with_shown_status(tasks.select_related("creator", "superseded_by"), now)
                .order_by("-updated_at", "-number")[:size + 1])
    more, page = len(page) > size, page[:size]
    shown = history_length(request)
    found = [as_task(member.space, TaskSerializer(task).data, history_length=0 if shown is None else shown,
                     artifacts=request.include_artifacts) for task in page]
    return pb.ListTasksResponse(tasks=found, page_size=size, total_size=total,
                                next_page_token=page_token(page[-1]) if more else "")


def page_token(task: Task) -> str:
    """Where the next page starts: below this task's change time (microseconds) and number."""
    changed = task.updated_at - EPOCH
    return f"{changed // timedelta(microseconds=1)}-{task.number}"


def after_token(token: str) -> tuple[datetime, int]:
    changed, _, number = token.partition("-")
    try:
        if all(part.isascii() and part.isdigit() and len(part) <= 18 for part in (changed, number)):  # bigints
            return EPOCH + timedelta(microseconds=int(changed)), int(number)
    except OverflowError:  # past the year 9999
        pass
    raise of_domain(InvalidRequest("Bad pageToken.", fields={"pageToken": ["The nextPageToken of the page before."]}))


def get_extended_card(caller: Caller, request: pb.GetExtendedAgentCardRequest) -> pb.AgentCard:
    """The card a member reads: the public one, saying what the caller's key may do."""
    return agent_card(caller.member.space, caller.base_url, member=caller.member)

