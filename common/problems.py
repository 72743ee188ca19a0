"""Render every refusal as ``application/problem+json`` (SPEC §3).

One exception handler for DRF, plus JSON handlers for what Django answers itself
(unknown routes, oversized bodies, crashes), all built from the one refusal registry.
"""
from __future__ import annotations

import logging
import sys
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import InterfaceError, InternalError, OperationalError
from django.http import Http404, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions as drf

from common import refusals as errors

PROBLEM_JSON = "application/problem+json"
logger = logging.getLogger("spaces.errors")


def problem_response(error: errors.DomainError) -> JsonResponse:
    """The one renderer of a refusal: SPEC §3's problem JSON with the refusal's headers."""
    response = JsonResponse(error.as_body(), status=error.http_status, content_type=PROBLEM_JSON)
    for name, value in error.headers.items():
        response[name] = value
    return response


def flatten_validation(detail: Any) -> dict[str, list[str]] | list[str]:
    if isinstance(detail, dict):
        return {str(k): flatten_validation(v) for k, v in detail.items()}
    if isinstance(detail, list):
        if all(not isinstance(v, (dict, list)) for v in detail):
            return [str(v) for v in detail]
        return [flatten_validation(v) for v in detail]
    return [str(detail)]


def error_summary(error: BaseException) -> str:
    """An error's first line (a database error's message runs on with hints), or its class name."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


# The database could not be reached or dropped the connection (SPEC §3: 503, not 500).
# OperationalError is PostgreSQL's class for "the operation could not run now", which a retry
# may change; InterfaceError, a connection already closed; InternalError, a connection whose
# protocol state went wrong under it (psycopg's "received 2 results from command 'BEGIN'" when
# a pooler's server connection went away mid-exchange) or the server's own internal error:
# neither is the request's fault, and a retry on a new connection may succeed.
DATABASE_AWAY = (OperationalError, InterfaceError, InternalError)


def database_away(exc: BaseException | None) -> bool:
    return isinstance(exc, DATABASE_AWAY)


def translate(exc: Exception) -> errors.DomainError | None:
    """Map framework exceptions onto the registry's refusals."""
    if isinstance(exc, errors.DomainError):
        return exc
    if isinstance(exc, drf.ValidationError):
        fields = flatten_validation(exc.detail)
        if not isinstance(fields, dict):
            fields = {"non_field_errors": fields}
        return errors.InvalidRequest("The request has invalid fields; see `fields`.", fields=fields)
    if isinstance(exc, drf.ParseError):
        return errors.MalformedJson(f"The body is not valid JSON: {exc.detail}")
    if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
        # The view's own challenge (DRF sets it from get_authenticate_header): /mcp's names its
        # resource metadata (SPEC §23).
        challenge = getattr(exc, "auth_header", None) or 'Bearer realm="spaces"'
        return errors.Unauthenticated(str(exc.detail), headers={"WWW-Authenticate": challenge})
    if isinstance(exc, (drf.PermissionDenied, DjangoPermissionDenied)):
        return errors.Forbidden()
    if isinstance(exc, (drf.NotFound, Http404)):
        return errors.NotFound()
    if isinstance(exc, drf.MethodNotAllowed):
        return errors.MethodNotAllowed(str(exc.detail))
    if isinstance(exc, drf.UnsupportedMediaType):
        return errors.UnsupportedMediaType(str(exc.detail))
    if isinstance(exc, drf.Throttled):
        wait_ms = int((exc.wait or 1) * 1000)
        return errors.RateLimited(retry_after_ms=wait_ms, headers={"Retry-After": str(max(1, wait_ms // 1000))})
    if database_away(exc):
        return errors.ServiceUnavailable()
    if isinstance(exc, drf.NotAcceptable):
        return errors.InvalidRequest("This route answers JSON only.", fields={"Accept": ["Use application/json."]})
    return None


def exception_handler(exc: Exception, context: dict) -> JsonResponse | None:
    """DRF's handler: the same renderer as everywhere else (DRF passes a plain response through)."""
    error = translate(exc)
    if error is None:
        return None  # an unexpected exception: Django's handler500 renders it as JSON
    return problem_response(error)


@csrf_exempt  # a POST to an unknown /v1/ route is a 404, not a CSRF page: API keys are not cookies
def not_found_view(request, exception=None) -> JsonResponse:
    return problem_response(errors.NotFound("No such route. The API lives under /v1/; see /v1/docs."))


def bad_request_view(request, exception=None) -> JsonResponse:
    return problem_response(errors.InvalidRequest("The request could not be read.", fields={}))


def permission_denied_view(request, exception=None) -> JsonResponse:
    return problem_response(errors.Forbidden())


def server_error_view(request) -> JsonResponse:
    """What Django answers for an exception nothing else rendered (it is still being handled):
    503 when the database is away, else 500."""
    if database_away(sys.exc_info()[1]):
        return problem_response(errors.ServiceUnavailable())
    return problem_response(errors.ServerError())
