"""A2A push notification configs (SPEC §18) over ``webhooks.push``, and the body they deliver.

Each operation is a command run by the same runner as every other (``commands.running``): the
writer's role, the task's ``404``, an address refused as a webhook's is (``422`` naming ``url``).
A delivery is a ``StreamResponse``: the Task itself once it has ended (with a completed task's
artifact), else a status update naming the event; signed as every webhook is, and carrying the
config's token (``X-A2A-Notification-Token``) and Authorization.
"""
from __future__ import annotations

import json
from typing import Any

from a2a.types import a2a_pb2 as pb
from django.utils import timezone
from google.protobuf import json_format

from events.models import Event
from common.refusals import DomainError
from fronts.a2a.answers import answered
from fronts.a2a.errors import of_domain
from fronts.a2a.tasks import TERMINAL, as_task, struct
from commands.running import Caller
from commands.base import Command, Reply
from spaces.models import Member, Role
from tasks import selectors
from tasks.models import Task
from tasks.serializers import TaskSerializer
from tasks.status import with_shown_status
from webhooks import formats, push

FORMAT = "a2a"


def config_answer(endpoint) -> dict[str, Any]:
    """A config as A2A shows it (its credentials are the requester's: never shown back)."""
    answer: dict[str, Any] = {"id": endpoint.push_id, "taskId": str(endpoint.task_number), "url": endpoint.url}
    if endpoint.push_token:
        answer["token"] = endpoint.push_token
    if endpoint.push_authorization:
        answer["authentication"] = {"scheme": endpoint.push_authorization.split(" ", 1)[0]}
    return answer


def _create(member: Member, *, unit: Any, number: str, url: str, push_id: str, token: str,
            authorization: str) -> Reply:
    task = selectors.get_task(space=member.space, number=number)
    endpoint = push.register_push(space=member.space, actor=member, task_number=task.number, url=url,
                                  push_id=push_id, token=token, authorization=authorization, format=FORMAT)
    return Reply(201, config_answer(endpoint))


def _read(member: Member, *, unit: Any, number: str, push_id: str | None = None) -> Reply:
    task = selectors.get_task(space=member.space, number=number)
    if push_id is None:
        found = push.pushes(space=member.space, task_number=task.number, member=member)
        return Reply(200, {"configs": [config_answer(endpoint) for endpoint in found]})
    return Reply(200, config_answer(push.get_push(space=member.space, task_number=task.number, push_id=push_id,
                                                  member=member)))


def _delete(member: Member, *, unit: Any, number: str, push_id: str) -> Reply:
    task = selectors.get_task(space=member.space, number=number)
    push.remove_push(space=member.space, task_number=task.number, push_id=push_id, member=member)
    return Reply(200, {})


# The A2A front's own commands: a requester's push configs have no REST or MCP twin (a steward's
# webhooks are theirs), so they are not in commands.base.COMMANDS.
CREATE = Command("a2a_push_create", Role.WRITER, _create)
READ = Command("a2a_push_read", Role.WRITER, _read, mutates=False)
DELETE = Command("a2a_push_delete", Role.WRITER, _delete)


def as_config(body: dict[str, Any]) -> pb.TaskPushNotificationConfig:
    return json_format.ParseDict(body, pb.TaskPushNotificationConfig())


def authorization_of(config: pb.TaskPushNotificationConfig) -> str:
    if config.HasField("authentication") and config.authentication.scheme:
        return f"{config.authentication.scheme} {config.authentication.credentials}".strip()
    return ""


def check(config: pb.TaskPushNotificationConfig) -> None:
    """Refuses a config that could never be sent, as its create would, before any write (a
    message carrying one creates nothing when it is refused)."""
    try:
        push.check_push(url=config.url, token=config.token, authorization=authorization_of(config))
    except DomainError as error:
        raise of_domain(error) from None


def create(caller: Caller, config: pb.TaskPushNotificationConfig) -> pb.TaskPushNotificationConfig:
    authorization = authorization_of(config)
    answer = answered(caller, CREATE, number=config.task_id, url=config.url, push_id=config.id,
                      token=config.token, authorization=authorization)
    return as_config(answer.body)


def get(caller: Caller, request: pb.GetTaskPushNotificationConfigRequest) -> pb.TaskPushNotificationConfig:
    return as_config(answered(caller, READ, number=request.task_id, push_id=request.id).body)


def listed(caller: Caller, request: pb.ListTaskPushNotificationConfigsRequest
           ) -> pb.ListTaskPushNotificationConfigsResponse:
    body = answered(caller, READ, number=request.task_id).body
    return pb.ListTaskPushNotificationConfigsResponse(configs=[as_config(config) for config in body["configs"]])


def delete(caller: Caller, request: pb.DeleteTaskPushNotificationConfigRequest) -> None:
    answered(caller, DELETE, number=request.task_id, push_id=request.id)


def body(event: Event) -> str:
    """A delivery's body: the task as it stands when the event is taken into deliveries."""
    task = with_shown_status(Task.objects.filter(space_id=event.space_id, number=event.task_number)
                             .select_related("creator", "superseded_by", "space"), timezone.now()).first()
    shown = as_task(task.space, TaskSerializer(task).data, history_length=0)
    if shown.status.state in TERMINAL:
        update = pb.StreamResponse(task=shown)
    else:
        spaces = json_format.MessageToDict(shown.metadata).get("spaces", {})
        update = pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
            task_id=shown.id, context_id=shown.context_id, status=shown.status,
            metadata=struct({"spaces": {**spaces, "event": event.type}})))
    return json.dumps(json_format.MessageToDict(update), separators=(",", ":"))


formats.register(FORMAT, body)
