"""``GET /v1/spaces/{slug}/events`` (SPEC §17): the space's feed, for any member."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from events import feed
from fronts.rest.spaces import SpaceView


class EventListView(SpaceView):
    query_parameters = feed.PARAMETERS

    @extend_schema(operation_id="events_list", responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, slug: str) -> Response:
        return Response(feed.answer(space_id=self.space.pk, params=request.query_params))
