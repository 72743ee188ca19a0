"""Registering and managing a space's webhook endpoints (SPEC §17): the commands every front
calls. Sending is ``webhooks.delivery``'s."""
from __future__ import annotations

import base64
import json
import secrets
import uuid
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.utils import timezone

from common.refusals import InvalidRequest, NotFound
from events import feed
from events.models import FeedCounter
from spaces.models import Member, Space
from spaces.secrets import reissuer
from tasks.history import feed_types
from webhooks import addresses, errors
from webhooks.models import DELIVERY_LIFETIME, ROTATION_OVERLAP, Delivery, DeliveryState, Endpoint

TEST_TYPE = "webhook.test"


def new_secret() -> str:
    """A Standard Webhooks signing secret: ``whsec_`` and 32 random bytes in base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def checked_url(url: str) -> str:
    try:
        addresses.check_endpoint_url(url)
    except addresses.AddressRefused as refused:
        raise InvalidRequest("Bad url.", fields={"url": [str(refused)]}) from None
    return url


def checked_types(types: list[str] | None) -> list[str]:
    known = set(feed_types())
    unknown = sorted(set(types or ()) - known)
    if unknown:
        raise InvalidRequest("Unknown event types.", fields={"types": [
            f"Unknown: {', '.join(unknown)}. GET /v1/reference?section=events lists the types."]})
    return sorted(set(types or ()))


def register(*, space: Space, actor: Member, url: str, types: list[str] | None = None,
             description: str = "") -> Endpoint:
    """A new endpoint, taking the space's events from now on, with a fresh secret."""
    last_seq = FeedCounter.objects.filter(space=space).values_list("last_seq", flat=True).first() or 0
    return Endpoint.objects.create(space=space, url=checked_url(url), types=checked_types(types),
                                   description=description, secret=new_secret(), cursor=last_seq,
                                   created_by=actor)


def update(*, endpoint: Endpoint, **changes: Any) -> Endpoint:
    """PATCH: ``types``, ``description``, ``enabled`` (enabling clears the failure streak: its
    waiting deliveries go again, in order)."""
    fields = []  # only these: the worker moves the cursor and the lease meanwhile
    if "types" in changes:
        endpoint.types = checked_types(changes["types"])
        fields.append("types")
    if "description" in changes:
        endpoint.description = changes["description"]
        fields.append("description")
    if "enabled" in changes and changes["enabled"] != endpoint.enabled:
        endpoint.enabled = changes["enabled"]
        endpoint.disabled_reason = "" if endpoint.enabled else "disabled by a steward"
        endpoint.failing_since = None
        fields += ["enabled", "disabled_reason", "failing_since"]
    if fields:
        endpoint.save(update_fields=fields)
    if endpoint.enabled:
        wake(endpoint.space_id)
    return endpoint


def delete(*, endpoint: Endpoint) -> None:
    endpoint.delete()


def rotate_secret(*, endpoint: Endpoint) -> Endpoint:
    """A new secret; the one it replaces keeps signing beside it for ROTATION_OVERLAP."""
    endpoint.previous_secret, endpoint.secret = endpoint.secret, new_secret()
    endpoint.previous_secret_until = timezone.now() + ROTATION_OVERLAP
    endpoint.save(update_fields=["secret", "previous_secret", "previous_secret_until"])
    return endpoint


@reissuer("webhook")
def reissue_secret(ref: dict) -> tuple[dict, dict]:
    """A replayed registration or rotation: a fresh secret for the same endpoint; the one the
    lost answer carried stops signing (the older one's overlap is kept)."""
    endpoint = Endpoint.objects.get(pk=ref["endpoint"])
    endpoint.secret = new_secret()
    endpoint.save(update_fields=["secret"])
    return {"secret": endpoint.secret}, ref


def send_test(*, endpoint: Endpoint, actor: Member) -> Delivery:
    """A ``webhook.test`` event for this endpoint alone, after what it waits for already."""
    if not endpoint.enabled:
        raise errors.EndpointDisabled(f"Webhook {endpoint.pk} is disabled.")
    now = timezone.now()
    event = {"id": f"evt_test_{uuid.uuid4().hex}", "seq": None, "type": TEST_TYPE, "at": now,
             "actor": {"id": actor.pk, "name": actor.name}, "task": None, "data": {"webhook": endpoint.pk}}
    delivery = Delivery.objects.create(space_id=endpoint.space_id, endpoint=endpoint, event_id=event["id"],
                                       type=TEST_TYPE, body=as_body(event), give_up_at=now + DELIVERY_LIFETIME)
    wake(endpoint.space_id)
    return delivery


def retry(*, endpoint: Endpoint, delivery_id: int | None) -> Delivery:
    """A failed delivery, pending again (same ``webhook-id``, same body) for another 24 h."""
    delivery = Delivery.objects.filter(endpoint=endpoint, pk=delivery_id).first() if delivery_id else None
    if delivery is None:
        raise NotFound(f"No delivery {delivery_id} of webhook {endpoint.pk}.")
    if delivery.state != DeliveryState.FAILED:
        raise errors.DeliveryNotFailed(f"Delivery {delivery.pk} is {delivery.state}.")
    if not endpoint.enabled:
        raise errors.EndpointDisabled(f"Webhook {endpoint.pk} is disabled.")
    now = timezone.now()
    delivery.state, delivery.next_at, delivery.finished_at = DeliveryState.PENDING, now, None
    delivery.give_up_at = now + DELIVERY_LIFETIME
    delivery.save(update_fields=["state", "next_at", "finished_at", "give_up_at"])
    wake(endpoint.space_id)
    return delivery


def as_body(event: dict[str, Any]) -> str:
    return json.dumps(event, cls=DjangoJSONEncoder, ensure_ascii=False, separators=(",", ":"))


def wake(space_id: int) -> None:
    """Tell the delivery workers there is something to send (with the feed's own notification,
    at commit)."""
    feed.wake_followers(space_id)
