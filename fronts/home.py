"""The front door: ``/`` is a page for people (the API lives under ``/v1/``), and the site's icon.

Anyone sees where to go (the API's docs and reference, the admin); a staff user who may view
tasks also sees every space with a link to its board (SPEC §14).
"""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

from spaces.models import Space

# A small square in the board's blue with an "S": served as an SVG, which browsers take for
# /favicon.ico as for any icon link.
ICON = (b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
        b'<rect width="32" height="32" rx="6" fill="#2f6fdf"/>'
        b'<text x="16" y="23" font-family="sans-serif" font-size="20" font-weight="700" fill="#fff" '
        b'text-anchor="middle">S</text></svg>')


def may_see_boards(request: HttpRequest) -> bool:
    user = request.user
    return user.is_active and user.is_staff and user.has_perm("tasks.view_task")


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    spaces = list(Space.objects.order_by("slug").only("slug", "name")) if may_see_boards(request) else None
    return render(request, "home.html", {"spaces": spaces})


@require_safe
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> HttpResponse:
    return HttpResponse(ICON, content_type="image/svg+xml")
