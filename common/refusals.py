"""Refusals: typed domain errors and the one registry of refusal codes (SPEC §3, §10),
with the protocol-level refusals every app raises.

Each ``DomainError`` subclass that sets ``code`` registers itself. The exception handler
renders any of them as ``application/problem+json`` and ``GET /v1/reference?section=
refusals`` lists the same registry, so the documentation cannot drift from the code.
Domain code raises these; it never imports DRF.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class Refusal:
    code: str  # the specific code (``code`` field, or ``error`` when they coincide)
    error: str  # the ``error`` field of the body
    http_status: int
    title: str
    meaning: str


REFUSALS: dict[str, Refusal] = {}


def register_refusal(*, code: str, http_status: int, title: str, meaning: str, error: str | None = None) -> Refusal:
    refusal = Refusal(code=code, error=error or code, http_status=http_status, title=title, meaning=meaning)
    existing = REFUSALS.get(code)
    if existing is not None and existing != refusal:
        raise RuntimeError(f"refusal code {code!r} registered twice with different meanings")
    REFUSALS[code] = refusal
    return refusal


class DomainError(Exception):
    """A refusal the service gives on purpose. Subclasses set the class attributes."""

    code: ClassVar[str]
    error: ClassVar[str | None] = None  # set when the body's ``error`` differs from ``code``
    http_status: ClassVar[int]
    title: ClassVar[str]
    meaning: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "code" in cls.__dict__:
            register_refusal(
                code=cls.code, error=cls.error, http_status=cls.http_status, title=cls.title, meaning=cls.meaning
            )

    def __init__(self, detail: str | None = None, *, headers: dict[str, str] | None = None, **extra: Any) -> None:
        self.detail = detail or self.meaning
        self.extra = extra
        self.headers = headers or {}
        super().__init__(self.detail)

    def as_body(self) -> dict[str, Any]:
        """The JSON body of SPEC §3: error, detail, the section's extra fields, RFC 9457 members."""
        body: dict[str, Any] = {"error": self.error or self.code}
        if self.error and self.error != self.code:
            body["code"] = self.code
        body["detail"] = self.detail
        body.update(self.extra)
        body.update(problem_members(self.code, self.http_status, self.title))
        return body


def problem_members(code: str, status: int, title: str) -> dict[str, Any]:
    return {"type": f"/v1/reference?section=refusals#{code}", "title": title, "status": status}


# --- Protocol-level refusals (raised by the HTTP layer, listed with the rest). ---------------


class InvalidRequest(DomainError):
    code = "invalid_request"
    http_status = 422
    title = "Invalid request"
    meaning = "A field is missing, has the wrong type or breaks a limit; `fields` says which and why."


class MalformedJson(DomainError):
    code = "malformed_json"
    http_status = 400
    title = "Malformed JSON"
    meaning = "The request body is not valid JSON."


class Unauthenticated(DomainError):
    code = "unauthenticated"
    http_status = 401
    title = "Unauthenticated"
    meaning = "No valid API key: send `Authorization: Bearer <key>`; revoked or expired keys answer this too."


class Forbidden(DomainError):
    code = "forbidden"
    http_status = 403
    title = "Forbidden"
    meaning = "Your role in this space does not allow this action."


class NotFound(DomainError):
    code = "not_found"
    http_status = 404
    title = "Not found"
    meaning = "No such resource in your space (other spaces' resources answer this too)."


class MethodNotAllowed(DomainError):
    code = "method_not_allowed"
    http_status = 405
    title = "Method not allowed"
    meaning = "This route does not accept that HTTP method."


class UnsupportedMediaType(DomainError):
    code = "unsupported_media_type"
    http_status = 415
    title = "Unsupported media type"
    meaning = "Send JSON with `Content-Type: application/json`."


class PayloadTooLarge(DomainError):
    code = "payload_too_large"
    http_status = 413
    title = "Payload too large"
    meaning = "A request body is at most 1 MiB."


class RateLimited(DomainError):
    code = "rate_limited"
    http_status = 429
    title = "Too many requests"
    meaning = "Slow down and retry after `retry_after_ms`."


class ServerError(DomainError):
    code = "server_error"
    http_status = 500
    title = "Server error"
    meaning = "The server failed; the request can be retried with the same Idempotency-Key."


class IdempotencyKeyReused(DomainError):
    code = "idempotency_key_reused"
    http_status = 422
    title = "Idempotency-Key reused"
    meaning = "This Idempotency-Key was first used with another request (method, path or body): use a new key."


DATABASE_RETRY_AFTER_SECONDS = 2


class ServiceUnavailable(DomainError):
    code = "service_unavailable"
    http_status = 503
    title = "Service unavailable"
    meaning = ("The database cannot be reached right now (a restart, a failover): retry after `Retry-After` "
               "seconds; with an Idempotency-Key the retry is safe.")

    def __init__(self, detail: str | None = None, **extra: Any) -> None:
        super().__init__(detail, headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)}, **extra)

