"""Refuse request bodies over 1 MiB before anything reads them (SPEC §3)."""
from __future__ import annotations

from django.conf import settings

from common.problems import problem_response
from spaces import errors


class RequestBodyLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > settings.DATA_UPLOAD_MAX_MEMORY_SIZE and request.path.startswith("/v1/"):
            return problem_response(
                errors.PayloadTooLarge(f"The body has {length} bytes; the limit is {settings.DATA_UPLOAD_MAX_MEMORY_SIZE}.")
            )
        return self.get_response(request)
