"""Who may call a route: the key's space first (other spaces are 404), then the role."""
from __future__ import annotations

from rest_framework import permissions

from spaces import errors
from spaces.models import ROLE_RANK, Role


class IsMember(permissions.BasePermission):
    """Any live key; a ``slug`` in the route must be the key's own space.

    Views name the role each method needs in ``required_roles`` (default: reader).
    The space check runs before the role check so a key never learns that another
    space exists (SPEC §2: 404, never 403).
    """

    def has_permission(self, request, view) -> bool:
        if request.auth is None:
            raise errors.Unauthenticated()
        slug = view.kwargs.get("slug")
        if slug is not None and slug != request.auth.space.slug:
            raise errors.NotFound("No such space.")
        required = getattr(view, "required_roles", {}).get(request.method, Role.READER)
        if ROLE_RANK[request.user.role] < ROLE_RANK[required]:
            raise errors.Forbidden(f"This action needs the {required} role; your key is a {request.user.role}.")
        return True
