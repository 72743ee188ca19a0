"""Each request measured and logged (SPEC §20): the Prometheus counters and histograms of
``telemetry.counters``, and one JSON line on the ``spaces.requests`` logger — time, request
id, method, route template, status, milliseconds, space and key prefix; never a key, a
secret or a body. An incoming ``X-Request-ID`` (or the trace id of a W3C ``traceparent``) is
kept as the request's id, else one is made; the answer echoes it in ``X-Request-ID``."""
from __future__ import annotations

import json
import os
import logging
import re
import time
from datetime import datetime, timezone
from typing import Callable

from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, ResolverMatch, resolve

from telemetry import counters, tracing

log = logging.getLogger("spaces.requests")

REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
TRACEPARENT = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}")
KEY_PREFIX = re.compile(r"Bearer sk_([a-z0-9]+)_")


def request_id(request: HttpRequest) -> str:
    # META, not request.headers: that one is built from every header on first use.
    given = request.META.get("HTTP_X_REQUEST_ID", "")
    if REQUEST_ID.fullmatch(given):
        return given
    trace = TRACEPARENT.fullmatch(request.META.get("HTTP_TRACEPARENT", "").strip())
    if trace and trace.group(1) != "0" * 32:
        return trace.group(1)
    return os.urandom(16).hex()  # as random as uuid4().hex, without building a UUID


def refusal_code(response: HttpResponse) -> str:
    """The ``code`` (or ``error``) of a refusal's problem body; "" when it has none."""
    data = getattr(response, "data", None)
    if data is None and response.get("Content-Type", "").startswith(("application/json", "application/problem")) \
            and not response.streaming and len(response.content) < 65536:
        try:
            data = json.loads(response.content)
        except ValueError:
            data = None
    if isinstance(data, dict):
        return str(data.get("code") or data.get("error") or "")[:64]
    return ""


def route_of(path: str) -> ResolverMatch | None:
    try:
        return resolve(path)
    except Resolver404:
        return None


class RequestTelemetryMiddleware:
    """The outermost middleware: it sees every request and the answer finally sent."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.request_id = request_id(request)
        started = time.monotonic()
        response = self.get_response(request)
        elapsed = time.monotonic() - started
        match = request.resolver_match or route_of(request.path_info)  # a replay is answered before routing
        route = "/" + match.route if match is not None and match.route else "unmatched"
        status = response.status_code
        counters.child(counters.REQUESTS, route, request.method, str(status)).inc()
        counters.child(counters.LATENCY, route, request.method).observe(elapsed)
        code = refusal_code(response) if status >= 400 else ""
        if code:
            counters.child(counters.REFUSALS, str(status), code).inc()
        if response.get("Idempotent-Replayed") == "true":
            counters.REPLAYS.inc()
        counters.note_pool()
        tracing.annotate(request, match)
        response["X-Request-ID"] = request.request_id
        if log.isEnabledFor(logging.INFO):
            key = KEY_PREFIX.match(request.META.get("HTTP_AUTHORIZATION", ""))
            log.info(json.dumps({
                "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
                "request_id": request.request_id, "method": request.method, "route": route, "status": status,
                "ms": round(elapsed * 1000, 1), "space": (match.kwargs.get("slug") if match is not None else None),
                "key": key.group(1) if key else None, **({"code": code} if code else {}),
            }, separators=(",", ":")))
        return response
