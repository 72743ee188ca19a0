"""A client's address, as rate limits count it (SPEC §3 Abuse): the peer's, or, when the peer is
one of ``SPACES_TRUSTED_PROXIES``, the nearest address in ``X-Forwarded-For`` that is not a
trusted proxy."""
from __future__ import annotations

from django.conf import settings


def client_address(request) -> str:
    peer = request.META.get("REMOTE_ADDR", "")
    trusted = set(settings.SPACES_TRUSTED_PROXIES)
    if peer not in trusted:
        return peer
    forwarded = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    for hop in reversed(forwarded):
        if hop not in trusted:
            return hop[:128]
    return peer
