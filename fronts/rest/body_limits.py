"""What every API request must be before anything reads it (SPEC §3): at most 1 MiB of body
however it is sent (chunked included), JSON nested at most 64 levels deep, and no NUL in
its path or query. Each breach is a clear 4xx, never a 500."""
from __future__ import annotations

import io

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream

from common.json_input import MAX_JSON_DEPTH, json_depth_exceeds
from common.problems import problem_response
from common.refusals import InvalidRequest, MalformedJson, NotFound, PayloadTooLarge

MAX_PATH = 500  # no route's path is longer (slugs ≤ 64, ids ≤ 19 digits); an operation stores its path
GUARDED = ("/v1/", "/mcp")


class RequestBodyLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path.startswith(GUARDED):
            return self.get_response(request)
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if "\x00" in request.path or len(request.path) > MAX_PATH:
            return problem_response(NotFound("No such route. The API lives under /v1/; see /v1/docs."))
        if any("\x00" in name or any("\x00" in value for value in values) for name, values in request.GET.lists()):
            return problem_response(InvalidRequest("The query string holds a NUL character.",
                                                   fields={"query": ["No NUL characters."]}))
        if request.META.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked" and not request.META.get("CONTENT_LENGTH"):
            # The server hands a chunked body over without a length, which Django reads as empty:
            # read what arrives, up to the limit, and let everything after read that.
            data = request.META["wsgi.input"].read(limit + 1)
            if len(data) > limit:
                return problem_response(PayloadTooLarge(f"The body has more than {limit} bytes; the limit is {limit}."))
            request._stream = LimitedStream(io.BytesIO(data), len(data))
            request.META["CONTENT_LENGTH"] = str(len(data))
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit:
            return problem_response(PayloadTooLarge(f"The body has {length} bytes; the limit is {limit}."))
        if length and request.method in ("POST", "PUT", "PATCH") and json_depth_exceeds(request.body):
            return problem_response(MalformedJson(f"The body nests JSON more than {MAX_JSON_DEPTH} levels deep."))
        return self.get_response(request)
