"""Every mutating request under /v1/ is one unit of work (SPEC §7.1), run by ``commands.unit``.

A middleware rather than per-view code, so every route of every app gets the same
transaction and no view can forget it: the view's work (and, under an ``Idempotency-Key``,
its settled answer) commit together. With an ``Idempotency-Key`` on a ``POST`` the runner
authenticates the API key in the same round trip as the first touch; the key is left on
the request for DRF's authentication. Without a valid key the unit has no operation and the
view answers 401.
"""
from __future__ import annotations

import json
import logging
import socket
from typing import Callable

from django.db import connection
from django.http import HttpResponse

from commands.unit import Answer, ClientGone, Idempotent, UnitOfWork, run_unit
from common import json_input
from common.idempotency_keys import check_idempotency_key
from common.problems import DATABASE_AWAY, PROBLEM_JSON, error_summary, problem_response
from common.refusals import DomainError, InvalidRequest, ServiceUnavailable
from fronts.rest.authentication import bearer_token, request_api_key

log = logging.getLogger("spaces.units")
# The headers that describe an answer, replayed with it (SPEC §7.1).
REPLAYED_HEADERS = ("Content-Type", "Allow", "Retry-After", "Location")
MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def unit_of(request) -> UnitOfWork:
    """The unit of work a mutating request runs in (DRF's request or Django's)."""
    return getattr(request, "_request", request).unit_of_work


class UnitOfWorkMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method not in MUTATING or not request.path.startswith("/v1/"):
            return self.get_response(request)
        try:
            return self.in_unit(request)
        except DATABASE_AWAY as error:
            # The database is away (its own answer, or the view's, could not be had): SPEC §3's
            # 503 with Retry-After. Nothing of the unit committed; a retry is safe. The connection
            # is no use any more (its state is unknown): the next request opens another.
            log.warning("%s %s: the database did not answer (%s)", request.method, request.path, error_summary(error))
            connection.close()
            return problem_response(ServiceUnavailable())

    def in_unit(self, request):
        idempotent = self.idempotent(request)
        if isinstance(idempotent, HttpResponse):
            return idempotent
        if idempotent is None:
            # The API key is looked up before the unit begins: a read (and a dated last use)
            # that needs none of its transaction. Under an Idempotency-Key the first touch
            # authenticates, in the unit.
            request_api_key(request)

        def work(unit: UnitOfWork) -> Answer:
            request.unit_of_work = unit
            if unit.api_key is not None:
                request.spaces_api_key = unit.api_key  # what request_api_key would have found: no second lookup
            response = self.get_response(request)
            if unit.operation is None:
                return Answer(response.status_code, None, response=response)
            headers = {h: response[h] for h in REPLAYED_HEADERS if response.has_header(h)}
            return Answer(response.status_code, response_json(response), headers, response=response,
                          secret=getattr(response, "spaces_secret", None), content=response_text(response))

        try:
            caller = getattr(request, "spaces_api_key", None)
            api_key, answer = run_unit(work, idempotent=idempotent, client_gone=client_gone(request),
                                       caller_key=caller.pk if caller is not None else None)
        except DomainError as error:
            return problem_response(error)
        except ClientGone:
            # No one to answer: nginx's 499 "client closed request", for the access log only.
            log.info("%s %s: the client hung up while it waited; nothing claimed", request.method, request.path)
            return HttpResponse(status=499)
        if answer is None:
            request.spaces_api_key = None  # not a valid key: the view answers 401, in a unit of its own
            _, answer = run_unit(work)
        return replay(answer) if answer.replayed else answer.response

    def idempotent(self, request) -> Idempotent | HttpResponse | None:
        """What the request's ``Idempotency-Key`` brings, a refusal of it, or None (no key, or
        one the view must answer first: no bearer key, a body that is not JSON)."""
        idempotency_key = request.headers.get("Idempotency-Key")
        if request.method != "POST" or idempotency_key is None:
            return None
        raw_key = bearer_token(request.META.get("HTTP_AUTHORIZATION", ""))
        if raw_key is None:
            return None  # the view answers 401 (or, for /v1/join, keeps its own key: JoinRedemption)
        try:
            check_idempotency_key(idempotency_key)
        except InvalidRequest as error:
            if request_api_key(request) is None:
                return None  # the view answers 401 first
            return problem_response(error)
        try:
            body = json_input.loads(request.body or b"null")
        except (ValueError, UnicodeDecodeError):
            return None  # the view answers 400 malformed_json (or 401)
        return Idempotent(raw_key=raw_key, key=idempotency_key, method=request.method, path=request.path, body=body)


def client_gone(request) -> Callable[[], bool] | None:
    """Whether the caller hung up, read off the client's socket without waiting, where the
    server hands it over (gunicorn does); None where it cannot be told."""
    sock = request.META.get("gunicorn.socket")
    if sock is None:
        return None

    def gone() -> bool:
        try:
            return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""  # end of stream: closed
        except (BlockingIOError, InterruptedError):
            return False  # open, nothing sent: still waiting for its answer
        except OSError:
            return True  # reset, or closed here
    return gone


def response_json(response: HttpResponse):
    if getattr(response, "streaming", False):
        return None
    try:
        return json.loads(response.content or b"null")
    except (ValueError, UnicodeDecodeError):
        return None


def response_text(response: HttpResponse) -> str | None:
    """The body as sent, when it is text to keep (a JSON answer is UTF-8)."""
    if getattr(response, "streaming", False):
        return None
    try:
        return response.content.decode("utf-8")
    except UnicodeDecodeError:
        return None


def replay(answer: Answer) -> HttpResponse:
    """The stored answer: the same status, headers and body, byte for byte; one rendered again
    only when it carried a secret (its fresh one) or was stored before bodies were kept as sent."""
    content_type = PROBLEM_JSON if answer.status >= 400 else "application/json"
    if answer.content is not None:
        content = answer.content.encode("utf-8")
    else:
        content = b"" if answer.body is None else json.dumps(answer.body, ensure_ascii=False,
                                                            separators=(",", ":")).encode()
    response = HttpResponse(content, status=answer.status, content_type=content_type)
    for name, value in answer.headers.items():
        response[name] = value
    response["Idempotent-Replayed"] = "true"
    return response
