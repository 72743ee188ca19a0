"""``POST …/bind`` (SPEC §4.3) and steward holds (§5.2)."""
from __future__ import annotations

from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from allocation import services
from allocation.models import TASK_DELIVERY_MODE_CHOICES
from spaces.api.serializers import StrictCharField, StrictInputSerializer
from spaces.api.views import SpaceView
from spaces.catalog import MAX_TITLE


class BindSerializer(StrictInputSerializer):
    title = StrictCharField(max_length=MAX_TITLE, allow_blank=True, trim_whitespace=False)
    work_item_id = StrictCharField(max_length=32, required=False, allow_null=True)
    delivery_mode = serializers.ChoiceField(choices=TASK_DELIVERY_MODE_CHOICES, default="result")


class BindView(SpaceView):
    serializer_class = BindSerializer

    def post(self, request: Request, slug: str) -> Response:
        data = self.validated(BindSerializer)
        result = services.bind_title(space=self.space, **data)
        return Response(result.as_dict())


class HoldSerializer(StrictInputSerializer):
    work_item_id = StrictCharField(max_length=32)
    reason = StrictCharField(max_length=500, required=False, allow_blank=True, default="")
