"""Who may call a route: the key's space first (other spaces are 404), then the role."""
from __future__ import annotations

from rest_framework import permissions

from spaces import errors
from spaces.models import ApiKey, Role
from spaces.permissions import role_refusal


def refusal(api_key: ApiKey, *, slug: str | None, required: str) -> errors.DomainError | None:
    """Why this key may not call a route in space ``slug`` needing role ``required``; None if it may.

    The space check comes before the role check so a key never learns that another
    space exists (SPEC §2: 404, never 403).
    """
    if slug is not None and slug != api_key.space.slug:
        return errors.NotFound("No such space.")
    return role_refusal(api_key.member, required)


class IsMember(permissions.BasePermission):
    """Any live key; a ``slug`` in the route must be the key's own space.

    Views name the role each method needs in ``required_roles`` (default: reader).
    """

    def has_permission(self, request, view) -> bool:
        if request.auth is None:  # no key: the view's challenge says how to authenticate (RFC 6750, 9728)
            raise errors.Unauthenticated(headers={"WWW-Authenticate": view.get_authenticate_header(request)})
        required = getattr(view, "required_roles", {}).get(request.method, Role.READER)
        error = refusal(request.auth, slug=view.kwargs.get("slug"), required=required)
        if error is not None:
            raise error
        return True
