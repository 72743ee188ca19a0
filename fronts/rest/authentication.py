"""``Authorization: Bearer <key>`` authentication for the API (SPEC §2)."""
from __future__ import annotations

import hashlib

from django.conf import settings
from rest_framework import authentication, exceptions

from fronts.client_address import client_address
from spaces import throttles
from spaces.models import ApiKey
from spaces.key_lookup import authenticate_key, split_key


def bearer_token(header: str) -> str | None:
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def request_api_key(request) -> ApiKey | None:
    """The live key a Django request's ``Authorization: Bearer`` names, or None.

    Looked up once a request: the idempotency middleware and DRF's
    authentication all ask, and the answer is kept on the request.
    """
    if not hasattr(request, "spaces_api_key"):
        token = bearer_token(request.META.get("HTTP_AUTHORIZATION", ""))
        if not token or throttles.VERDICTS.seconds_left("bad_token", refused_token(request, token)) is not None:
            request.spaces_api_key = None  # refused this minute already: no lookup
        else:
            request.spaces_api_key = authenticate_key(token)
    return request.spaces_api_key


def refused_token(request, token: str) -> str:
    """How a refused token is remembered: by address and a digest (the token itself is not kept)."""
    return f"{client_address(request)} {hashlib.sha256(token.encode()).hexdigest()[:32]}"


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """Sets ``request.user`` to the Member and ``request.auth`` to the ApiKey."""

    def authenticate(self, request):
        if not request.META.get("HTTP_AUTHORIZATION", ""):
            return None
        key = request_api_key(request._request)  # may have been looked up already this request
        if key is None:
            token = bearer_token(request.META.get("HTTP_AUTHORIZATION", "")) or ""
            if split_key(token) is None:  # malformed: it named no key, and cost no statement
                raise exceptions.AuthenticationFailed("This is not an API key (sk_<prefix>_<secret>).")
            # A key that failed fails for the rest of the minute too (its secret does not change):
            # asked again from this address, it is refused without a lookup.
            throttles.VERDICTS.remember("bad_token", refused_token(request._request, token), throttles.seconds_to_minute_end())
            refused = throttles.hit("bad_key", client_address(request._request),
                                    settings.SPACES_BAD_KEY_LIMIT_PER_MINUTE)
            if refused is not None:
                raise refused
            # Revoked and expired keys land here on their very next request.
            raise exceptions.AuthenticationFailed("This API key is not valid (unknown, revoked or expired).")
        cap = key.space.requests_per_minute
        if cap is not None and not getattr(request._request, "spaces_counted", False):
            # Once a request: a waiting next runs its view again each time it is woken.
            request._request.spaces_counted = True
            refused = throttles.hit("key", key.prefix, cap)
            if refused is not None:
                raise refused
        return key.member, key

    def authenticate_header(self, request) -> str:
        # Makes DRF answer 401 (not 403) when no key was sent.
        return 'Bearer realm="spaces"'
