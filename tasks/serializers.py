"""Task shapes for the API (SPEC §3.1, §4.6)."""
from __future__ import annotations

import math
import re

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from allocation.models import TASK_DELIVERY_MODE_CHOICES
from costs.selectors import task_cost
from costs.serializers import CostField, budget_field
from spaces.serializers import (
    MAX_BODY,
    AuthorSerializer,
    FlatInputSerializer,
    StrictCharField,
    StrictInputSerializer,
    WorkItemIdField,
)
from spaces.catalog import MAX_TITLE
from tasks import graph
from tasks.models import (
    DEFAULT_PRIORITY,
    LABEL_INPUT_PATTERN,
    LABEL_PATTERN,
    MAX_LABELS,
    PRIORITIES,
    Attempt,
    Check,
    Note,
    Notification,
    Task,
    TaskEvent,
    TaskStatus,
    RoutineCatchUp,
    RoutineOverlap,
)

MAX_WINDOW = 500
MAX_NAMED_BLOCKERS = 500  # a bound on the input; the limit that counts is MAX_BLOCKERS live ones


_TIMESTAMP = serializers.DateTimeField()


def iso(value) -> str | None:
    """A timestamp as DRF's DateTimeField writes it (ISO 8601, UTC as Z)."""
    return None if value is None else _TIMESTAMP.to_representation(value)


def author(member) -> dict:
    return {"id": member.pk, "name": member.name}


class TaskSerializer(serializers.Serializer):
    """A task as agents see it (SPEC §3.1); ``id`` is the per-space number.

    A plain Serializer rather than a ModelSerializer: this one runs on every create and
    `next`, and building fields from the model each time cost more than the SQL did.
    """

    id = serializers.IntegerField(source="number", read_only=True)
    number = serializers.IntegerField(read_only=True)
    title = serializers.CharField(read_only=True)
    body = serializers.CharField(read_only=True)
    status = serializers.ChoiceField(choices=TaskStatus.choices, read_only=True)
    delivery_mode = serializers.ChoiceField(choices=TASK_DELIVERY_MODE_CHOICES, read_only=True)
    work_item_id = serializers.CharField(read_only=True, allow_null=True)
    conflict_key = serializers.SerializerMethodField()
    cycle = serializers.IntegerField(read_only=True)
    creator = AuthorSerializer(read_only=True, allow_null=True)
    approver = serializers.IntegerField(source="approver_id", read_only=True, allow_null=True)  # SPEC §21
    superseded_by = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)
    priority = serializers.IntegerField(read_only=True)
    labels = serializers.ListField(child=serializers.CharField(), read_only=True)
    blocked_by = serializers.SerializerMethodField()
    blocks = serializers.SerializerMethodField()
    ready = serializers.SerializerMethodField()

    def get_conflict_key(self, task: Task) -> dict[str, str]:
        return task.conflict_key_dict()

    def get_superseded_by(self, task: Task) -> int | None:
        return task.superseded_by.number if task.superseded_by_id else None

    def get_blocked_by(self, task: Task) -> list[int]:
        """Numbers of the live tasks this one waits on."""
        return graph.graph_of(task)[0]

    def get_blocks(self, task: Task) -> list[int]:
        """Numbers of the live tasks waiting on this one."""
        return graph.graph_of(task)[1]

    def get_ready(self, task: Task) -> bool:
        """Open, and no live task blocks it: what `next` would hand out."""
        return graph.is_ready(task)

    def to_representation(self, task: Task) -> dict:
        # Built directly: this runs on every create and `next`, and DRF's per-field machinery
        # (a deep copy of every declared field per instance) cost more than the SQL did.
        # The declared fields above stay the documented shape; tests hold the two together.
        blocked_by, blocks = graph.graph_of(task)
        return {
            "id": task.number,
            "number": task.number,
            "title": task.title,
            "body": task.body,
            # A read's status (tasks.status); a change's answer has the status it just wrote.
            "status": getattr(task, "shown_status", task.status),
            "delivery_mode": task.delivery_mode,
            "work_item_id": task.work_item_id,
            "conflict_key": task.conflict_key_dict(),
            "cycle": task.cycle,
            "creator": author(task.creator) if task.creator_id else None,
            "approver": task.approver_id,
            "superseded_by": self.get_superseded_by(task),
            "created_at": iso(task.created_at),
            "updated_at": iso(task.updated_at),
            "priority": task.priority,
            "labels": list(task.labels),
            "blocked_by": blocked_by,
            "blocks": blocks,
            "ready": graph.is_ready(task),
        }


@extend_schema_field({"type": "array", "maxItems": MAX_LABELS,
                     "items": {"type": "string", "pattern": LABEL_INPUT_PATTERN}})
class LabelsField(serializers.Field):
    """SPEC §13 labels: a list of at most 10, each 1–40 of ``[a-z0-9._:-]`` once lower-cased.
    A plain field (it keeps no child field), so flat input serializers may hold it."""

    default_error_messages = {
        "not_a_list": "Must be a list of labels.",
        "too_many": f"At most {MAX_LABELS} labels.",
        "invalid": "Each label is 1-40 characters of a-z, 0-9, '.', '_', ':' or '-'.",
    }
    pattern = re.compile(LABEL_PATTERN)

    def to_internal_value(self, data) -> list[str]:
        if not isinstance(data, list):
            self.fail("not_a_list")
        if any(not isinstance(label, str) or not self.pattern.fullmatch(label.lower()) for label in data):
            self.fail("invalid")
        if len(data) > MAX_LABELS:
            self.fail("too_many")
        return list(dict.fromkeys(label.lower() for label in data))  # once each, in the order given

    def to_representation(self, value) -> list[str]:
        return list(value)


@extend_schema_field({"type": "array", "maxItems": MAX_NAMED_BLOCKERS, "items": {"type": "integer", "minimum": 1}})
class TaskNumbersField(serializers.Field):
    """A list of task numbers (``blocked_by``), at most ``max_length``; a plain field too."""

    default_error_messages = {
        "invalid": "Must be a list of task numbers (integers from 1).",
        "too_many": "At most {max_length} tasks.",
    }

    def __init__(self, *, max_length: int, **kwargs) -> None:
        self.max_length = max_length
        super().__init__(**kwargs)

    def to_internal_value(self, data) -> list[int]:
        if not isinstance(data, list) or any(type(n) is not int or not 1 <= n < 2**63 for n in data):
            self.fail("invalid")
        numbers = list(dict.fromkeys(data))
        if len(numbers) > self.max_length:
            self.fail("too_many", max_length=self.max_length)
        return numbers

    def to_representation(self, value) -> list[int]:
        return list(value)


def priority_field(**kwargs) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=min(PRIORITIES), max_value=max(PRIORITIES), **kwargs)


class TaskCreateSerializer(FlatInputSerializer):
    title = StrictCharField(max_length=MAX_TITLE, trim_whitespace=False)
    body = StrictCharField(max_bytes=MAX_BODY, required=False, allow_blank=True, default="")
    delivery_mode = serializers.ChoiceField(choices=TASK_DELIVERY_MODE_CHOICES, default="result")
    work_item_id = WorkItemIdField(required=False, allow_null=True, default=None)
    priority = priority_field(required=False, default=DEFAULT_PRIORITY)
    labels = LabelsField(required=False, default=list)
    # At most MAX_BLOCKERS of them live (checked when they are looked up); finished ones may be named too.
    blocked_by = TaskNumbersField(max_length=MAX_NAMED_BLOCKERS, required=False, default=list)
    # SPEC §16: "refuse" turns a similar live task into a 409; by default the create proceeds.
    if_similar = serializers.ChoiceField(choices=["allow", "refuse"], required=False, default="allow")
    budget_usd = budget_field(required=False, default=None)
    # SPEC §21: ask for an approval before work starts, and who besides the stewards may give it.
    approval = serializers.BooleanField(required=False, default=False)
    approver = serializers.IntegerField(min_value=1, max_value=2**63 - 1, required=False, allow_null=True, default=None)


class SimilarSerializer(StrictInputSerializer):
    """``GET …/tasks/similar?title=…`` (SPEC §16)."""

    title = StrictCharField(max_length=MAX_TITLE, trim_whitespace=False)


class TaskUpdateSerializer(FlatInputSerializer):
    """``PATCH …/tasks/{n}``: what may change after create (SPEC §13)."""

    priority = priority_field(required=False)
    labels = LabelsField(required=False)
    budget_usd = budget_field(required=False)


class BlockerSerializer(FlatInputSerializer):
    task = serializers.IntegerField(min_value=1, max_value=2**63 - 1)


class WindowSerializer(StrictInputSerializer):
    proposals = serializers.ListField(child=serializers.DictField(), min_length=1, max_length=MAX_WINDOW)


class TaskEventSerializer(serializers.ModelSerializer):
    actor = AuthorSerializer(read_only=True)

    class Meta:
        model = TaskEvent
        fields = ["id", "kind", "actor", "details", "created_at"]


class NoteCreateSerializer(FlatInputSerializer):
    criterion = serializers.IntegerField(allow_null=True, required=False, default=None, min_value=0, max_value=10**6)
    body = StrictCharField(max_bytes=MAX_BODY)


class NoteSerializer(serializers.ModelSerializer):
    author = AuthorSerializer(read_only=True)

    class Meta:
        model = Note
        fields = ["id", "criterion", "body", "author", "created_at"]


class ClaimSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    member = AuthorSerializer(read_only=True)
    cycle = serializers.IntegerField(read_only=True)
    origin = serializers.CharField(read_only=True)
    created_at = serializers.DateTimeField(read_only=True)
    expires_at = serializers.DateTimeField(read_only=True)
    last_heartbeat_at = serializers.DateTimeField(read_only=True, allow_null=True)
    live = serializers.BooleanField(source="is_live", read_only=True)
    ended_at = serializers.DateTimeField(read_only=True, allow_null=True)
    end_reason = serializers.CharField(read_only=True)

    def to_representation(self, claim) -> dict:
        return {
            "id": claim.pk, "member": author(claim.member), "cycle": claim.cycle, "origin": claim.origin,
            "created_at": iso(claim.created_at), "expires_at": iso(claim.expires_at),
            "last_heartbeat_at": iso(claim.last_heartbeat_at), "live": claim.is_live,
            "ended_at": iso(claim.ended_at), "end_reason": claim.end_reason,
        }


class CheckSerializer(serializers.ModelSerializer):
    member = AuthorSerializer(read_only=True)

    class Meta:
        model = Check
        fields = ["id", "member", "verdict", "reason", "cycle", "created_at"]


class AttemptSerializer(serializers.ModelSerializer):
    member = AuthorSerializer(read_only=True)
    post = serializers.IntegerField(source="post_id")
    checks = CheckSerializer(many=True, read_only=True)

    class Meta:
        model = Attempt
        fields = ["number", "cycle", "member", "post", "state", "created_at", "decided_at", "checks"]


class TaskDetailSerializer(TaskSerializer):
    claims = serializers.SerializerMethodField()
    attempts = AttemptSerializer(many=True, read_only=True)
    cost = serializers.SerializerMethodField()  # SPEC §19

    def to_representation(self, task: Task) -> dict:
        data = super().to_representation(task)
        data["claims"] = self.get_claims(task)
        data["attempts"] = AttemptSerializer(task.attempts.all(), many=True).data
        data["cost"] = self.get_cost(task)
        return data

    def get_cost(self, task: Task) -> dict:
        return task_cost(task.space_id, task.pk)

    def get_claims(self, task: Task) -> list[dict]:
        return ClaimSerializer([c for c in task.claims.all() if c.is_live], many=True).data


class WaitField(serializers.FloatField):
    """Seconds to wait for work (SPEC §15): a JSON number from 0 to 60; not true, not "5", not NaN."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)) or not math.isfinite(data):
            self.fail("invalid")
        return super().to_internal_value(data)


class NextSerializer(FlatInputSerializer):
    number = serializers.IntegerField(required=False, min_value=1)
    labels = LabelsField(required=False, default=list)
    join = serializers.BooleanField(required=False, default=False)
    kind = serializers.ChoiceField(choices=["task", "check"], required=False, default="task")
    wait = WaitField(required=False, default=0, min_value=0, max_value=60)

    def validate(self, data: dict) -> dict:
        if data.get("wait") and data.get("number") is not None:
            raise serializers.ValidationError({"wait": ["A claim by number does not wait: send one or the other."]})
        return data


class DoneSerializer(FlatInputSerializer):
    post = serializers.IntegerField(min_value=1)
    cost = CostField(required=False, allow_null=True, default=None)


class CostReportSerializer(FlatInputSerializer):
    """``heartbeat`` and ``give-back``: an optional spend report (SPEC §19)."""

    cost = CostField(required=False, allow_null=True, default=None)


class RejectSerializer(FlatInputSerializer):
    reason = StrictCharField(max_bytes=MAX_BODY, required=False, allow_blank=True, default="")


class AssignSerializer(FlatInputSerializer):
    member = serializers.IntegerField(min_value=1)


class NotificationSerializer(serializers.ModelSerializer):
    task = serializers.SerializerMethodField()
    read = serializers.SerializerMethodField()

    class Meta:
        model = Notification
        fields = ["id", "kind", "task", "details", "created_at", "read", "read_at"]

    def get_task(self, notification: Notification) -> int | None:
        return notification.task.number if notification.task_id else None

    def get_read(self, notification: Notification) -> bool:
        return notification.read_at is not None


class MarkReadSerializer(StrictInputSerializer):
    ids = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False, max_length=1000)


class SupersedeSerializer(FlatInputSerializer):
    surviving_task = serializers.IntegerField(min_value=1)
    reason = StrictCharField(max_length=500, required=False, allow_blank=True, default="allocation_duplicate")


class CloseSerializer(FlatInputSerializer):
    reason = StrictCharField(max_length=500, required=False, allow_blank=True, default="")


# --- People in the loop (SPEC §21) -------------------------------------------------------------

MAX_OPTIONS = 20
MAX_RECIPIENTS = 50


@extend_schema_field({"oneOf": [{"type": "string", "enum": ["creator", "stewards"]},
                                {"type": "integer", "minimum": 1}]})
class AddresseeField(serializers.Field):
    """Whom a question is for: ``"creator"``, ``"stewards"`` or a member's id."""

    default_error_messages = {"invalid": 'Must be "creator", "stewards" or a member id.'}

    def to_internal_value(self, data):
        if data in ("creator", "stewards"):
            return data
        if isinstance(data, int) and not isinstance(data, bool) and data >= 1:
            return data
        self.fail("invalid")

    def to_representation(self, value):
        return value


class AskSerializer(StrictInputSerializer):
    body = StrictCharField(max_bytes=MAX_BODY)
    to = AddresseeField()
    options = serializers.ListField(child=StrictCharField(max_length=200), required=False, default=list,
                                    max_length=MAX_OPTIONS)
    hold = serializers.BooleanField(required=False, allow_null=True, default=None)
    expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
    wait = WaitField(required=False, default=0, min_value=0, max_value=60)


class AnswerSerializer(FlatInputSerializer):
    body = StrictCharField(max_bytes=MAX_BODY, required=False, allow_blank=True, default="")
    option = StrictCharField(max_length=200, required=False, allow_null=True, default=None)


class QuestionSerializer(serializers.Serializer):
    """A question (SPEC §21), with its answer once it has one."""

    id = serializers.IntegerField(source="pk")
    task = serializers.IntegerField(source="task.number")
    asker = serializers.IntegerField(source="asker_id")
    to = serializers.CharField()
    addressee = serializers.IntegerField(source="addressee_id", allow_null=True)
    body = serializers.CharField()
    options = serializers.ListField(child=serializers.CharField())
    hold = serializers.SerializerMethodField()
    state = serializers.CharField()
    expires_at = serializers.DateTimeField(allow_null=True)
    answer = serializers.CharField()
    option = serializers.SerializerMethodField()
    answered_by = serializers.IntegerField(source="answered_by_id", allow_null=True)
    created_at = serializers.DateTimeField()
    closed_at = serializers.DateTimeField(allow_null=True)

    def get_hold(self, question) -> bool:
        return question.claim_id is not None

    def get_option(self, question) -> str | None:
        return question.option or None


class MessageCreateSerializer(StrictInputSerializer):
    body = StrictCharField(max_bytes=MAX_BODY)
    to = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False, default=list,
                               max_length=MAX_RECIPIENTS)


class DirectMessageSerializer(MessageCreateSerializer):
    to = serializers.ListField(child=serializers.IntegerField(min_value=1), min_length=1, max_length=MAX_RECIPIENTS)


class MessageSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    task = serializers.SerializerMethodField()
    sender = serializers.IntegerField(source="sender_id")
    to = serializers.ListField(child=serializers.IntegerField(), source="recipients")
    body = serializers.CharField()
    created_at = serializers.DateTimeField()

    def get_task(self, message) -> int | None:
        return message.task.number if message.task_id else None


# --- Routines (SPEC §22) ---------------------------------------------------------------------


class RoutineCreateSerializer(FlatInputSerializer):
    title = StrictCharField(max_length=MAX_TITLE, trim_whitespace=False)
    body = StrictCharField(max_bytes=MAX_BODY, required=False, allow_blank=True, default="")
    schedule = StrictCharField(max_length=120, help_text="cron, 5 fields: minute hour day month weekday")
    timezone = StrictCharField(max_length=64, required=False, default="UTC", help_text="IANA, e.g. Europe/Paris")
    work_item_id = WorkItemIdField(required=False, allow_null=True, default=None)
    priority = priority_field(required=False, default=DEFAULT_PRIORITY)
    labels = LabelsField(required=False, default=list)
    overlap = serializers.ChoiceField(choices=RoutineOverlap.choices, required=False, default=RoutineOverlap.SKIP)
    catch_up = serializers.ChoiceField(choices=RoutineCatchUp.choices, required=False, default=RoutineCatchUp.LATEST)


class RoutineUpdateSerializer(FlatInputSerializer):
    """``PATCH …/routines/{id}``: any of a routine's fields, and ``enabled``."""

    title = StrictCharField(max_length=MAX_TITLE, trim_whitespace=False, required=False)
    body = StrictCharField(max_bytes=MAX_BODY, required=False, allow_blank=True)
    schedule = StrictCharField(max_length=120, required=False)
    timezone = StrictCharField(max_length=64, required=False)
    work_item_id = WorkItemIdField(required=False, allow_null=True)
    priority = priority_field(required=False)
    labels = LabelsField(required=False)
    overlap = serializers.ChoiceField(choices=RoutineOverlap.choices, required=False)
    catch_up = serializers.ChoiceField(choices=RoutineCatchUp.choices, required=False)
    enabled = serializers.BooleanField(required=False)


class RoutineSerializer(serializers.Serializer):
    """A routine (SPEC §22), with when it runs next and its last task."""

    id = serializers.IntegerField(source="pk")
    title = serializers.CharField()
    body = serializers.CharField()
    schedule = serializers.CharField()
    timezone = serializers.CharField(source="time_zone")
    work_item_id = serializers.CharField(allow_null=True)
    priority = serializers.IntegerField()
    labels = serializers.ListField(child=serializers.CharField())
    overlap = serializers.ChoiceField(choices=RoutineOverlap.choices)
    catch_up = serializers.ChoiceField(choices=RoutineCatchUp.choices)
    enabled = serializers.BooleanField()
    next_run_at = serializers.DateTimeField(allow_null=True)
    last_period = serializers.DateTimeField(allow_null=True)
    last_task = serializers.SerializerMethodField()
    created_by = serializers.IntegerField(source="created_by_id", allow_null=True)
    created_at = serializers.DateTimeField()

    def get_last_task(self, routine) -> int | None:
        """The number of the latest task it made."""
        return getattr(routine, "last_task", None)
