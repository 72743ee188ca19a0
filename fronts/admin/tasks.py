"""The stewards' task pages (SPEC §5.3): filters, full history, the work done on a task,
and the actions Supersede…, Withdraw, Reject and Hold slot, all through the services."""
from __future__ import annotations

import json
import re

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db import connection
from django.db.models import Q
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.functional import cached_property
from django.utils.http import url_has_allowed_host_and_scheme
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html_join

from common.refusals import DomainError
from spaces.models import Space
from spaces.commands import steward_for_admin_user
from commands.unit import in_unit
from tasks import commands, graph, history, similarity
from tasks.filters import blocked, ready_condition
from tasks.search import text_query
from tasks.status import shown_as, with_shown_status
from tasks.models import (
    LIVE_STATUSES,
    PRIORITIES,
    Attempt,
    Check,
    Claim,
    Note,
    SpaceLabel,
    Task,
    TaskEvent,
    TaskStatus,
)



def number_or_text(value: str) -> int | str:
    """A form's field as the commands' JSON input would carry it."""
    return int(value) if value.isdigit() and len(value) <= 18 else value

class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class TaskEventInline(ReadOnlyInline):
    model = TaskEvent
    fields = readonly_fields = ["created_at", "kind", "actor", "what"]
    verbose_name_plural = "history"

    @admin.display(description="what happened")
    def what(self, event: TaskEvent) -> str:
        """In words, members by name: "assigned it to ana" (the board's panel says the same)."""
        return history.sentence(event, history.member_names([event]))


class ClaimInline(ReadOnlyInline):
    model = Claim
    fields = readonly_fields = ["member", "cycle", "origin", "created_at", "expires_at", "ended_at", "end_reason"]


class AttemptInline(ReadOnlyInline):
    model = Attempt
    fields = readonly_fields = ["number", "cycle", "member", "post", "state", "created_at", "decided_at"]


class CheckInline(ReadOnlyInline):
    model = Check
    fields = readonly_fields = ["attempt", "member", "cycle", "verdict", "reason", "created_at"]


class NoteInline(ReadOnlyInline):
    model = Note
    fields = readonly_fields = ["author", "criterion", "body", "created_at"]


class SupersededFilter(admin.SimpleListFilter):
    """Lists hide superseded tasks unless asked, as the API does."""

    title = "superseded"
    parameter_name = "superseded"

    def lookups(self, request, model_admin):
        return [("include", "Include superseded"), ("only", "Only superseded")]

    def queryset(self, request, queryset):
        if self.value() == "only":
            return queryset.filter(status=TaskStatus.SUPERSEDED)
        if self.value() == "include" or request.GET.get("status") == TaskStatus.SUPERSEDED:
            return queryset
        return queryset.exclude(status=TaskStatus.SUPERSEDED)


class StatusFilter(admin.SimpleListFilter):
    """The status as every read shows it (``tasks.status``: a claim past its expiry is ended)."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return TaskStatus.choices

    def queryset(self, request, queryset):
        return queryset.filter(shown_as(self.value(), timezone.now())) if self.value() in TaskStatus.values else queryset


class ReadinessFilter(admin.SimpleListFilter):
    """SPEC §13: ready (open, nothing live blocks it) or blocked."""

    title = "readiness"
    parameter_name = "readiness"

    def lookups(self, request, model_admin):
        return [("ready", "Ready"), ("blocked", "Blocked")]

    def queryset(self, request, queryset):
        if self.value() == "ready":
            return queryset.filter(ready_condition(timezone.now()))
        if self.value() == "blocked":
            return queryset.filter(blocked())
        return queryset


class PriorityFilter(admin.SimpleListFilter):
    """The five priorities (a field filter would read every task for its distinct values)."""

    title = "priority"
    parameter_name = "priority"

    def lookups(self, request, model_admin):
        return [(str(p), f"P{p}") for p in PRIORITIES]

    def queryset(self, request, queryset):
        return queryset.filter(priority=int(self.value())) if self.value() in {str(p) for p in PRIORITIES} else queryset


class EstimatedCountPaginator(Paginator):
    """Counts exactly up to ESTIMATE_FROM rows; past that, PostgreSQL's estimate of the rows
    the query returns serves (counting a million rows exactly is a scan of them all)."""

    ESTIMATE_FROM = 10_000

    @cached_property
    def count(self) -> int:
        exact = self.object_list.order_by()[: self.ESTIMATE_FROM + 1].count()
        if exact <= self.ESTIMATE_FROM:
            return exact
        sql, params = self.object_list.order_by().query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
            plan = cursor.fetchone()[0]
        plan = json.loads(plan) if isinstance(plan, str) else plan
        return max(exact, int(plan[0]["Plan"]["Plan Rows"]))


class LabelFilter(admin.SimpleListFilter):
    """Every label a task has carried, of the space filtered by or of every space, read from the
    spaces' label lists (SpaceLabel), never from the tasks themselves."""

    title = "label"
    parameter_name = "label"

    def lookups(self, request, model_admin):
        labels = SpaceLabel.objects.all()
        space = request.GET.get("space__id__exact", "")
        if space.isdigit() and len(space) < 19:
            labels = labels.filter(space_id=int(space))
        names = labels.values_list("label", flat=True).distinct().order_by("label")[:100]
        return [(name, name) for name in names]

    def queryset(self, request, queryset):
        return queryset.filter(labels__contains=[self.value()]) if self.value() else queryset


def task_links(numbers: list[int], space_id: int) -> str:
    if not numbers:
        return "—"
    ids = dict(Task.objects.filter(space_id=space_id, number__in=numbers).values_list("number", "pk"))
    return format_html_join(", ", '<a href="{}">#{}</a>', (
        (reverse("admin:tasks_task_change", args=[ids[n]]), n) for n in numbers))


SURVIVOR_CHOICES = 500  # the picker lists this many live tasks at most; any number can be typed


class SupersedeForm(forms.Form):
    surviving_task = forms.IntegerField(
        min_value=1, label="Surviving task number", widget=forms.NumberInput(attrs={"list": "survivors"}),
        help_text="The live task in the same space that stays: type its number or words of its title to pick it.")
    reason = forms.CharField(max_length=500, initial="allocation_duplicate")


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    # What a steward scans a list for, readable at 1,400 px beside the filters (the delivery mode
    # is a filter, the cycle on the task's page).
    list_display = ["task_number", "title", "status_and_readiness", "shown_priority", "label_list", "slot",
                    "space", "created"]
    list_display_links = ["task_number", "title"]
    list_filter = [SupersededFilter, StatusFilter, ReadinessFilter, PriorityFilter, LabelFilter, "delivery_mode", "space"]
    # Searched through the full-text index (get_search_results), a slot id, or a task number.
    search_fields = ["title"]
    search_help_text = "Words of the title or body (full-text), a slot id such as T3, or a task number."
    ordering = ["space", "number"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False  # "n of N" would count every task of every space
    inlines = [TaskEventInline, ClaimInline, AttemptInline, CheckInline, NoteInline]
    actions = ["approve", "refuse", "unpark", "supersede", "withdraw", "reject", "hold_slot"]
    # What the service keeps for itself (the search vector, the similar-tasks terms) is not shown.
    # The status as reads show it, in the stored one's place.
    readonly_fields = [("shown_status" if f.name == "status" else f.name) for f in Task._meta.concrete_fields
                       if not f.generated and f.name not in ("search", "title_terms")] + ["waits_on", "blocks"]

    # Kept for the record, not what a steward reads a task for: folded away on its page.
    internals = ["received_seq", "payload_sha256", "conflict_kind", "conflict_target"]

    def get_fieldsets(self, request, obj=None):
        shown = [name for name in self.readonly_fields if name not in self.internals]
        folded = [name for name in self.internals if name in self.readonly_fields]
        return [(None, {"fields": shown}), ("Internals", {"classes": ["collapse"], "fields": folded})]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """A task's page is read, not edited (changes go through the actions): titled by the task
        once (no subtitle repeating it), with no Save buttons for fields none of which can change."""
        task = self.get_object(request, object_id)
        title = {"title": f"Task #{task.number}: {task.title}", "subtitle": None} if task is not None else {}
        read_only = {"show_save": False, "show_save_and_continue": False, "show_save_and_add_another": False}
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **title, **read_only})

    def get_inline_instances(self, request, obj=None):
        """Only the inlines that have rows for this task: an empty one was a bare header."""
        inlines = super().get_inline_instances(request, obj)
        if obj is None:
            return inlines
        return [inline for inline in inlines if inline.get_queryset(request).filter(task=obj).exists()]

    def get_queryset(self, request):
        return with_shown_status(super().get_queryset(request), timezone.now()).annotate(is_blocked=blocked())

    def get_urls(self):
        return [path("duplicates/<int:space_id>/", self.admin_site.admin_view(self.duplicates),
                     name="tasks_task_duplicates"), *super().get_urls()]

    def duplicates(self, request, space_id: int):
        """A space's likely duplicate pairs (SPEC §16), most alike first, each with *Keep #n* (the
        other is superseded by it) and *Not a duplicate*: the API's commands, run as the actions
        are, under the staff user's steward member. Viewing takes the view permission, acting
        the change permission."""
        space = get_object_or_404(Space, pk=space_id)
        if not self.has_view_permission(request):
            raise PermissionDenied
        can_change = self.has_change_permission(request)
        if request.method == "POST":
            if not can_change:
                raise PermissionDenied
            # A form posts text; the commands take task numbers as numbers (SPEC §3), so what reads
            # as one is given as one and anything else reaches the command to be refused there.
            first, second, keep = (number_or_text(request.POST.get(name, "")) for name in ("first", "second", "keep"))
            actor = steward_for_admin_user(space=space, username=request.user.get_username())
            try:
                if "distinct" in request.POST:
                    in_unit(lambda unit: commands.mark_not_duplicate(actor, unit=unit, number=first,
                                                                     data={"task": second}))
                    messages.success(request, f"Tasks {first} and {second} are distinct work: not shown again.")
                else:
                    other = second if keep == first else first
                    in_unit(lambda unit: commands.supersede_task(
                        actor, unit=unit, number=other, data={"surviving_task": keep, "reason": "likely duplicate"}))
                    messages.success(request, f"Task {other} is superseded by task {keep}.")
            except DomainError as error:
                messages.error(request, error.detail)
            back = request.POST.get("next", "")  # the board posts here and is shown again
            safe = url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()})
            return redirect(back if back and safe else request.path)
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "space": space,
                   "pairs": similarity.likely_duplicates(space), "can_change": can_change,
                   "title": f"Likely duplicates: {space.slug}"}
        return TemplateResponse(request, "admin/tasks/duplicates.html", context)

    def get_search_results(self, request, queryset, search_term: str):
        term = search_term.strip()
        if not term:
            return queryset, False
        matches = Q(search=text_query(term))
        if re.fullmatch(r"[Tt]\d{1,9}", term):
            matches |= Q(work_item_id=term.upper())
        if term.isdigit() and len(term) < 19:
            matches |= Q(number=int(term))
        return queryset.filter(matches), False

    @admin.display(description="status", ordering="status")
    def shown_status(self, task: Task) -> str:
        return TaskStatus(task.shown_status).label

    @admin.display(description="#", ordering="number")
    def task_number(self, task: Task) -> int:
        return task.number

    @admin.display(description="status", ordering="status")
    def status_and_readiness(self, task: Task) -> str:
        """The status as reads show it; an open task says whether it is ready or blocked."""
        status = self.shown_status(task)
        return f"{status}, {self.readiness(task)}" if task.shown_status == TaskStatus.OPEN else status

    @admin.display(description="ready")
    def readiness(self, task: Task) -> str:
        if task.is_blocked:
            return "blocked"
        return "ready" if task.shown_status == TaskStatus.OPEN else "—"

    class Media:
        css = {"all": ["spaces_admin/task_list.css"]}

    @admin.display(description="created", ordering="created_at")
    def created(self, task: Task) -> str:
        at = timezone.localtime(task.created_at)
        return date_format(at, "j M, H:i" if at.year == timezone.localtime().year else "j M Y")

    @admin.display(description="prio", ordering="priority")
    def shown_priority(self, task: Task) -> str:
        return f"P{task.priority}"

    @admin.display(description="slot", ordering="work_item_id")
    def slot(self, task: Task) -> str:
        return task.work_item_id or "—"

    @admin.display(description="labels")
    def label_list(self, task: Task) -> str:
        return ", ".join(task.labels) or "—"

    @admin.display(description="waits on (live blockers)")
    def waits_on(self, task: Task) -> str:
        return task_links(graph.graph_of(task)[0], task.space_id)

    @admin.display(description="blocks (live tasks waiting on it)")
    def blocks(self, task: Task) -> str:
        return task_links(graph.graph_of(task)[1], task.space_id)

    def has_add_permission(self, request) -> bool:
        return False  # tasks are created by agents through the allocation service

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # nothing is deleted: supersede, withdraw or reject instead

    def actor(self, request, task: Task):
        return steward_for_admin_user(space=task.space, username=request.user.get_username())

    def command(self, request, task: Task, command, **arguments) -> None:
        """An action on one task is the API's command, run in a unit of work of its own under the
        staff user's steward member (same lookups, refusals and history as the API)."""
        actor = self.actor(request, task)
        in_unit(lambda unit: command(actor, unit=unit, **arguments))

    def run(self, request, queryset, verb: str, action) -> None:
        done = 0
        for task in queryset.select_related("space"):
            try:
                action(task)
                done += 1
            except DomainError as error:
                messages.error(request, f"Task {task.number}: {error.detail}")
        if done:
            messages.success(request, f"{verb} {done} task(s).")

    @admin.action(description="Supersede… (choose the survivor)", permissions=["change"])
    def supersede(self, request, queryset):
        form = SupersedeForm(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            number = form.cleaned_data["surviving_task"]

            def supersede_one(task: Task) -> None:
                self.command(request, task, commands.supersede_task, number=task.number,
                             data={"surviving_task": number, "reason": form.cleaned_data["reason"]})

            self.run(request, queryset, "Superseded", supersede_one)
            return None
        # The picker: live tasks of the same space(s), the selected ones aside, newest first.
        survivors = (Task.objects.filter(space_id__in=queryset.values("space_id"), status__in=LIVE_STATUSES)
                     .exclude(pk__in=queryset.values("pk")).order_by("-number")[:SURVIVOR_CHOICES])
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "form": form,
                   "tasks": queryset, "survivors": survivors, "title": "Supersede leftover duplicates",
                   "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME}
        return TemplateResponse(request, "admin/tasks/supersede.html", context)

    @admin.action(description="Approve the proposal (it may start)", permissions=["change"])
    def approve(self, request, queryset) -> None:
        """SPEC §21: a proposed task approved, as a steward approves it over the API."""
        self.run(request, queryset, "Approved", lambda task: self.command(
            request, task, commands.approve_task, number=task.number))

    @admin.action(description="Refuse the proposal (not to be done)", permissions=["change"])
    def refuse(self, request, queryset) -> None:
        self.run(request, queryset, "Refused", lambda task: self.command(
            request, task, commands.refuse_task, number=task.number, data={"reason": "admin"}))

    @admin.action(description="Unpark (back in the queue)", permissions=["change"])
    def unpark(self, request, queryset) -> None:
        """SPEC §22: a parked task opened again, as a steward unparks it over the API."""
        self.run(request, queryset, "Unparked", lambda task: self.command(
            request, task, commands.unpark_task, number=task.number))

    @admin.action(description="Withdraw", permissions=["change"])
    def withdraw(self, request, queryset) -> None:
        self.run(request, queryset, "Withdrew", lambda task: self.command(
            request, task, commands.withdraw_task, number=task.number, data={"reason": "admin"}))

    @admin.action(description="Reject (not to be done)", permissions=["change"])
    def reject(self, request, queryset) -> None:
        self.run(request, queryset, "Rejected", lambda task: self.command(
            request, task, commands.reject_task, number=task.number, data={"reason": "admin"}))

    def has_hold_slot_permission(self, request) -> bool:
        return request.user.has_perm("allocation.add_slothold")

    @admin.action(description="Hold the slot of these tasks", permissions=["hold_slot"])
    def hold_slot(self, request, queryset) -> None:
        self.run(request, queryset, "Held the slot of", lambda task: self.command(
            request, task, commands.hold_slot, data=commands.hold_of_task(task)))
