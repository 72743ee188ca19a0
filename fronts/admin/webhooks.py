"""A space's webhooks in the admin (SPEC §17): endpoints and their deliveries, failed first,
with the same commands as the API (send a test, disable or enable, send a failed one again).
Endpoints are registered through the API, which shows their secret once."""
from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Case, IntegerField, QuerySet, Value, When
from django.utils.html import format_html, format_html_join

from commands.unit import in_unit
from common.refusals import DomainError
from spaces.commands import steward_for_admin_user
from commands.base import Command
from webhooks import commands
from webhooks.models import Delivery, DeliveryState, Endpoint

RECENT = 20  # deliveries shown on an endpoint's page


def failed_first(deliveries: QuerySet) -> QuerySet:
    """Failed deliveries first, then pending, then delivered; newest first within each."""
    rank = Case(When(state=DeliveryState.FAILED, then=Value(0)), When(state=DeliveryState.PENDING, then=Value(1)),
                default=Value(2), output_field=IntegerField())
    return deliveries.annotate(rank=rank).order_by("rank", "-id")


def run(request, queryset, command: Command, done: str, data: dict | None = None) -> None:
    """Each row through the API's command, as a steward of its space (``steward_for_admin_user``),
    in a unit of work of its own (the runner's, as every mutating request); a refusal is shown."""
    count = 0
    for row in queryset:
        endpoint = row if isinstance(row, Endpoint) else row.endpoint
        lookups = {"webhook_id": endpoint.pk} | ({} if row is endpoint else {"delivery_id": row.pk})
        try:
            in_unit(lambda unit: command(steward_for_admin_user(space=endpoint.space, username=request.user.get_username()),
                                         unit=unit, data=data, **lookups))
            count += 1
        except DomainError as error:
            messages.error(request, f"{row}: {error.detail}")
    if count:
        messages.success(request, f"{done}: {count}.")


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    list_display = ["url", "space", "enabled", "shown_types", "failing_since", "disabled_reason", "created_at"]
    list_filter = ["enabled", "space"]
    search_fields = ["url", "description"]
    list_select_related = ["space"]
    fields = readonly_fields = ["space", "url", "shown_types", "description", "enabled", "disabled_reason",
                                "failing_since", "cursor", "created_by", "created_at", "recent_deliveries"]
    actions = ["send_test", "disable", "enable"]

    @admin.display(description="types")
    def shown_types(self, endpoint: Endpoint) -> str:
        return ", ".join(endpoint.types) or "every type"

    @admin.display(description=f"last {RECENT} deliveries, failed first")
    def recent_deliveries(self, endpoint: Endpoint) -> str:
        rows = failed_first(Delivery.objects.filter(endpoint=endpoint))[:RECENT]
        return format_html("<table>{}</table>", format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} tries</td><td>{}</td></tr>",
            ((d.pk, d.type, d.state, d.attempts, d.created_at) for d in rows))) if rows else "none yet"

    def has_add_permission(self, request) -> bool:
        return False  # registered through the API, which shows the signing secret once

    @admin.action(description="Send a test event", permissions=["change"])
    def send_test(self, request, queryset) -> None:
        run(request, queryset, commands.SEND_TEST, "Test events queued")

    @admin.action(description="Disable", permissions=["change"])
    def disable(self, request, queryset) -> None:
        run(request, queryset, commands.UPDATE, "Disabled", {"enabled": False})

    @admin.action(description="Enable (its waiting deliveries go again, in order)", permissions=["change"])
    def enable(self, request, queryset) -> None:
        run(request, queryset, commands.UPDATE, "Enabled", {"enabled": True})


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["id", "endpoint", "type", "seq", "state", "attempts", "next_at", "created_at"]
    list_filter = ["state", "space"]
    search_fields = ["event_id", "type"]
    list_select_related = ["endpoint"]
    show_full_result_count = False
    fields = readonly_fields = ["space", "endpoint", "event_id", "seq", "type", "state", "attempts", "next_at",
                                "give_up_at", "created_at", "finished_at", "shown_tries", "body"]
    actions = ["send_again"]

    def get_queryset(self, request) -> QuerySet:
        return failed_first(super().get_queryset(request))

    @admin.display(description="tries")
    def shown_tries(self, delivery: Delivery) -> str:
        return format_html("<table>{}</table>", format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>{} ms</td><td>{}</td></tr>",
            ((t.at, t.status_code or "no answer", t.latency_ms, t.error or t.answer[:200])
             for t in delivery.tries.order_by("id"))))

    def has_add_permission(self, request) -> bool:
        return False  # written by the worker from the feed

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # every attempt stays recorded

    @admin.action(description="Send again (failed deliveries)", permissions=["change"])
    def send_again(self, request, queryset) -> None:
        run(request, queryset, commands.RETRY_DELIVERY, "Sent again")
