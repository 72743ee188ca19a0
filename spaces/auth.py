"""``Authorization: Bearer <key>`` authentication for the API (SPEC §2)."""
from __future__ import annotations

from rest_framework import authentication, exceptions

from spaces.services import authenticate_key


def bearer_token(header: str) -> str | None:
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """Sets ``request.user`` to the Member and ``request.auth`` to the ApiKey."""

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        # The idempotency middleware may have authenticated this request already.
        key = getattr(request._request, "spaces_api_key", None)
        if key is None:
            token = bearer_token(header)
            key = authenticate_key(token) if token else None
        if key is None:
            # Revoked and expired keys land here on their very next request.
            raise exceptions.AuthenticationFailed("This API key is not valid (unknown, revoked or expired).")
        return key.member, key

    def authenticate_header(self, request) -> str:
        # Makes DRF answer 401 (not 403) when no key was sent.
        return 'Bearer realm="spaces"'
