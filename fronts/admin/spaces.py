"""Stewards' pages for spaces, the catalog, members and keys (SPEC §5.3).

Every change is the API's command (``spaces.commands``), run in a unit of work of its own
as the staff user's steward member: the admin holds no rules of its own. A form's save is not
wrapped in the admin's transaction (``OwnUnits``): the command's unit owns it, as a request's
does. (The bind preview on a space's page is allocation's: ``fronts.admin.allocation``.)
"""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.utils import timezone
from django.utils.html import format_html

from commands.base import Command
from commands.unit import in_unit
from common.refusals import DomainError
from spaces import commands
from spaces.catalog import normalize_work_item_id, parse_title_and_aliases
from spaces.models import SPACE_SETTINGS, ApiKey, CharterItem, Member, Post, Space


def run(request, space: Space, command: Command, data: dict | None = None, **lookups) -> None:
    """``command`` in a unit of work of its own, as the staff user's steward member of ``space``."""
    in_unit(lambda unit: command(commands.steward_for_admin_user(space=space, username=request.user.get_username()),
                                 unit=unit, data=data, **lookups))


class OwnUnits:
    """A change form whose saves are commands: each runs in its own unit of work, which begins
    its own transaction (durable), so the form's view is not wrapped in one (Django's
    ``changeform_view`` is ``_changeform_view`` in a transaction, and nothing else)."""

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        return self._changeform_view(request, object_id, form_url, extra_context)


class AliasesField(forms.CharField):
    """Aliases edited one per line."""

    widget = forms.Textarea(attrs={"rows": 3, "cols": 40})

    def prepare_value(self, value):
        if isinstance(value, list):
            return "\n".join(value)
        return value

    def to_python(self, value):
        text = super().to_python(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]


class CharterItemForm(forms.ModelForm):
    aliases = AliasesField(required=False, help_text="One alias per line (at most 50).")

    class Meta:
        model = CharterItem
        fields = ["work_item_id", "canonical_title", "aliases"]

    def clean_work_item_id(self):
        work_item_id = normalize_work_item_id(self.cleaned_data["work_item_id"])
        if work_item_id is None:
            raise forms.ValidationError("A work item id is T followed by digits, such as T1.")
        return work_item_id

    def clean(self):
        cleaned = super().clean()
        try:
            parse_title_and_aliases(cleaned.get("canonical_title"), cleaned.get("aliases"))
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        return cleaned


class CharterItemInline(admin.TabularInline):
    model = CharterItem
    form = CharterItemForm
    extra = 1
    ordering = ["position"]


@admin.register(Space)
class SpaceAdmin(OwnUnits, admin.ModelAdmin):
    list_display = ["slug", "name", "catalog_size", "task_claim_hours", "confirmations_required"]
    search_fields = ["slug", "name"]
    inlines = [CharterItemInline]
    readonly_fields = ["catalog_version", "task_counter", "created_at"]
    # Every setting a steward may change over the API, and nothing else writable (one list).
    fields = ["slug", *SPACE_SETTINGS, "catalog_version", "task_counter", "created_at"]

    @admin.display(description="catalog rows")
    def catalog_size(self, space: Space) -> int:
        return space.charter_items.count()

    def save_model(self, request, obj: Space, form, change: bool) -> None:
        settings = {name: form.cleaned_data[name] for name in SPACE_SETTINGS if name in form.cleaned_data}
        try:
            if change:
                run(request, obj, commands.UPDATE_SPACE, data=settings)
            else:
                created = in_unit(commands.open_space, slug=obj.slug, **settings)
                obj.pk = created.pk
            obj.refresh_from_db()
        except DomainError as error:
            messages.error(request, error.detail)

    def save_formset(self, request, form, formset, change: bool) -> None:
        # Catalog rows go through the commands, whose service bumps the catalog version that
        # keeps every server process's bind index current. Each row is a unit of its own.
        space = form.instance
        for inline in formset.forms:
            data = getattr(inline, "cleaned_data", None)
            if not data or not inline.has_changed():
                continue
            old = data.get("id")
            try:
                if old is not None and (data.get("DELETE") or old.work_item_id != data["work_item_id"]):
                    run(request, space, commands.DELETE_CHARTER_ITEM, work_item_id=old.work_item_id)
                if not data.get("DELETE"):
                    run(request, space, commands.SAVE_CHARTER_ITEM, work_item_id=data["work_item_id"],
                        data={"canonical_title": data["canonical_title"], "aliases": data["aliases"]})
            except DomainError as error:
                messages.error(request, f"{data.get('work_item_id') or old}: {error.detail}")
        # What formset.save() would have recorded, for the admin's change message.
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    extra = 0
    can_delete = False
    fields = ["prefix", "generation", "created_at", "expires_at", "revoked_at", "last_used_at"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Member)
class MemberAdmin(OwnUnits, admin.ModelAdmin):
    list_display = ["name", "space", "role", "kind", "live_keys", "created_at"]
    list_filter = ["role", "kind", "space"]
    search_fields = ["name"]
    inlines = [ApiKeyInline]
    actions = ["issue_key", "revoke_keys"]

    @admin.display(description="live keys")
    def live_keys(self, member: Member) -> int:
        return member.api_keys.filter(ApiKey.live(timezone.now())).count()

    def save_model(self, request, obj: Member, form, change: bool) -> None:
        try:
            if change:
                run(request, obj.space, commands.CHANGE_MEMBER, member_id=obj.pk,
                    data={"role": form.cleaned_data["role"], "kind": form.cleaned_data["kind"]})
            else:
                created = in_unit(commands.add_member, space=obj.space, role=obj.role, name=obj.name, kind=obj.kind)
                obj.pk = created.pk
        except DomainError as error:
            messages.error(request, error.detail)

    def has_issue_keys_permission(self, request) -> bool:
        return request.user.has_perm("spaces.add_apikey")

    def has_revoke_keys_permission(self, request) -> bool:
        return request.user.has_perm("spaces.change_apikey")

    @admin.action(description="Issue a key (shown once; the oldest of two live keys is revoked)",
                  permissions=["issue_keys"])
    def issue_key(self, request, queryset) -> None:
        for member in queryset.select_related("space"):
            issued = in_unit(lambda unit: commands.ISSUE_KEY(
                commands.steward_for_admin_user(space=member.space, username=request.user.get_username()),
                unit=unit, data={}, member_id=member.pk)).body
            messages.warning(request, format_html(
                "New key for {} (generation {}), shown once: <code>{}</code>", member.name, issued["generation"],
                issued["key"]))

    @admin.action(description="Revoke every live key", permissions=["revoke_keys"])
    def revoke_keys(self, request, queryset) -> None:
        count = 0
        for key in ApiKey.objects.filter(member__in=queryset, revoked_at=None).select_related("space"):
            run(request, key.space, commands.REVOKE_KEY, prefix=key.prefix)
            count += 1
        messages.success(request, f"Revoked {count} key(s).")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["prefix", "member", "space", "generation", "expires_at", "revoked_at", "last_used_at"]
    list_filter = ["space"]
    readonly_fields = ["space", "member", "prefix", "key_hash", "generation", "created_at", "expires_at",
                       "revoked_at", "last_used_at"]
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        return False  # keys are issued from the member page (shown once)

    @admin.action(description="Revoke", permissions=["change"])
    def revoke(self, request, queryset) -> None:
        for key in queryset.select_related("space"):
            run(request, key.space, commands.REVOKE_KEY, prefix=key.prefix)
        messages.success(request, f"Revoked {queryset.count()} key(s).")


@admin.register(Post)
class PostAdmin(admin.ModelAdmin):
    list_display = ["id", "space", "author", "title", "created_at", "hidden_at", "withheld_at"]
    list_filter = ["space"]
    readonly_fields = ["space", "author", "title", "body", "created_at", "hidden_at", "withheld_at", "withheld_by"]
    actions = ["withhold"]

    def has_add_permission(self, request) -> bool:
        return False

    @admin.action(description="Withhold", permissions=["change"])
    def withhold(self, request, queryset) -> None:
        for post in queryset.select_related("space"):
            run(request, post.space, commands.WITHHOLD_POST, post_id=post.pk)
        messages.success(request, f"Withheld {queryset.count()} post(s).")
