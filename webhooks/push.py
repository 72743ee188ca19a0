"""A2A push notification configs (SPEC §18): endpoints of one task's events, registered by the
requester that follows the task, delivered by the same worker, retries, order and address checks
as every webhook (``webhooks.delivery``), with the body its ``format`` renders."""
from __future__ import annotations

import uuid

from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from common.refusals import InvalidRequest, NotFound
from events.models import FeedCounter
from spaces.models import ROLE_RANK, Member, Role, Space
from webhooks import addresses
from webhooks.models import Endpoint
from webhooks.services import checked_url, new_secret, wake


def pushes(*, space: Space, task_number: int, member: Member) -> QuerySet[Endpoint]:
    """The task's push configs ``member`` may see: its own, or every one for a steward (a config
    carries its requester's token and credentials)."""
    found = Endpoint.objects.filter(space=space, task_number=task_number).order_by("id")
    if ROLE_RANK[member.role] < ROLE_RANK[Role.STEWARD]:
        found = found.filter(created_by=member)
    return found


def get_push(*, space: Space, task_number: int, push_id: str, member: Member) -> Endpoint:
    endpoint = pushes(space=space, task_number=task_number, member=member).filter(push_id=push_id).first()
    if endpoint is None:
        raise NotFound(f"No push notification config {push_id!r} of task {task_number}.")
    return endpoint


def check_push(*, url: str, token: str, authorization: str) -> None:
    """What a config must be to be sent at all: its URL a webhook's, its token and credentials
    values an HTTP header can carry (``InvalidRequest`` naming the field)."""
    checked_url(url)
    for field, value in (("token", token), ("authentication", authorization)):
        if value and not addresses.check_header_value(value):
            raise InvalidRequest(f"Bad {field}.", fields={field: [
                "Must be visible ASCII (spaces inside only): it is sent as an HTTP header's value."]})


def register_push(*, space: Space, actor: Member, task_number: int, url: str, push_id: str, token: str,
                  authorization: str, format: str) -> Endpoint:
    """The task's config ``push_id`` (a new id when empty), to ``url``: created, taking the task's
    events from now on, or, when the caller already has one of that id, changed to this."""
    push_id = push_id or uuid.uuid4().hex[:16]
    check_push(url=url, token=token, authorization=authorization)
    changes = {"url": url, "push_token": token, "push_authorization": authorization, "format": format,
               "enabled": True, "disabled_reason": ""}
    mine = pushes(space=space, task_number=task_number, member=actor).select_for_update().filter(push_id=push_id)
    endpoint = mine.first()
    if endpoint is None:
        last_seq = FeedCounter.objects.filter(space=space).values_list("last_seq", flat=True).first() or 0
        try:
            with transaction.atomic():  # another request registering the same id: the index decides
                endpoint = Endpoint.objects.create(space=space, task_number=task_number, push_id=push_id,
                                                   secret=new_secret(), cursor=last_seq, created_by=actor, **changes)
        except IntegrityError:
            raise InvalidRequest("Bad id.", fields={"id": [f"Task {task_number} has another requester's config "
                                                           f"{push_id!r}; choose another id."]}) from None
    else:
        for name, value in changes.items():
            setattr(endpoint, name, value)
        endpoint.save(update_fields=list(changes))
    wake(space.pk)
    return endpoint


def remove_push(*, space: Space, task_number: int, push_id: str, member: Member) -> None:
    get_push(space=space, task_number=task_number, push_id=push_id, member=member).delete()
