"""``Idempotency-Key`` on every ``POST`` under /v1/ (SPEC §7.1).

A middleware rather than per-view code, so every POST route of every app gets the same
behaviour and no view can forget it. It authenticates the API key itself, in the same round
trip as the first touch (``allocation.first_touch``), and leaves the key on the request
for DRF's authentication; without a valid key it steps aside and the view answers 401.
"""
from __future__ import annotations

import json
import logging

from django.http import HttpResponse

from allocation.first_touch import authenticate_and_begin
from allocation.idempotency import abandon_operation, request_fingerprint, settle_operation
from spaces.api.problems import PROBLEM_JSON, problem_response
from spaces.auth import bearer_token, request_api_key
from spaces.errors import DomainError, InvalidRequest

logger = logging.getLogger("spaces.idempotency")
MAX_KEY_LENGTH = 255
REPLAYED_HEADERS = ("Retry-After", "Location")


class IdempotencyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        idempotency_key = request.headers.get("Idempotency-Key")
        if request.method != "POST" or idempotency_key is None or not request.path.startswith("/v1/"):
            return self.get_response(request)
        raw_key = bearer_token(request.META.get("HTTP_AUTHORIZATION", ""))
        if raw_key is None:
            return self.get_response(request)  # the view answers 401
        if not idempotency_key.strip() or len(idempotency_key) > MAX_KEY_LENGTH:
            if request_api_key(request) is None:
                return self.get_response(request)
            return problem_response(
                InvalidRequest(
                    "Idempotency-Key must be 1 to 255 characters.",
                    fields={"Idempotency-Key": [f"1 to {MAX_KEY_LENGTH} characters."]},
                )
            )
        try:
            body = json.loads(request.body or b"null")
        except (ValueError, UnicodeDecodeError):
            return self.get_response(request)  # the view answers 400 malformed_json (or 401)
        fingerprint = request_fingerprint(request.method, request.path, body)
        try:
            # The key and the first touch in one round trip (see allocation.first_touch).
            api_key, begun = authenticate_and_begin(
                raw_key=raw_key, idempotency_key=idempotency_key, method=request.method, path=request.path,
                fingerprint=fingerprint,
            )
        except DomainError as error:
            return problem_response(error)
        request.spaces_api_key = api_key  # what request_api_key would have found: no second lookup
        if begun is None:
            return self.get_response(request)  # not a valid key: the view answers 401
        operation = begun.operation
        if begun.replay:
            return replay(operation)

        request.idempotency_operation = operation
        try:
            response = self.get_response(request)
        except BaseException:
            abandon_operation(operation=operation)
            raise
        stored_body = response_json(response)
        headers = {h: response[h] for h in REPLAYED_HEADERS if response.has_header(h)}
        if not settle_operation(operation=operation, status=response.status_code, body=stored_body, headers=headers):
            logger.warning("operation %s: settlement lost its compare-and-set (lease moved on)", operation.pk)
        return response


def response_json(response: HttpResponse):
    if getattr(response, "streaming", False):
        return None
    try:
        return json.loads(response.content or b"null")
    except (ValueError, UnicodeDecodeError):
        return None


def replay(operation) -> HttpResponse:
    content_type = PROBLEM_JSON if operation.response_status >= 400 else "application/json"
    content = b"" if operation.response_body is None else json.dumps(operation.response_body).encode()
    response = HttpResponse(content, status=operation.response_status, content_type=content_type)
    for name, value in (operation.response_headers or {}).items():
        response[name] = value
    response["Idempotent-Replayed"] = "true"
    return response
