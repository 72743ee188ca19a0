"""The webhook commands (SPEC §17), a steward's: the same from the REST routes, the board and
the admin. A steward's webhooks have no MCP twin, so they are not in ``commands.base.COMMANDS``
(the registry of commands every front walks alike)."""
from __future__ import annotations

from typing import Any

from commands.base import Command, Reply
from spaces.models import Member, Role
from spaces.secrets import SecretAnswer
from spaces.selectors import as_int
from webhooks import selectors, services
from webhooks.models import Endpoint
from webhooks.serializers import WebhookCreateSerializer, WebhookUpdateSerializer


def endpoint_of(member: Member, webhook_id: object) -> Endpoint:
    """The endpoint a command acts on, looked up as the routes' reads look it up."""
    return selectors.get_endpoint(member.space, as_int(webhook_id))


def secret_of(endpoint: Endpoint) -> SecretAnswer:
    """The answer carries the endpoint's signing secret: shown once; a replay gets a fresh one."""
    return SecretAnswer("webhook", ("secret",), {"endpoint": endpoint.pk})


def _register(member: Member, *, unit: Any, **data: Any) -> Reply:
    endpoint = services.register(space=member.space, actor=member, **data)
    return Reply(201, {**selectors.endpoint_answer(endpoint), "secret": endpoint.secret}, secret_of(endpoint))


def _update(member: Member, *, unit: Any, webhook_id: object, **changes: Any) -> Reply:
    return Reply(200, selectors.endpoint_answer(services.update(endpoint=endpoint_of(member, webhook_id), **changes)))


def _delete(member: Member, *, unit: Any, webhook_id: object) -> Reply:
    services.delete(endpoint=endpoint_of(member, webhook_id))
    return Reply(204, None)


def _rotate(member: Member, *, unit: Any, webhook_id: object) -> Reply:
    endpoint = services.rotate_secret(endpoint=endpoint_of(member, webhook_id))
    return Reply(200, {**selectors.endpoint_answer(endpoint), "secret": endpoint.secret}, secret_of(endpoint))


def _send_test(member: Member, *, unit: Any, webhook_id: object) -> Reply:
    delivery = services.send_test(endpoint=endpoint_of(member, webhook_id), actor=member)
    return Reply(202, selectors.delivery_answer(delivery))


def _retry(member: Member, *, unit: Any, webhook_id: object, delivery_id: object) -> Reply:
    delivery = services.retry(endpoint=endpoint_of(member, webhook_id), delivery_id=as_int(delivery_id))
    return Reply(202, selectors.delivery_answer(delivery))


REGISTER = Command("register_webhook", Role.STEWARD, _register, input=WebhookCreateSerializer)
UPDATE = Command("update_webhook", Role.STEWARD, _update, input=WebhookUpdateSerializer)
DELETE = Command("delete_webhook", Role.STEWARD, _delete)
ROTATE_SECRET = Command("rotate_webhook_secret", Role.STEWARD, _rotate)
SEND_TEST = Command("send_test_event", Role.STEWARD, _send_test)
RETRY_DELIVERY = Command("retry_delivery", Role.STEWARD, _retry)
