"""Reads of webhooks the fronts share: an endpoint of a space, and the shapes endpoints and
deliveries are shown in (the REST routes and the commands' replies alike)."""
from __future__ import annotations

from typing import Any

from django.utils import timezone

from common.refusals import NotFound
from spaces.models import Space
from webhooks.models import Delivery, DeliveryState, Endpoint


def get_endpoint(space: Space, endpoint_id: int | None) -> Endpoint:
    endpoint = Endpoint.objects.filter(space=space, pk=endpoint_id).first() if endpoint_id else None
    if endpoint is None:
        raise NotFound(f"No webhook {endpoint_id} in this space.")
    return endpoint


def endpoint_answer(endpoint: Endpoint) -> dict[str, Any]:
    return {
        "id": endpoint.pk, "url": endpoint.url, "types": endpoint.types, "description": endpoint.description,
        "enabled": endpoint.enabled, "disabled_reason": endpoint.disabled_reason or None,
        "task": endpoint.task_number, "format": endpoint.format,
        "failing_since": endpoint.failing_since, "created_at": endpoint.created_at,
        "previous_secret_until": (endpoint.previous_secret_until
                                  if endpoint.previous_secret_until and endpoint.previous_secret_until > timezone.now()
                                  else None),
    }


def delivery_answer(delivery: Delivery) -> dict[str, Any]:
    return {
        "id": delivery.pk, "webhook": delivery.endpoint_id, "event_id": delivery.event_id, "seq": delivery.seq,
        "type": delivery.type, "state": delivery.state, "attempts": delivery.attempts,
        "next_at": delivery.next_at if delivery.state == DeliveryState.PENDING else None,
        "created_at": delivery.created_at, "finished_at": delivery.finished_at,
        "tries": [{"at": t.at, "status_code": t.status_code, "latency_ms": t.latency_ms, "answer": t.answer,
                   "error": t.error or None} for t in sorted(delivery.tries.all(), key=lambda t: t.pk)],
    }
