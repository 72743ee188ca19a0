"""The ``cost`` a report carries (SPEC §19), validated strictly (SPEC §3)."""
from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from spaces.serializers import StrictCharField, StrictInputSerializer

MAX_USD = Decimal(1000)  # a report's most


class CostSerializer(StrictInputSerializer):
    usd = serializers.DecimalField(max_digits=10, decimal_places=6, min_value=Decimal(0), max_value=MAX_USD,
                                   required=False, default=Decimal(0), coerce_to_string=False)  # a JSON number
    input_tokens = serializers.IntegerField(min_value=0, max_value=10**15, required=False, default=0)
    output_tokens = serializers.IntegerField(min_value=0, max_value=10**15, required=False, default=0)
    seconds = serializers.FloatField(min_value=0, max_value=10**9, required=False, default=0)
    model = StrictCharField(max_length=100, required=False, allow_blank=True, default="")

    def validate_seconds(self, value: float) -> Decimal:
        return Decimal(str(value)).quantize(Decimal("0.001"), rounding=ROUND_HALF_EVEN)  # kept to the millisecond


@extend_schema_field(CostSerializer)
class CostField(serializers.Field):
    """``cost`` as one flat field (a shallow copy binds it: the busiest routes take it): the
    object, checked by ``CostSerializer``, becomes a ``costs.services.Cost``."""

    default_error_messages = {"invalid": "Must be an object: {{usd, input_tokens, output_tokens, seconds, model}}."}

    def to_internal_value(self, data):
        from costs.services import Cost

        if not isinstance(data, dict):
            self.fail("invalid")
        serializer = CostSerializer(data=data)
        if not serializer.is_valid():
            raise serializers.ValidationError(serializer.errors)
        return Cost(**serializer.validated_data)

    def to_representation(self, value):
        return value


def budget_field(**kwargs) -> serializers.DecimalField:
    """A budget in USD (SPEC §19): a JSON number, at most 6 decimal places; null for none."""
    return serializers.DecimalField(max_digits=14, decimal_places=6, min_value=Decimal(0), allow_null=True,
                                    coerce_to_string=False, **kwargs)
