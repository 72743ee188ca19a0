"""What work cost, in the admin (SPEC §19): each space's months and each report, read only."""
from __future__ import annotations

from django.contrib import admin

from costs.models import MonthSpend, Spend
from fronts.admin.read_only import ReadOnlyAdmin  # spend is written by the reports themselves


@admin.register(MonthSpend)
class MonthSpendAdmin(ReadOnlyAdmin):
    list_display = ["space", "month", "usd", "input_tokens", "output_tokens", "threshold_at", "exhausted_at"]
    list_filter = ["space"]
    ordering = ["-month", "space"]
    list_select_related = ["space"]
    fields = readonly_fields = list_display


@admin.register(Spend)
class SpendAdmin(ReadOnlyAdmin):
    list_display = ["task", "member", "claim_id", "attempt_id", "model", "usd", "input_tokens", "output_tokens",
                    "seconds", "reported_at", "space"]
    list_filter = ["space", "model"]
    ordering = ["-reported_at"]
    show_full_result_count = False  # reports grow with the work
    list_select_related = ["task", "member", "space"]
    fields = readonly_fields = ["space", "task", "member", "claim_id", "attempt_id", "model", "usd", "input_tokens",
                                "output_tokens", "seconds", "reported_at"]
