"""Stewards' pages for spaces, the catalog, members and keys (SPEC §5.3).

Every change goes through ``spaces.services``: the admin holds no rules of its own. (The
bind preview on a space's page is allocation's: ``fronts.admin.allocation``.)
"""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.utils import timezone
from django.utils.html import format_html

from common.refusals import DomainError
from spaces import services
from spaces.catalog import normalize_work_item_id, parse_title_and_aliases
from spaces.models import ApiKey, CharterItem, Member, Post, Space


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
class SpaceAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "catalog_size", "task_claim_hours", "confirmations_required"]
    search_fields = ["slug", "name"]
    inlines = [CharterItemInline]
    readonly_fields = ["catalog_version", "task_counter", "created_at"]
    # Every setting a steward may change over the API, and nothing else writable (one list).
    fields = ["slug", *services.SPACE_SETTINGS, "catalog_version", "task_counter", "created_at"]

    @admin.display(description="catalog rows")
    def catalog_size(self, space: Space) -> int:
        return space.charter_items.count()

    def save_model(self, request, obj: Space, form, change: bool) -> None:
        settings = {name: form.cleaned_data[name] for name in services.SPACE_SETTINGS if name in form.cleaned_data}
        if change:
            services.update_space(space=obj, **settings)
        else:
            created = services.create_space(slug=obj.slug, name=obj.name)
            settings.pop("name", None)
            services.update_space(space=created, **settings)
            obj.pk = created.pk
            obj.refresh_from_db()

    def save_formset(self, request, form, formset, change: bool) -> None:
        # Catalog rows go through the service, which bumps the catalog version that keeps
        # every server process's bind index current.
        space = form.instance
        with transaction.atomic():
            for inline in formset.forms:
                data = getattr(inline, "cleaned_data", None)
                if not data or not inline.has_changed():
                    continue
                old = data.get("id")
                if data.get("DELETE"):
                    if old is not None:
                        services.delete_charter_item(item=old)
                    continue
                if old is not None and old.work_item_id != data["work_item_id"]:
                    services.delete_charter_item(item=old)
                services.upsert_charter_item(space=space, work_item_id=data["work_item_id"],
                                             canonical_title=data["canonical_title"], aliases=data["aliases"])
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
class MemberAdmin(admin.ModelAdmin):
    list_display = ["name", "space", "role", "live_keys", "created_at"]
    list_filter = ["role", "space"]
    search_fields = ["name"]
    inlines = [ApiKeyInline]
    actions = ["issue_key", "revoke_keys"]

    @admin.display(description="live keys")
    def live_keys(self, member: Member) -> int:
        return member.api_keys.filter(ApiKey.live(timezone.now())).count()

    def save_model(self, request, obj: Member, form, change: bool) -> None:
        try:
            if change:
                services.change_role(member=obj, role=form.cleaned_data["role"])
            else:
                created = services.add_member(space=obj.space, role=obj.role, name=obj.name)
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
        for member in queryset:
            key, raw = services.issue_key(member=member)
            messages.warning(request, format_html(
                "New key for {} (generation {}), shown once: <code>{}</code>", member.name, key.generation, raw))

    @admin.action(description="Revoke every live key", permissions=["revoke_keys"])
    def revoke_keys(self, request, queryset) -> None:
        count = 0
        for key in ApiKey.objects.filter(member__in=queryset, revoked_at=None):
            services.revoke_key(key=key)
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
        for key in queryset:
            services.revoke_key(key=key)
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
        for post in queryset:
            actor = services.steward_for_admin_user(space=post.space, username=request.user.get_username())
            services.withhold_post(post=post, actor=actor)
        messages.success(request, f"Withheld {queryset.count()} post(s).")
