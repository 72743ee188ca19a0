"""Read-only views of reservations, occupancy, holds and operations, with *Expire now*."""
from __future__ import annotations

from django.contrib import admin, messages

from allocation import services
from allocation.idempotency import expire_operations
from allocation.models import Occupancy, Operation, Reservation, SlotHold


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Reservation)
class ReservationAdmin(ReadOnlyAdmin):
    list_display = ["id", "space", "target", "delivery_mode", "member", "created_at", "expires_at"]
    list_filter = ["space", "kind"]
    actions = ["expire_now"]

    @admin.action(description="Expire now")
    def expire_now(self, request, queryset) -> None:
        count = services.expire_reservations(ids=list(queryset.values_list("pk", flat=True)))
        messages.success(request, f"Expired {count} reservation(s).")


@admin.register(Occupancy)
class OccupancyAdmin(ReadOnlyAdmin):
    list_display = ["id", "space", "kind", "target", "delivery_mode", "task", "note", "created_at"]
    list_filter = ["space", "kind", "delivery_mode"]
    search_fields = ["target"]


@admin.register(SlotHold)
class SlotHoldAdmin(ReadOnlyAdmin):
    list_display = ["space", "work_item_id", "held_by", "reason", "created_at"]
    list_filter = ["space"]
    actions = ["release"]

    @admin.action(description="Release the hold")
    def release(self, request, queryset) -> None:
        for hold in queryset:
            services.release_slot(space=hold.space, work_item_id=hold.work_item_id)
        messages.success(request, f"Released {queryset.count()} hold(s).")


@admin.register(Operation)
class OperationAdmin(ReadOnlyAdmin):
    list_display = ["id", "space", "member", "key", "method", "path", "state", "lease_epoch", "lease_expires_at",
                    "response_status", "created_at"]
    list_filter = ["state", "space"]
    search_fields = ["key", "path"]
    actions = ["expire_now"]

    @admin.action(description="Expire now (end the lease: the operation becomes retryable)")
    def expire_now(self, request, queryset) -> None:
        count = expire_operations(ids=list(queryset.values_list("pk", flat=True)))
        messages.success(request, f"Expired {count} operation(s).")
