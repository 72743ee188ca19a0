"""The input of ``POST …/bind`` (SPEC §4.3) and of steward holds (§5.2); their routes are the
tasks app's (``fronts.rest.tasks``), whose commands answer with similar tasks and history."""
from __future__ import annotations

from rest_framework import serializers

from allocation.models import TASK_DELIVERY_MODE_CHOICES
from spaces.serializers import StrictCharField, StrictInputSerializer, WorkItemIdField
from spaces.catalog import MAX_TITLE


class BindSerializer(StrictInputSerializer):
    title = StrictCharField(max_length=MAX_TITLE, allow_blank=True, trim_whitespace=False)
    work_item_id = WorkItemIdField(required=False, allow_null=True)
    delivery_mode = serializers.ChoiceField(choices=TASK_DELIVERY_MODE_CHOICES, default="result")



class HoldSerializer(StrictInputSerializer):
    work_item_id = WorkItemIdField()
    reason = StrictCharField(max_length=500, required=False, allow_blank=True, default="")
