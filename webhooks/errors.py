"""The refusals of webhooks (SPEC §17)."""
from __future__ import annotations

from common.refusals import DomainError


class DeliveryNotFailed(DomainError):
    code = "delivery_not_failed"
    http_status = 409
    title = "Delivery not failed"
    meaning = ("Only a failed delivery is sent again by hand; a pending one is retried by the worker on its "
               "schedule, a delivered one was received.")


class EndpointDisabled(DomainError):
    code = "endpoint_disabled"
    http_status = 409
    title = "Endpoint disabled"
    meaning = "The endpoint is disabled: enable it (PATCH {\"enabled\": true}) before sending it a test or a retry."
