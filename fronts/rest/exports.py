"""The routes of exports (SPEC §7.3): start, read and retry an export, share it, and the share
link that streams it (open to anyone with its token)."""
from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from exports import commands, selectors
from exports.commands import ShareSerializer
from fronts.rest.spaces import ApiView, SpaceView
from spaces.models import Role


class ExportListView(SpaceView):
    required_roles = {"POST": Role.STEWARD}

    @extend_schema(request=None, responses={202: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str) -> Response:
        return self.run(commands.REQUEST, api_key=request.auth)


class ExportDetailView(SpaceView):
    required_roles = {"GET": Role.STEWARD}

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, slug: str, export_id: str) -> Response:
        return Response(selectors.export_state(selectors.get_export(self.member, export_id)))


class ExportShareView(SpaceView):
    serializer_class = ShareSerializer
    required_roles = {"POST": Role.STEWARD, "DELETE": Role.STEWARD}

    @extend_schema(request=ShareSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str, export_id: str) -> Response:
        return self.run(commands.SHARE, export_id=export_id, base=request.build_absolute_uri("/v1/shares/"))

    @extend_schema(request=None, responses={204: None})
    def delete(self, request: Request, slug: str, export_id: str) -> Response:
        return self.run(commands.UNSHARE, export_id=export_id)


class SharedExportView(ApiView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    query_parameters = frozenset()

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, token: str) -> StreamingHttpResponse:
        # Streamed from the stored chunks: a million-task export is never held whole in memory.
        return StreamingHttpResponse(selectors.shared_export(token=token), content_type="application/json")


class ExportRetryView(SpaceView):
    """``POST …/exports/{id}/retry`` (SPEC §7.3): a failed export is retryable again."""

    required_roles = {"POST": Role.STEWARD}

    @extend_schema(request=None, responses={202: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str, export_id: str) -> Response:
        return self.run(commands.RETRY, export_id=export_id)
