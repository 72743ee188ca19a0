"""Refusals as A2A errors (SPEC §18): the A2A error a refusal maps to, carrying the REST
problem body as its data, so a requester reads the same ``code`` and ``fields`` REST sends."""
from __future__ import annotations

from typing import Any

from a2a.utils import errors as a2a
from a2a.utils.error_handlers import build_error_details, build_rest_error_payload

from common.refusals import DomainError


class Refusal(Exception):
    """An operation's refusal, as the A2A error both bindings send."""

    def __init__(self, error: a2a.A2AError) -> None:
        super().__init__(error.message)
        self.error = error


def refused(status: int, body: dict[str, Any], *, cancel: bool = False) -> Refusal:
    """A refusal (its HTTP status and REST problem body) as an A2A error."""
    message = str(body.get("detail") or body.get("title") or body.get("error") or "Refused.")
    if status == 404:
        kind: type[a2a.A2AError] = a2a.TaskNotFoundError
    elif cancel and status == 409:
        kind = a2a.TaskNotCancelableError
    elif status in (400, 413, 422):
        kind = a2a.InvalidParamsError
    elif status >= 500:
        kind = a2a.InternalError
    else:  # 401, 403, 409, 429: the request cannot be done as asked
        kind = a2a.InvalidRequestError
    return Refusal(kind(message, data=body))


def of_domain(error: DomainError, *, cancel: bool = False) -> Refusal:
    return refused(error.http_status, error.as_body(), cancel=cancel)


def protocol(kind: type[a2a.A2AError], message: str) -> Refusal:
    """A refusal of the protocol itself (a malformed call, an unknown method), with no REST twin."""
    return Refusal(kind(message))


def jsonrpc_body(request_id: Any, error: a2a.A2AError) -> dict[str, Any]:
    """A JSON-RPC error response, as the SDK's client reads it (``google.rpc.ErrorInfo`` in data)."""
    code = a2a.JSON_RPC_ERROR_CODE_MAP.get(type(error), -32603)
    return {"jsonrpc": "2.0", "id": request_id,
            "error": {"code": code, "message": error.message, "data": build_error_details(error)}}


def rest_body(error: a2a.A2AError) -> tuple[int, dict[str, Any]]:
    """The HTTP+JSON binding's error: its HTTP status and ``{"error": {…}}`` body. A body that is
    not JSON is INVALID_REQUEST there (JSON-RPC's parse error has no HTTP+JSON twin)."""
    if type(error) not in a2a.A2A_ERROR_MAPPING:
        error = a2a.InvalidRequestError(error.message, data=error.data)
    payload = build_rest_error_payload(error)
    return payload["error"]["code"], payload
