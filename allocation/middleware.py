"""``Idempotency-Key`` on every ``POST`` under /v1/ (SPEC §7.1).

A middleware rather than per-view code, so every POST route of every app gets the same
behaviour and no view can forget it. It runs the request as an attempt of the
idempotency runner (``allocation.runner``): the view's work and its settled answer
commit in one transaction. The runner authenticates the API key in the same round trip
as the first touch; the key is left on the request for DRF's authentication. Without a
valid key the middleware steps aside and the view answers 401.
"""
from __future__ import annotations

import json

from django.http import HttpResponse

from allocation.runner import Answer, Attempt, check_idempotency_key, run_attempt
from common.problems import PROBLEM_JSON, problem_response
from common.refusals import DomainError, InvalidRequest
from spaces.auth import bearer_token, request_api_key

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
        try:
            check_idempotency_key(idempotency_key)
        except InvalidRequest as error:
            if request_api_key(request) is None:
                return self.get_response(request)  # the view answers 401 first
            return problem_response(error)
        try:
            body = json.loads(request.body or b"null")
        except (ValueError, UnicodeDecodeError):
            return self.get_response(request)  # the view answers 400 malformed_json (or 401)

        def work(attempt: Attempt) -> Answer:
            request.spaces_api_key = attempt.api_key  # what request_api_key would have found: no second lookup
            request.idempotency_attempt = attempt
            response = self.get_response(request)
            headers = {h: response[h] for h in REPLAYED_HEADERS if response.has_header(h)}
            return Answer(response.status_code, response_json(response), headers, response=response,
                          secret=getattr(response, "spaces_secret", None))

        try:
            api_key, answer = run_attempt(raw_key=raw_key, idempotency_key=idempotency_key, method=request.method,
                                          path=request.path, body=body, work=work)
        except DomainError as error:
            return problem_response(error)
        if answer is None:
            request.spaces_api_key = None
            return self.get_response(request)  # not a valid key: the view answers 401
        return replay(answer) if answer.replayed else answer.response


def response_json(response: HttpResponse):
    if getattr(response, "streaming", False):
        return None
    try:
        return json.loads(response.content or b"null")
    except (ValueError, UnicodeDecodeError):
        return None


def replay(answer: Answer) -> HttpResponse:
    content_type = PROBLEM_JSON if answer.status >= 400 else "application/json"
    content = b"" if answer.body is None else json.dumps(answer.body).encode()
    response = HttpResponse(content, status=answer.status, content_type=content_type)
    for name, value in answer.headers.items():
        response[name] = value
    response["Idempotent-Replayed"] = "true"
    return response
