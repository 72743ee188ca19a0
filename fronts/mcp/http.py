"""``/mcp``: the MCP SDK's streamable HTTP exchange, served from a synchronous Django view.

The member's API key authenticates as on every REST route (a 401 or 403 before MCP is
spoken). Then the request goes, as an ASGI exchange, to the SDK's session manager in its
stateless JSON mode: each request is answered on its own, by whichever server process gets
it, with no session to keep. The SDK runs in an event loop of its own for the request
(``async_to_sync``); the tools' work comes back to this thread (``fronts.mcp.tools``).

The SDK is imported on the first MCP request, not when the URLs load: it costs about a second
of every process start, management commands included.
"""
from __future__ import annotations

from typing import Any

import anyio
from asgiref.sync import async_to_sync
from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.views.decorators.http import require_safe
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.request import Request
from rest_framework.views import APIView

from common.problems import problem_response
from common.refusals import Forbidden, NotFound
from fronts.rest.authentication import ApiKeyAuthentication, bearer_token
from fronts.rest.permissions import IsMember

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "upgrade", "content-length"}


def scope_of(request: Request) -> dict[str, Any]:
    """The ASGI scope of this request, as a server would build it."""
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1"))
               for name, value in request.headers.items()]
    host, _, port = request.get_host().partition(":")
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": request.method,
            "scheme": request.scheme, "path": request.path, "raw_path": request.path.encode(),
            "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"), "root_path": "",
            "headers": headers, "server": (host, int(port) if port.isdigit() else 80),
            "client": (request.META.get("REMOTE_ADDR", ""), 0)}


def exchange(scope: dict[str, Any], body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """One request through the SDK's stateless session manager: status, headers, body."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    from fronts.mcp.tools import server

    sent: dict[str, Any] = {"status": 500, "headers": [], "body": []}

    async def receive() -> dict[str, Any]:
        if not sent.get("read"):
            sent["read"] = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()  # the client stays connected until the answer is sent
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            sent["status"], sent["headers"] = message["status"], list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            sent["body"].append(message.get("body", b""))

    async def run() -> None:
        # Host and Origin are Django's to check (ALLOWED_HOSTS, and no cookies are read here).
        manager = StreamableHTTPSessionManager(
            app=server._lowlevel_server, json_response=True, stateless=True,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        async with manager.run():
            await manager.handle_request(scope, receive, send)

    async_to_sync(run)()
    return sent["status"], sent["headers"], b"".join(sent["body"])


class AnswersInJson(BaseContentNegotiation):
    """The SDK speaks for itself on a POST; what DRF answers here (a 401, a 405) is JSON,
    whatever the client accepts (an MCP client accepts text/event-stream too)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type

    def select_parser(self, request, parsers):
        return parsers[0]


def origin_allowed(request: Request) -> bool:
    """No Origin (an agent's own client), this server's own origin, or one the deployment lists."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    own = f"{request.scheme}://{request.get_host()}"
    return origin.rstrip("/").lower() in {own.lower(), *(o.rstrip("/").lower() for o in settings.SPACES_MCP_ALLOWED_ORIGINS)}


def mcp_not_found_view(request, exception=None) -> HttpResponse:
    """Any path under /mcp/ (a POST to /mcp/ included): JSON naming the endpoint, never a page."""
    return problem_response(NotFound("No such route. The MCP endpoint is /mcp, without a trailing slash."))


METADATA_PATH = "/.well-known/oauth-protected-resource"


def resource_metadata_url(request) -> str:
    """Where /mcp's protected resource metadata is (RFC 9728 §3.1: the well-known prefix, then
    the resource's path)."""
    return f"{request.scheme}://{request.get_host()}{METADATA_PATH}/mcp"


@require_safe
def protected_resource_view(request) -> JsonResponse:
    """SPEC §23, RFC 9728: what an MCP client needs to authenticate to /mcp. The bearer token is
    a member's API key, given by a steward or a join link, so there is no authorization server
    to name: ``authorization_servers`` is left out, as the RFC allows."""
    base = f"{request.scheme}://{request.get_host()}"
    response = JsonResponse({
        "resource": f"{base}/mcp", "resource_name": "Spaces", "bearer_methods_supported": ["header"],
        "resource_documentation": f"{base}/v1/reference?section=agents",
    })
    response["Cache-Control"] = "public, max-age=3600"
    response["Access-Control-Allow-Origin"] = "*"  # a browser-based client reads it too (public, no secret)
    return response


class MCPEndpoint(APIView):
    """``/mcp``: the member's API key authenticates, as on every REST route; a ``401`` points
    at the resource metadata (RFC 9728 §5.1), as MCP clients expect of a resource server."""

    schema = None  # JSON-RPC, not REST: kept out of the OpenAPI schema
    content_negotiation_class = AnswersInJson
    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [IsMember]

    def get_authenticate_header(self, request: Request) -> str:
        return f'Bearer resource_metadata="{resource_metadata_url(request)}"'

    def initial(self, request: Request, *args, **kwargs) -> None:
        # The transport's rule against DNS rebinding: a request a browser sends from another
        # site's page carries its Origin, refused 403 before anything else is read.
        if not origin_allowed(request):
            raise Forbidden(f"The Origin {request.headers['Origin'][:200]!r} may not call /mcp: only this "
                                   "server's own origin or one SPACES_MCP_ALLOWED_ORIGINS names.")
        super().initial(request, *args, **kwargs)

    def answer(self, request: Request) -> HttpResponse:
        from fronts.mcp.answers import CALLER
        from commands.running import Caller

        raw_key = bearer_token(request.META.get("HTTP_AUTHORIZATION", "")) or ""
        token = CALLER.set(Caller(member=request.user, raw_key=raw_key, key_id=request.auth.pk))
        try:
            status, headers, body = exchange(scope_of(request), request.body)
        finally:
            CALLER.reset(token)
        response = HttpResponse(body, status=status)
        for name, value in headers:
            if name.decode("latin-1").lower() not in HOP_BY_HOP:
                response[name.decode("latin-1")] = value.decode("latin-1")
        return response

    def post(self, request: Request) -> HttpResponse:
        return self.answer(request)

    # Stateless, with JSON answers: the server opens no stream of its own (a GET) and keeps no
    # session to end (a DELETE). The MCP transport lets such a server answer both 405, which
    # its clients expect; handed to the SDK, a GET accepting */* (curl's default) opened a
    # stream that never ended and held a thread. DRF answers 405 with Allow: POST, OPTIONS.
