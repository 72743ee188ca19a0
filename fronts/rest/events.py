"""``GET /v1/spaces/{slug}/events`` (SPEC §17): the space's feed, for any member, as JSON
(waited for with ``?wait=``) or, asked with ``Accept: text/event-stream``, as a stream."""
from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from events import feed
from fronts import feed as feed_http
from fronts.rest.spaces import SpaceView
from tasks.waiting import REGISTRY


class EventStreamRenderer(BaseRenderer):
    """Lets ``Accept: text/event-stream`` through content negotiation; the stream itself is a
    StreamingHttpResponse (a refusal before it starts is still JSON)."""

    media_type = "text/event-stream"
    format = "sse"

    def render(self, data, accepted_media_type=None, renderer_context=None):  # a refusal's body
        return JSONRenderer().render(data)


class EventListView(SpaceView):
    query_parameters = feed_http.PARAMETERS
    query_schemas = feed_http.PARAMETER_SCHEMAS
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(operation_id="events_list", responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, slug: str):
        if request.accepted_renderer.media_type == EventStreamRenderer.media_type:
            lines = feed_http.stream(space_id=self.space.pk, params=request.query_params,
                                last_event_id=request.headers.get("Last-Event-ID"),
                                wait_for=REGISTRY.wait_for_event)
            response = StreamingHttpResponse(lines, content_type="text/event-stream")
            response["Cache-Control"] = "no-cache"
            response["X-Accel-Buffering"] = "no"  # a proxy in front passes each event on at once
            return response
        return Response(feed.answer(space_id=self.space.pk, asked=feed_http.question(request.query_params),
                                    wait_for=REGISTRY.wait_for_event))
