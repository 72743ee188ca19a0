"""The routes of exports (SPEC §7.3): start, read and retry an export, share it, and the share
link that streams it (open to anyone with its token)."""
from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from common.refusals import NotFound
from exports import services
from exports.models import Export
from spaces.serializers import FlatInputSerializer
from fronts.rest.spaces import ApiView, SpaceView
from spaces.models import Role
from spaces.secrets import SecretAnswer, mark_secret, reissuer
from spaces.selectors import as_int


class ShareSerializer(FlatInputSerializer):
    expires_in_hours = serializers.IntegerField(min_value=1, max_value=24 * 365, required=False, default=7 * 24)


class ExportListView(SpaceView):
    required_roles = {"POST": Role.STEWARD}

    @extend_schema(request=None, responses={202: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str) -> Response:
        self.no_input()
        export = services.request_export(space=self.space, actor=self.member, api_key=request.auth)
        return Response(services.export_state(export), status=status.HTTP_202_ACCEPTED)


def get_export(space, export_id):
    export = Export.objects.filter(space=space, pk=as_int(export_id)).first()
    if export is None:
        raise NotFound(f"No export {export_id} in this space.")
    return export


class ExportDetailView(SpaceView):
    required_roles = {"GET": Role.STEWARD}

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, slug: str, export_id: str) -> Response:
        return Response(services.export_state(get_export(self.space, export_id)))


class ExportShareView(SpaceView):
    serializer_class = ShareSerializer
    required_roles = {"POST": Role.STEWARD, "DELETE": Role.STEWARD}

    @extend_schema(request=ShareSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str, export_id: str) -> Response:
        export = get_export(self.space, export_id)
        hours = self.validated(ShareSerializer)["expires_in_hours"]
        token = services.share_export(export=export, expires_in_hours=hours)
        base = request.build_absolute_uri("/v1/shares/")
        return mark_secret(Response(share_body(base, token), status=status.HTTP_201_CREATED),
                           SecretAnswer("share", ("token", "url"),
                                        {"export": export.pk, "base": base, "hours": hours}))

    @extend_schema(request=None, responses={204: None})
    def delete(self, request: Request, slug: str, export_id: str) -> Response:
        self.no_input()
        if not services.unshare_export(export=get_export(self.space, export_id)):
            raise NotFound(f"Export {export_id} is not shared.")
        return Response(status=status.HTTP_204_NO_CONTENT)


def share_body(base: str, token: str) -> dict:
    return {"token": token, "url": base + token}


@reissuer("share")
def reissue_share(ref: dict) -> tuple[dict, dict]:
    """A replayed share: a fresh token for the same export; the lost answer's token stops opening it."""
    token = services.share_export(export=Export.objects.get(pk=ref["export"]), expires_in_hours=ref["hours"])
    return share_body(ref["base"], token), ref


class SharedExportView(ApiView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    query_parameters = frozenset()

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, token: str) -> StreamingHttpResponse:
        # Streamed from the stored chunks: a million-task export is never held whole in memory.
        return StreamingHttpResponse(services.shared_export(token=token), content_type="application/json")


class ExportRetryView(SpaceView):
    """``POST …/exports/{id}/retry`` (SPEC §7.3): a failed export is retryable again."""

    required_roles = {"POST": Role.STEWARD}

    @extend_schema(request=None, responses={202: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str, export_id: str) -> Response:
        self.no_input()
        export = services.retry_export(export=get_export(self.space, export_id))
        return Response(services.export_state(export), status=status.HTTP_202_ACCEPTED)
