"""The routes of webhooks (SPEC §17): a steward registers endpoints, rotates their secrets,
sends a test, reads their deliveries and sends a failed one again."""
from __future__ import annotations

from django.db.models import Prefetch
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from fronts.rest.pagination import IdCursorPagination
from fronts.rest.schema import page_of
from fronts.rest.spaces import CURSOR_PAGING, SpaceView
from spaces.models import Role
from webhooks import commands
from spaces.selectors import as_int
from webhooks.selectors import delivery_answer, endpoint_answer, get_endpoint
from webhooks.models import Delivery, DeliveryAttempt, Endpoint
from webhooks.serializers import WebhookCreateSerializer, WebhookUpdateSerializer

STEWARD = Role.STEWARD


class NewestFirst(IdCursorPagination):
    ordering = "-id"


class WebhookListView(SpaceView):
    required_roles = {"GET": STEWARD, "POST": STEWARD}

    query_parameters = CURSOR_PAGING

    @page_of(None, "Webhook")
    @extend_schema(operation_id="spaces_webhooks_list")
    def get(self, request: Request, slug: str) -> Response:
        paginator = IdCursorPagination()
        page = paginator.paginate_queryset(Endpoint.objects.filter(space=self.space), request, view=self)
        return paginator.get_paginated_response([endpoint_answer(e) for e in page])

    @extend_schema(request=WebhookCreateSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str) -> Response:
        return self.run(commands.REGISTER)


class WebhookView(SpaceView):
    """A route under ``…/webhooks/{id}``."""

    def endpoint(self, webhook_id: str) -> Endpoint:
        return get_endpoint(self.space, as_int(webhook_id))  # a read: the commands look it up alike


class WebhookDetailView(WebhookView):
    required_roles = {"GET": STEWARD, "PATCH": STEWARD, "DELETE": STEWARD}

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, slug: str, webhook_id: str) -> Response:
        return Response(endpoint_answer(self.endpoint(webhook_id)))

    @extend_schema(request=WebhookUpdateSerializer, responses=OpenApiTypes.OBJECT)
    def patch(self, request: Request, slug: str, webhook_id: str) -> Response:
        return self.run(commands.UPDATE, webhook_id=webhook_id)

    @extend_schema(request=None, responses={204: None})
    def delete(self, request: Request, slug: str, webhook_id: str) -> Response:
        return self.run(commands.DELETE, webhook_id=webhook_id)


class WebhookRotateView(WebhookView):
    required_roles = {"POST": STEWARD}

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, slug: str, webhook_id: str) -> Response:
        return self.run(commands.ROTATE_SECRET, webhook_id=webhook_id)


class WebhookTestView(WebhookView):
    required_roles = {"POST": STEWARD}

    @extend_schema(request=None, responses={202: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str, webhook_id: str) -> Response:
        return self.run(commands.SEND_TEST, webhook_id=webhook_id)


class DeliveryListView(WebhookView):
    required_roles = {"GET": STEWARD}

    query_parameters = CURSOR_PAGING

    @page_of(None, "Delivery")
    @extend_schema(operation_id="spaces_webhooks_deliveries_list")
    def get(self, request: Request, slug: str, webhook_id: str) -> Response:
        deliveries = Delivery.objects.filter(endpoint=self.endpoint(webhook_id)).prefetch_related(
            Prefetch("tries", queryset=DeliveryAttempt.objects.order_by("id")))
        paginator = NewestFirst()
        page = paginator.paginate_queryset(deliveries, request, view=self)
        return paginator.get_paginated_response([delivery_answer(d) for d in page])


class DeliveryRetryView(WebhookView):
    required_roles = {"POST": STEWARD}

    @extend_schema(request=None, responses={202: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str, webhook_id: str, delivery_id: str) -> Response:
        return self.run(commands.RETRY_DELIVERY, webhook_id=webhook_id, delivery_id=delivery_id)
