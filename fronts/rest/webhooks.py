"""The routes of webhooks (SPEC §17): a steward registers endpoints, rotates their secrets,
sends a test, reads their deliveries and sends a failed one again."""
from __future__ import annotations

from django.db.models import Prefetch
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from fronts.rest.pagination import IdCursorPagination
from fronts.rest.schema import page_of
from fronts.rest.spaces import CURSOR_PAGING, SpaceView
from spaces.models import Role
from spaces.secrets import SecretAnswer, mark_secret
from spaces.selectors import as_int
from spaces.serializers import StrictInputSerializer
from webhooks import services
from webhooks.models import Delivery, DeliveryAttempt, Endpoint

STEWARD = Role.STEWARD


class WebhookCreateSerializer(StrictInputSerializer):
    url = serializers.URLField(max_length=2000)
    types = serializers.ListField(child=serializers.CharField(max_length=64), required=False, max_length=100)
    description = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class WebhookUpdateSerializer(StrictInputSerializer):
    types = serializers.ListField(child=serializers.CharField(max_length=64), required=False, max_length=100)
    description = serializers.CharField(max_length=500, required=False, allow_blank=True)
    enabled = serializers.BooleanField(required=False)


class NewestFirst(IdCursorPagination):
    ordering = "-id"


def with_secret(response: Response, endpoint: Endpoint) -> Response:
    """An answer carrying the endpoint's secret: shown once; a replay gets a fresh one."""
    return mark_secret(response, SecretAnswer("webhook", ("secret",), {"endpoint": endpoint.pk}))


class WebhookListView(SpaceView):
    required_roles = {"GET": STEWARD, "POST": STEWARD}

    query_parameters = CURSOR_PAGING

    @page_of(None, "Webhook")
    @extend_schema(operation_id="spaces_webhooks_list")
    def get(self, request: Request, slug: str) -> Response:
        paginator = IdCursorPagination()
        page = paginator.paginate_queryset(Endpoint.objects.filter(space=self.space), request, view=self)
        return paginator.get_paginated_response([services.endpoint_answer(e) for e in page])

    @extend_schema(request=WebhookCreateSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str) -> Response:
        endpoint = services.register(space=self.space, actor=self.member, **self.validated(WebhookCreateSerializer))
        body = {**services.endpoint_answer(endpoint), "secret": endpoint.secret}
        return with_secret(Response(body, status=status.HTTP_201_CREATED), endpoint)


class WebhookView(SpaceView):
    """A route under ``…/webhooks/{id}``."""

    def endpoint(self, webhook_id: str) -> Endpoint:
        return services.get_endpoint(self.space, as_int(webhook_id))


class WebhookDetailView(WebhookView):
    required_roles = {"GET": STEWARD, "PATCH": STEWARD, "DELETE": STEWARD}

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, slug: str, webhook_id: str) -> Response:
        return Response(services.endpoint_answer(self.endpoint(webhook_id)))

    @extend_schema(request=WebhookUpdateSerializer, responses=OpenApiTypes.OBJECT)
    def patch(self, request: Request, slug: str, webhook_id: str) -> Response:
        changes = self.validated(WebhookUpdateSerializer)
        return Response(services.endpoint_answer(services.update(endpoint=self.endpoint(webhook_id), **changes)))

    @extend_schema(request=None, responses={204: None})
    def delete(self, request: Request, slug: str, webhook_id: str) -> Response:
        self.no_input()
        services.delete(endpoint=self.endpoint(webhook_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookRotateView(WebhookView):
    required_roles = {"POST": STEWARD}

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, slug: str, webhook_id: str) -> Response:
        self.no_input()
        endpoint = services.rotate_secret(endpoint=self.endpoint(webhook_id))
        return with_secret(Response({**services.endpoint_answer(endpoint), "secret": endpoint.secret}), endpoint)


class WebhookTestView(WebhookView):
    required_roles = {"POST": STEWARD}

    @extend_schema(request=None, responses={202: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str, webhook_id: str) -> Response:
        self.no_input()
        delivery = services.send_test(endpoint=self.endpoint(webhook_id), actor=self.member)
        return Response(services.delivery_answer(delivery), status=status.HTTP_202_ACCEPTED)


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
        return paginator.get_paginated_response([services.delivery_answer(d) for d in page])


class DeliveryRetryView(WebhookView):
    required_roles = {"POST": STEWARD}

    @extend_schema(request=None, responses={202: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str, webhook_id: str, delivery_id: str) -> Response:
        self.no_input()
        delivery = services.retry(endpoint=self.endpoint(webhook_id), delivery_id=as_int(delivery_id))
        return Response(services.delivery_answer(delivery), status=status.HTTP_202_ACCEPTED)
