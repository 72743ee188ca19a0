"""Input and output shapes for the spaces routes."""
from __future__ import annotations

import copy
import re

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from spaces.catalog import MAX_ALIASES, MAX_TITLE, WORK_ITEM_ID_PATTERN
from spaces.models import (
    SPACE_SETTINGS, ApiKey, ApprovalRequired, CharterItem, ChecksBy, JoinLink, Member, MemberKind, Post, Role, Space,
)

from tasks.models import LABEL_INPUT_PATTERN, LABEL_PATTERN

MAX_BODY = 64 * 1024  # SPEC §3: a task, post or note body is at most 64 KiB


class StrictInputSerializer(serializers.Serializer):
    """An input serializer that refuses a field it does not know (SPEC §3, strict input): a
    misspelt ``work_item_id`` is a 422 naming it and the fields the route takes, never a
    request quietly read without it."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            taken = sorted(name for name, field in self.fields.items() if not field.read_only)
            unknown = sorted(str(name) for name in data if name not in self.fields or self.fields[name].read_only)
            if unknown:
                message = f"Unknown field; this route takes: {', '.join(taken) or 'no fields'}."
                raise serializers.ValidationError({name: [message] for name in unknown})
            mistyped = {name: [message] for name, value in data.items()
                        if (message := json_type_error(self.fields[name], value))}
            if mistyped:
                raise serializers.ValidationError(mistyped)
        return super().to_internal_value(data)


NUMBER_FIELDS = (serializers.IntegerField, serializers.FloatField, serializers.DecimalField)


def json_type_error(field: serializers.Field, value) -> str | None:
    """SPEC §3: a number is a JSON number and a boolean a JSON boolean. DRF reads ``"1"`` as 1 and
    ``"true"`` as True; an input that names its types refuses them (a list's items alike)."""
    if value is None:
        return None
    if isinstance(field, serializers.ListField) and isinstance(value, list):
        return next((error for item in value if (error := json_type_error(field.child, item))), None)
    if isinstance(field, serializers.BooleanField) and not isinstance(value, bool):
        return "Must be true or false (a JSON boolean)."
    if isinstance(field, NUMBER_FIELDS) and (isinstance(value, bool) or not isinstance(value, (int, float))):
        return "Must be a number (a JSON number, not a string)."
    return None


class NoInputSerializer(StrictInputSerializer):
    """The input of a route that takes none: no body, ``null`` or ``{}``. Any field is a 422
    naming it, as on the routes that take some (an agent that sends ``{"reason": …}`` to a route
    that keeps no reason learns so), and a body that is not an object is one too."""


class FlatInputSerializer(StrictInputSerializer):
    """An input serializer whose fields are all plain values (strings, numbers, booleans, choices).

    DRF binds a fresh copy of the declared fields to every serializer it builds, by deep
    copy, which rebuilds each field from its arguments; on the busiest routes that cost
    more than their SQL. A flat field keeps no per-instance state besides what ``bind``
    sets, so a shallow copy binds it just as well. Not for nested or list fields.
    """

    NESTED = (serializers.ListField, serializers.DictField, serializers.BaseSerializer)

    def get_fields(self) -> dict:
        fields = {name: copy.copy(field) for name, field in self._declared_fields.items()}
        nested = [name for name, field in fields.items() if isinstance(field, self.NESTED)]
        assert not nested, f"{type(self).__name__}: {nested} are not flat fields"
        return fields


class StrictCharField(serializers.CharField):
    """A string field that refuses numbers and booleans instead of quietly converting them, and
    text that is not valid Unicode (a lone surrogate); ``max_bytes`` limits its UTF-8 length
    (SPEC §3 counts bodies in bytes)."""

    default_error_messages = {
        "invalid": "Must be a string.",
        "surrogate": "Must be valid Unicode text (it holds a lone surrogate).",
        "max_bytes": "Ensure this field has no more than {max_bytes} bytes in UTF-8.",
    }

    def __init__(self, *, max_bytes: int | None = None, **kwargs) -> None:
        self.max_bytes = max_bytes
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        value = super().to_internal_value(data)
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError:
            self.fail("surrogate")
        if self.max_bytes is not None and size > self.max_bytes:
            self.fail("max_bytes", max_bytes=self.max_bytes)
        return value


class WorkItemIdField(StrictCharField):
    """A slot id as every input takes it (SPEC §4.3.1: ``t02`` is ``T2``); /v1/schema gives its
    form (``schema_pattern``, read by ``fronts.rest.schema``)."""

    schema_pattern = WORK_ITEM_ID_PATTERN

    def __init__(self, **kwargs) -> None:
        # Trimmed by normalize_work_item_id, not before the length is checked: the 32 are as sent.
        super().__init__(max_length=32, trim_whitespace=False, **kwargs)


MAX_LABEL_CAPS = 50


@extend_schema_field({"type": "object", "maxProperties": MAX_LABEL_CAPS,
                     "propertyNames": {"pattern": LABEL_INPUT_PATTERN},
                     "additionalProperties": {"type": "integer", "minimum": 1, "maximum": 10000}})
class LabelCapsField(serializers.Field):
    """SPEC §22 ``label_caps``: ``{"label": N}``, at most N live claims on tasks carrying the
    label; ``{}`` caps nothing. Labels are lower-cased as everywhere."""

    default_error_messages = {
        "invalid": "Must be an object of label: most live claims (an integer from 1 to 10000).",
        "label": "Each label is 1-40 characters of a-z, 0-9, '.', '_', ':' or '-'.",
        "too_many": f"At most {MAX_LABEL_CAPS} labels.",
    }
    pattern = re.compile(LABEL_PATTERN)

    def to_internal_value(self, data) -> dict[str, int]:
        if not isinstance(data, dict) or any(type(n) is not int or not 1 <= n <= 10000 for n in data.values()):
            self.fail("invalid")
        if any(not self.pattern.fullmatch(str(label).lower()) for label in data):
            self.fail("label")
        if len(data) > MAX_LABEL_CAPS:
            self.fail("too_many")
        return {str(label).lower(): n for label, n in sorted(data.items())}

    def to_representation(self, value) -> dict[str, int]:
        return dict(value)


class SpaceSerializer(serializers.ModelSerializer):
    budget_usd = serializers.FloatField(allow_null=True, read_only=True)  # a JSON number (SPEC §3)
    label_caps = LabelCapsField(read_only=True)

    class Meta:
        model = Space
        fields = ["slug", *SPACE_SETTINGS, "created_at"]
        read_only_fields = ["slug", "created_at"]


class SpaceUpdateSerializer(StrictInputSerializer):
    name = StrictCharField(max_length=200, required=False)
    task_claim_hours = serializers.IntegerField(min_value=1, max_value=24, required=False)
    claim_lease_seconds = serializers.IntegerField(min_value=10, max_value=3600, required=False, allow_null=True)
    confirmations_required = serializers.IntegerField(min_value=0, max_value=100, required=False)
    allocation_window_seconds = serializers.IntegerField(min_value=1, max_value=3600, required=False)
    max_claims_per_task = serializers.IntegerField(min_value=1, max_value=3, required=False)
    max_attempts_per_cycle = serializers.IntegerField(min_value=1, max_value=5, required=False)
    requests_per_minute = serializers.IntegerField(min_value=1, max_value=1_000_000, required=False, allow_null=True)
    similar_threshold = serializers.FloatField(min_value=0.05, max_value=1.0, required=False)
    max_queued_exports = serializers.IntegerField(min_value=1, max_value=20, required=False)
    max_waits_per_key = serializers.IntegerField(min_value=1, max_value=100, required=False)
    event_retention_days = serializers.IntegerField(min_value=1, max_value=365, required=False)
    budget_usd = serializers.DecimalField(max_digits=14, decimal_places=6, min_value=0, required=False,
                                          allow_null=True, coerce_to_string=False)  # SPEC §19
    approval_required = serializers.ChoiceField(choices=ApprovalRequired.choices, required=False)  # SPEC §21
    checks_by = serializers.ChoiceField(choices=ChecksBy.choices, required=False)  # SPEC §21
    # SPEC §22: fleet controls (null: off).
    max_claims_per_member = serializers.IntegerField(min_value=1, max_value=1000, required=False, allow_null=True)
    label_caps = LabelCapsField(required=False, allow_null=True)  # null: {} (no caps)
    priority_aging_minutes = serializers.IntegerField(min_value=1, max_value=43200, required=False, allow_null=True)
    max_cycles = serializers.IntegerField(min_value=1, max_value=100, required=False, allow_null=True)

    def validate_label_caps(self, value: dict | None) -> dict:
        return value or {}


class KeySerializer(serializers.ModelSerializer):
    class Meta:
        model = ApiKey
        fields = ["prefix", "generation", "created_at", "expires_at", "revoked_at", "last_used_at"]


class MemberSerializer(serializers.ModelSerializer):
    keys = KeySerializer(source="api_keys", many=True, read_only=True)

    class Meta:
        model = Member
        fields = ["id", "name", "role", "kind", "created_at", "keys"]


class MemberRoleSerializer(StrictInputSerializer):
    """``PATCH …/members/{id}``: its role, or whether it is an agent or a person (SPEC §21), or both."""

    role = serializers.ChoiceField(choices=Role.choices, required=False)
    kind = serializers.ChoiceField(choices=MemberKind.choices, required=False)

    def validate(self, attrs: dict) -> dict:
        if not attrs:
            raise serializers.ValidationError({"role": ["Give role, kind or both."]})
        return attrs


def future(value):
    """SPEC §3: an expiry already past is refused (a key or link would be born dead)."""
    if value is not None and value <= timezone.now():
        raise serializers.ValidationError("Must be in the future.")
    return value


class IssueKeySerializer(StrictInputSerializer):
    expires_at = serializers.DateTimeField(required=False, allow_null=True, validators=[future])


class JoinLinkCreateSerializer(StrictInputSerializer):
    role = serializers.ChoiceField(choices=Role.choices)
    expires_at = serializers.DateTimeField(required=False, allow_null=True, validators=[future])
    max_uses = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=1_000_000)


class JoinLinkSerializer(serializers.ModelSerializer):
    class Meta:
        model = JoinLink
        fields = ["id", "role", "expires_at", "max_uses", "uses", "created_at"]


class JoinSerializer(StrictInputSerializer):
    link = StrictCharField(max_length=2000)
    name = StrictCharField(max_length=100, required=False)


class CharterItemSerializer(serializers.ModelSerializer):
    class Meta:
        model = CharterItem
        fields = ["work_item_id", "canonical_title", "aliases", "updated_at"]


class CharterUpsertSerializer(StrictInputSerializer):
    canonical_title = StrictCharField(max_length=MAX_TITLE)
    aliases = serializers.ListField(
        child=StrictCharField(max_length=MAX_TITLE), max_length=MAX_ALIASES, required=False, default=list
    )


class AuthorSerializer(serializers.Serializer):
    # Plain serializers on hot paths: ModelSerializer rebuilds its fields from the model
    # on every instance, which costs more than the rest of a `next` request's Python.
    id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(read_only=True)


class PostSerializer(serializers.ModelSerializer):
    author = AuthorSerializer(read_only=True)
    hidden = serializers.SerializerMethodField()
    withheld = serializers.SerializerMethodField()

    class Meta:
        model = Post
        fields = ["id", "author", "title", "body", "created_at", "hidden", "withheld"]

    def get_hidden(self, post: Post) -> bool:
        return post.hidden_at is not None

    def get_withheld(self, post: Post) -> bool:
        return post.withheld_at is not None


class PostCreateSerializer(StrictInputSerializer):
    title = StrictCharField(max_length=MAX_TITLE, required=False, allow_blank=True, default="")
    body = StrictCharField(max_bytes=MAX_BODY)
