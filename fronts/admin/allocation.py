"""Read-only views of reservations, occupancy, holds and operations, with *Expire now*; and the
bind preview on a space's admin page (SPEC §5.3), which is allocation's."""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from allocation import services
from idempotency.services import expire_operations
from fronts.admin.read_only import ReadOnlyAdmin
from allocation.conflict_keys import task_target
from allocation.models import (
    TASK_DELIVERY_MODE_CHOICES,
    ConflictKind,
    Occupancy,
    Reservation,
    SlotHold,
)
from idempotency.models import Operation
from common.refusals import DomainError
from fronts.admin.spaces import SpaceAdmin
from spaces.models import CharterItem, Space


class BindPreviewForm(forms.Form):
    title = forms.CharField(max_length=500, widget=forms.TextInput(attrs={"size": 70, "autofocus": True}))
    delivery_mode = forms.ChoiceField(choices=TASK_DELIVERY_MODE_CHOICES, initial="result")


admin.site.unregister(Space)


@admin.register(Space)
class SpaceWithBindPreviewAdmin(SpaceAdmin):
    """The spaces app's page for a space, with allocation's bind preview beside it."""

    list_display = [*SpaceAdmin.list_display, "bind_preview_link"]
    readonly_fields = [*SpaceAdmin.readonly_fields, "bind_preview_link", "board_link", "duplicates_link"]

    def get_fields(self, request, obj=None):
        fields = super().get_fields(request, obj)
        return [*fields, "bind_preview_link", "board_link", "duplicates_link"] if obj is not None else fields

    @admin.display(description="bind preview")
    def bind_preview_link(self, space: Space) -> str:
        return format_html('<a href="{}">Preview a bind</a>', reverse("admin:spaces_space_bind", args=[space.pk]))

    @admin.display(description="likely duplicates")
    def duplicates_link(self, space: Space) -> str:
        return format_html('<a href="{}">Pairs of live tasks that look alike</a>',
                           reverse("admin:tasks_task_duplicates", args=[space.pk]))

    @admin.display(description="board")
    def board_link(self, space: Space) -> str:
        return format_html('<a href="{}">Open the board</a>', reverse("board", args=[space.slug]))

    def get_urls(self):
        return [path("<int:space_id>/bind/", self.admin_site.admin_view(self.bind_preview), name="spaces_space_bind")]\
            + super().get_urls()

    def bind_preview(self, request, space_id: int):
        """The bind of a title against the space's catalog: it reads the space and its catalog,
        so it takes the permission to view both (``is_staff`` alone opens nothing)."""
        space = get_object_or_404(Space, pk=space_id)
        if not (self.has_view_permission(request, space) and request.user.has_perm("spaces.view_charteritem")):
            raise PermissionDenied
        form = BindPreviewForm(request.GET or None)
        result, slots = None, []
        if form.is_valid():
            try:
                result = services.bind_title(space=space, title=form.cleaned_data["title"],
                                             delivery_mode=form.cleaned_data["delivery_mode"])
            except DomainError as error:
                messages.error(request, error.detail)
            else:
                slots = scored_slots(space, result.as_dict()["scores"], form.cleaned_data["delivery_mode"])
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "space": space, "form": form,
                   "result": result, "slots": slots, "title": f"Bind preview: {space.slug}"}
        return TemplateResponse(request, "admin/allocation/bind_preview.html", context)


def scored_slots(space: Space, scores: list[dict], delivery_mode: str) -> list[dict]:
    """The preview's scores with each slot's title and the live task holding its key, if any
    ("taken by #7"): what a steward needs to read them, in two queries."""
    ids = [score["work_item_id"] for score in scores]
    titles = dict(CharterItem.objects.filter(space=space, work_item_id__in=ids)
                  .values_list("work_item_id", "canonical_title"))
    targets = {task_target(space.slug, work_item_id=i, title=""): i for i in ids}
    taken = {targets[target]: number for target, number in Occupancy.objects.filter(
        space=space, kind=ConflictKind.CREATE_TASK, delivery_mode=delivery_mode, target__in=list(targets))
        .values_list("target", "task__number")}
    return [{**score, "title": titles.get(score["work_item_id"], ""), "taken_by": taken.get(score["work_item_id"])}
            for score in scores]


@admin.register(Reservation)
class ReservationAdmin(ReadOnlyAdmin):
    list_display = ["id", "space", "target", "delivery_mode", "member", "created_at", "expires_at"]
    list_filter = ["space", "kind"]
    actions = ["expire_now"]

    def has_expire_permission(self, request) -> bool:
        return request.user.has_perm("allocation.delete_reservation")

    @admin.action(description="Expire now", permissions=["expire"])
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

    def has_release_permission(self, request) -> bool:
        return request.user.has_perm("allocation.delete_slothold")

    @admin.action(description="Release the hold", permissions=["release"])
    def release(self, request, queryset) -> None:
        """The API's ``release_slot`` command, run as the task actions are: under the staff user's
        steward member, in a unit of work of its own."""
        from commands.unit import in_unit
        from spaces.commands import steward_for_admin_user
        from tasks import commands  # tasks holds the hold commands (and the history they write)

        released = 0
        for hold in queryset.select_related("space"):
            actor = steward_for_admin_user(space=hold.space, username=request.user.get_username())
            try:
                in_unit(lambda unit: commands.release_slot(actor, unit=unit, work_item_id=hold.work_item_id))
                released += 1
            except DomainError as error:
                messages.error(request, f"Slot {hold.work_item_id}: {error.detail}")
        if released:
            messages.success(request, f"Released {released} hold(s).")


@admin.register(Operation)
class OperationAdmin(ReadOnlyAdmin):
    list_display = ["id", "space", "member", "key", "method", "path", "state", "lease_epoch", "lease_expires_at",
                    "response_status", "created_at"]
    list_filter = ["state", "space"]
    search_fields = ["key", "path"]
    actions = ["expire_now"]

    def has_expire_permission(self, request) -> bool:
        return request.user.has_perm("idempotency.change_operation")

    @admin.action(description="Expire now (end the lease: the operation becomes retryable)", permissions=["expire"])
    def expire_now(self, request, queryset) -> None:
        count = expire_operations(ids=list(queryset.values_list("pk", flat=True)))
        messages.success(request, f"Expired {count} operation(s).")
