"""The admin's index links each space's board (SPEC §14)."""
from __future__ import annotations

from django import template

from spaces.models import Space

register = template.Library()


@register.inclusion_tag("admin/boards.html", takes_context=True)
def board_links(context) -> dict:
    user = context["request"].user
    allowed = user.is_active and user.is_staff and user.has_perm("tasks.view_task")
    return {"spaces": list(Space.objects.order_by("slug").only("slug", "name")) if allowed else []}
