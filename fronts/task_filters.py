"""The task list's query-string filters (SPEC §3.1, §13), for the REST route, the MCP tool
and the board alike: django-filter's FilterSet over the tasks app's predicates
(``tasks.filters``), strict about what a parameter may say."""
import re
from datetime import datetime

import django_filters
from django import forms
from django.contrib.postgres.search import SearchRank
from django.db.models import F, QuerySet
from django.http import QueryDict
from django.utils import timezone

from allocation.models import TASK_DELIVERY_MODE_CHOICES
from common.refusals import InvalidRequest
from spaces.catalog import WORK_ITEM_ID_PATTERN, normalize_work_item_id
from tasks import selectors
from tasks.filters import blocked, next_order, ready_condition
from tasks.models import LABEL_INPUT_PATTERN, LABEL_PATTERN, PRIORITIES, Task, TaskStatus
from tasks.search import text_match, text_query
from tasks.status import shown_in, with_shown_status

MAX_QUERY = 500
LABEL = re.compile(LABEL_PATTERN)


TRUE_WORDS, FALSE_WORDS = ("true", "1", "yes"), ("false", "0", "no")  # what a boolean filter reads


def any_case(word: str) -> str:
    """``word`` as a pattern matching it in any case (JSON Schema's patterns have no flags)."""
    return "".join(f"[{c.upper()}{c}]" if c.isalpha() else c for c in word)


class StrictBooleanField(forms.NullBooleanField):
    """``true``/``false`` (or 1/0, yes/no) and nothing else: ``?ready=maybe`` is a 422 (SPEC
    §3), not a list that quietly ignores the filter."""

    widget = forms.TextInput  # the raw value: NullBooleanField's select reads anything else as "unknown"

    def to_python(self, value):
        if value in (None, ""):
            return None
        word = str(value).strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        raise forms.ValidationError("Must be true or false.", code="invalid")

    def validate(self, value) -> None:
        pass


def strict_boolean(params: QueryDict, name: str) -> bool | None:
    """A boolean query parameter read outside a filter, by the filters' one rule."""
    try:
        return StrictBooleanField().clean(params.get(name))
    except forms.ValidationError as error:
        raise InvalidRequest("Bad filter.", fields={name: error.messages}) from None


class StrictBooleanFilter(django_filters.BooleanFilter):
    field_class = StrictBooleanField


class TaskFilter(django_filters.FilterSet):
    status = django_filters.MultipleChoiceFilter(choices=TaskStatus.choices, method="filter_status")
    work_item_id = django_filters.CharFilter(method="filter_work_item_id")
    delivery_mode = django_filters.ChoiceFilter(choices=TASK_DELIVERY_MODE_CHOICES)
    creator = django_filters.NumberFilter(field_name="creator_id")
    priority = django_filters.MultipleChoiceFilter(choices=[(str(p), str(p)) for p in PRIORITIES])
    ready = StrictBooleanFilter(method="filter_ready")
    blocked = StrictBooleanFilter(method="filter_blocked")
    q = django_filters.CharFilter(method="filter_q", max_length=MAX_QUERY)
    order = django_filters.ChoiceFilter(choices=[("number", "number"), ("next", "next")], method="filter_order")

    class Meta:
        model = Task
        fields = ["status", "work_item_id", "delivery_mode", "creator", "priority", "ready", "blocked", "q", "order"]

    def __init__(self, data: QueryDict, *, space, queryset: QuerySet, now: datetime | None = None) -> None:
        """``queryset``: tasks of ``space``, the space ``q`` searches in (``tasks.search``);
        ``now``: the moment whose statuses it reads (``tasks.status``)."""
        super().__init__(data, queryset=queryset)
        self.space = space
        self.now = now or timezone.now()

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        """The declared filters, then ``label`` (repeatable: tasks carrying all of them)."""
        labels = [label.lower() for label in self.data.getlist("label")]
        if any(not LABEL.fullmatch(label) for label in labels):
            raise InvalidRequest("Bad filter.", fields={"label": [
                "Each label is 1-40 characters of a-z, 0-9, '.', '_', ':' or '-'."]})
        queryset = super().filter_queryset(queryset)
        return queryset.filter(labels__contains=labels) if labels else queryset

    def filter_work_item_id(self, qs: QuerySet, name: str, value: str) -> QuerySet:
        """A slot id as every input takes it (SPEC §4.3.1: ``t02`` is ``T2``); one that is not a
        slot id is refused, never a list that is quietly empty."""
        slot = normalize_work_item_id(value)
        if slot is None:
            raise InvalidRequest("Bad filter.", fields={"work_item_id": ["A slot id: T followed by digits."]})
        return qs.filter(work_item_id=slot)

    def filter_status(self, qs: QuerySet, name: str, value: list[str]) -> QuerySet:
        return qs.filter(shown_in(value, self.now)) if value else qs

    def filter_ready(self, qs: QuerySet, name: str, value: bool | None) -> QuerySet:
        if value is None:
            return qs
        ready = ready_condition(self.now)
        return qs.filter(ready) if value else qs.exclude(ready)

    def filter_blocked(self, qs: QuerySet, name: str, value: bool | None) -> QuerySet:
        if value is None:
            return qs
        return qs.filter(blocked()) if value else qs.exclude(blocked())

    def filter_order(self, qs: QuerySet, name: str, value: str) -> QuerySet:
        """``order=next``: the order ``next`` takes tasks (with ``ready=true``, the tasks it would
        hand out, in turn); ``number`` (the default) by number."""
        return qs.order_by(*next_order(self.space.priority_aging_minutes)) if value == "next" else qs

    def filter_q(self, qs: QuerySet, name: str, value: str) -> QuerySet:
        """PostgreSQL full-text search over title and body, best match first, then by number."""
        if not value.strip():
            return qs
        query = text_query(value)
        return (qs.filter(text_match(value, self.space.pk)).annotate(rank=SearchRank(F("search"), query))
                .order_by("-rank", "number"))


# What a task list reads (besides paging): the filters, repeatable labels, superseded tasks too.
LIST_PARAMETERS = frozenset({*TaskFilter.Meta.fields, "label", "include_superseded"})
# Each list parameter as the filters read it, for /v1/schema: exactly what is taken, so a value
# the schema calls wrong is refused (an empty value is no filter; a repeated one, an array).
BOOLEAN = {"type": "string",
           "pattern": f"^(?:\\s*(?:{'|'.join(any_case(w) for w in TRUE_WORDS + FALSE_WORDS)})\\s*)?$"}
LIST_PARAMETER_SCHEMAS = {
    "status": {"type": "array", "items": {"type": "string", "enum": list(TaskStatus.values)}},
    "priority": {"type": "array", "items": {"type": "string", "enum": [str(p) for p in PRIORITIES]}},
    "delivery_mode": {"type": "string", "enum": ["", *(value for value, _ in TASK_DELIVERY_MODE_CHOICES)]},
    "work_item_id": {"type": "string", "pattern": WORK_ITEM_ID_PATTERN, "maxLength": 64},
    "creator": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
    "ready": BOOLEAN, "blocked": BOOLEAN, "include_superseded": BOOLEAN,
    "q": {"type": "string", "maxLength": MAX_QUERY, "pattern": "^[^\\x00]*$"},
    "order": {"type": "string", "enum": ["", "number", "next"]},
    "label": {"type": "array", "items": {"type": "string", "pattern": LABEL_INPUT_PATTERN}},
}


def checked_filter(params: QueryDict, *, space, queryset: QuerySet, now: datetime | None = None) -> TaskFilter:
    """``queryset`` through the task filter (the lists', the board's): a bad parameter is
    ``422 invalid_request`` naming it, on every front."""
    filtered = TaskFilter(params, space=space, queryset=queryset, now=now)
    if not filtered.is_valid():
        raise InvalidRequest("Bad filter.", fields={k: [str(e) for e in v] for k, v in filtered.errors.items()})
    return filtered


def filter_tasks(space, params: QueryDict) -> tuple[QuerySet, bool]:
    """A space's tasks as a list's query parameters ask (every front's one reading of them), and
    whether they are ordered other than by number (by match for ``q``, as ``next`` takes them
    for ``order=next``), and so paged by offset."""
    statuses = params.getlist("status")
    include = strict_boolean(params, "include_superseded")
    now = timezone.now()  # one moment for what the list filters by and shows (SPEC §15: no lapse written)
    tasks = selectors.list_tasks(space=space, include_superseded=bool(include) or TaskStatus.SUPERSEDED in statuses)
    filtered = checked_filter(params, space=space, queryset=with_shown_status(tasks, now), now=now)
    data = filtered.form.cleaned_data
    return filtered.qs, bool(data.get("q", "").strip()) or data.get("order") == "next"
