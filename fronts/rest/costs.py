"""``GET /v1/spaces/{slug}/costs`` (SPEC §19): what the space spent, per group, over a period."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from costs import commands
from fronts.rest.spaces import SpaceView


class CostsView(SpaceView):
    query_parameters = frozenset({"since", "until", "group_by"})

    @extend_schema(responses=OpenApiTypes.OBJECT, parameters=[
        OpenApiParameter("since", OpenApiTypes.DATETIME), OpenApiParameter("until", OpenApiTypes.DATETIME),
        OpenApiParameter("group_by", str, enum=["member", "label", "model", "work_item_id"])])
    def get(self, request: Request, slug: str) -> Response:
        reply = commands.space_costs(self.member, unit=None, data=dict(request.query_params.items()))
        return Response(reply.body, status=reply.status)
