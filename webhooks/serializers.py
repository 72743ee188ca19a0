"""The inputs of the webhook commands (``webhooks.commands``): one serializer each, so every
front refuses a bad input alike."""
from __future__ import annotations

from rest_framework import serializers

from spaces.serializers import StrictInputSerializer


class WebhookCreateSerializer(StrictInputSerializer):
    url = serializers.URLField(max_length=2000)
    types = serializers.ListField(child=serializers.CharField(max_length=64), required=False, max_length=100)
    description = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class WebhookUpdateSerializer(StrictInputSerializer):
    types = serializers.ListField(child=serializers.CharField(max_length=64), required=False, max_length=100)
    description = serializers.CharField(max_length=500, required=False, allow_blank=True)
    enabled = serializers.BooleanField(required=False)
