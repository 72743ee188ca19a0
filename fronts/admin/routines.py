"""Routines in the admin (SPEC §22): each with its schedule and next run, read here and paused,
resumed or deleted by the API's commands under the staff user's steward member. A routine is
made over the API, the CLI or the board's owners' tools (its fields are the create command's)."""
from __future__ import annotations

from django.contrib import admin, messages

from commands.unit import in_unit
from common.refusals import DomainError
from fronts.admin.read_only import ReadOnlyAdmin
from spaces.commands import steward_for_admin_user
from tasks import commands
from tasks.models import Routine, RoutineRun


@admin.register(Routine)
class RoutineAdmin(ReadOnlyAdmin):
    list_display = ["id", "title", "space", "schedule", "time_zone", "enabled", "next_run_at", "last_period", "overlap"]
    list_filter = ["enabled", "space"]
    search_fields = ["title"]
    ordering = ["next_run_at", "id"]
    list_select_related = ["space"]
    fields = readonly_fields = ["space", "title", "body", "schedule", "time_zone", "work_item_id", "priority", "labels",
                                "overlap", "catch_up", "enabled", "next_run_at", "last_period", "created_by",
                                "created_at", "updated_at"]
    actions = ["pause", "resume", "remove"]

    def has_manage_permission(self, request) -> bool:
        """The actions change a routine through the commands; the page itself edits nothing."""
        return request.user.has_perm("tasks.change_routine")

    def run(self, request, queryset, verb: str, command, data=None) -> None:
        done = 0
        for routine in queryset.select_related("space"):
            actor = steward_for_admin_user(space=routine.space, username=request.user.get_username())
            try:
                in_unit(lambda unit: command(actor, unit=unit, data=data, routine=routine.pk))
                done += 1
            except DomainError as error:
                messages.error(request, f"Routine {routine.pk}: {error.detail}")
        if done:
            messages.success(request, f"{verb} {done} routine(s).")

    @admin.action(description="Pause (make no more tasks)", permissions=["manage"])
    def pause(self, request, queryset) -> None:
        self.run(request, queryset, "Paused", commands.update_routine, {"enabled": False})

    @admin.action(description="Resume (from the next period)", permissions=["manage"])
    def resume(self, request, queryset) -> None:
        self.run(request, queryset, "Resumed", commands.update_routine, {"enabled": True})

    @admin.action(description="Delete (its tasks stay)", permissions=["manage"])
    def remove(self, request, queryset) -> None:
        self.run(request, queryset, "Deleted", commands.delete_routine)


@admin.register(RoutineRun)
class RoutineRunAdmin(ReadOnlyAdmin):
    list_display = ["id", "routine", "period", "task", "reason", "created_at"]
    list_filter = ["space"]
    ordering = ["-id"]
    list_select_related = ["routine", "task"]
    fields = readonly_fields = ["space", "routine", "period", "task", "reason", "created_at"]
