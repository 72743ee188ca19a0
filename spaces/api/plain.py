"""The plain path: the API's busiest routes answer ordinary requests without DRF's request machinery.

DRF wraps every request (negotiation, parsers, authentication and permission classes,
response finalizing), and on a route whose own work is one or two SQL statements that
machinery cost about a tenth of the CPU. A view that names ``plain_methods`` and
overrides ``plain()`` answers such requests itself, with the same services, the same key
check and permission rule, the same serializers and the same renderer, so a client sees
the same answer either way. Whatever is not plainly ordinary (a query string, a non-JSON
Accept or Content-Type, no valid key, another space, too low a role, a body ``plain()``
declines) goes through DRF as before, which answers it, refusals included.

What DRF's ``initial()`` would add beyond that is nothing here: no throttles or
versioning are configured. Whoever configures them must add them to this path too.
"""
from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from rest_framework.renderers import JSONRenderer

from spaces.api.problems import PROBLEM_JSON
from spaces.auth import request_api_key
from spaces.errors import DomainError
from spaces.models import ApiKey
from spaces.permissions import refusal

PLAIN_ACCEPT = ("*/*", "application/json", "")
NOT_JSON = object()


def plain_caller(request: HttpRequest, *, slug: str | None, required: str) -> ApiKey | None:
    """The request's live key if it may call this route; None when DRF should answer instead."""
    if request.META.get("QUERY_STRING") or request.META.get("HTTP_ACCEPT", "*/*") not in PLAIN_ACCEPT:
        return None
    api_key = request_api_key(request)
    if api_key is None or refusal(api_key, slug=slug, required=required) is not None:
        return None
    return api_key


def reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def json_body(request: HttpRequest) -> Any:
    """The body as DRF's JSON parser reads it (strict: no NaN or Infinity); NOT_JSON when it is
    not a JSON request at all, so DRF gives its own 400 or 415. An empty body is ``{}``."""
    if request.content_type != "application/json":
        return NOT_JSON
    if not request.body.strip():
        return {}
    try:
        return json.loads(request.body, parse_constant=reject_constant)
    except (ValueError, UnicodeDecodeError):
        return NOT_JSON


def render(body: Any, *, status: int, allow: str, headers: dict[str, str] | None = None,
           content_type: str = "application/json") -> HttpResponse:
    """What DRF's JSONRenderer and finalize_response would send for this body."""
    response = HttpResponse(JSONRenderer().render(body), status=status, content_type=content_type)
    for name, value in (headers or {}).items():
        response[name] = value
    response["Allow"] = allow
    return response


def render_refusal(error: DomainError, *, allow: str) -> HttpResponse:
    """A refusal, as spaces.api.problems.exception_handler renders it on the DRF path."""
    return render(error.as_body(), status=error.http_status, allow=allow, headers=error.headers,
                  content_type=PROBLEM_JSON)
