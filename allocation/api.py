"""``POST …/bind`` (SPEC §4.3) and steward holds (§5.2)."""
from __future__ import annotations

from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from allocation import services
from allocation.models import TASK_DELIVERY_MODE_CHOICES
from spaces.api.serializers import StrictCharField
from spaces.api.views import SpaceView
from spaces.catalog import MAX_TITLE
from spaces.models import Role


class BindSerializer(serializers.Serializer):
    title = StrictCharField(max_length=MAX_TITLE, allow_blank=True, trim_whitespace=False)
    work_item_id = StrictCharField(max_length=32, required=False, allow_null=True)
    delivery_mode = serializers.ChoiceField(choices=TASK_DELIVERY_MODE_CHOICES, default="result")


class BindView(SpaceView):
    serializer_class = BindSerializer

    def post(self, request: Request, slug: str) -> Response:
        data = self.validated(BindSerializer)
        result = services.bind_title(space=self.space, **data)
        return Response(result.as_dict())


class HoldSerializer(serializers.Serializer):
    work_item_id = StrictCharField(max_length=32)
    reason = StrictCharField(max_length=500, required=False, allow_blank=True, default="")


def hold_body(hold) -> dict:
    return {"work_item_id": hold.work_item_id, "reason": hold.reason, "held_by": hold.held_by_id,
            "created_at": hold.created_at}


class HoldListView(SpaceView):
    serializer_class = HoldSerializer
    required_roles = {"POST": Role.STEWARD}

    def get(self, request: Request, slug: str) -> Response:
        from allocation.models import SlotHold

        return Response({"results": [hold_body(h) for h in SlotHold.objects.filter(space=self.space).order_by("pk")]})

    def post(self, request: Request, slug: str) -> Response:
        data = self.validated(HoldSerializer)
        hold = services.hold_slot(space=self.space, actor=self.member, **data)
        return Response(hold_body(hold), status=status.HTTP_201_CREATED)


class HoldDetailView(SpaceView):
    serializer_class = HoldSerializer
    required_roles = {"DELETE": Role.STEWARD}

    def delete(self, request: Request, slug: str, work_item_id: str) -> Response:
        if not services.release_slot(space=self.space, work_item_id=work_item_id):
            from common.refusals import NotFound

            raise NotFound(f"Slot {work_item_id} is not held.")
        return Response(status=status.HTTP_204_NO_CONTENT)
