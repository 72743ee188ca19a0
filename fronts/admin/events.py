"""The space's feed in the admin (SPEC §17): read only, newest first, as followers see it."""
from __future__ import annotations

import json

from django.contrib import admin
from django.utils.html import format_html

from events.models import Event


class NumberedFilter(admin.SimpleListFilter):
    """Events get their seq as their transaction commits; until then no reader sees them."""

    title = "numbered"
    parameter_name = "numbered"

    def lookups(self, request, model_admin):
        return [("yes", "Numbered (committed)")]

    def queryset(self, request, queryset):
        return queryset.filter(seq__isnull=False) if self.value() == "yes" else queryset


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ["seq", "type", "task_number", "actor", "at", "space"]
    list_filter = [NumberedFilter, "space"]
    search_fields = ["type"]
    search_help_text = "An event type, such as task.created or key.issued."
    ordering = ["-id"]
    show_full_result_count = False  # a feed grows without end: no count of every row
    list_select_related = ["actor", "space"]
    fields = readonly_fields = ["space", "seq", "type", "task_number", "actor", "at", "shown_data"]

    @admin.display(description="data")
    def shown_data(self, event: Event) -> str:
        return format_html("<pre>{}</pre>", json.dumps(event.data, indent=2, sort_keys=True))

    def has_add_permission(self, request) -> bool:
        return False  # events are written by the changes themselves

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # sweep purges them past the space's event_retention_days
