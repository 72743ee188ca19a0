"""``/a2a/{slug}``: A2A v1.0's JSON-RPC and HTTP+JSON bindings, and the space's Agent Card (SPEC §18).

Answered from Django with the official SDK's protocol types (``a2a.types``, its JSON mapping
and its error payloads), not its Starlette server: the operations run in the request's thread
like every other front, through the same commands and runner (``fronts.a2a.operations``), and a
stream waits the way ``GET …/events``' stream does (docs/architecture.md says why).

The member's API key authenticates as on every REST route: a missing or bad key is ``401``,
another space's slug ``404``, before the protocol is spoken.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from a2a.types import a2a_pb2 as pb
from a2a.utils import errors as a2a
from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from google.api.field_behavior_pb2 import REQUIRED, field_behavior
from google.protobuf import json_format
from google.protobuf.message import Message
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.views import APIView

from common import json_input
from common.refusals import NotFound
from common.problems import problem_response
from fronts.a2a import operations, push, streams
from fronts.a2a.card import agent_card
from fronts.a2a.errors import Refusal, jsonrpc_body, protocol, rest_body
from fronts.a2a.inputs import from_query, parsed
from fronts.mcp.http import AnswersInJson
from commands.running import Caller
from fronts.rest.authentication import ApiKeyAuthentication, bearer_token
from spaces.models import Space
from fronts.rest.permissions import IsMember
from tasks.waiting import REGISTRY

SSE = "text/event-stream"
VERSION_HEADER = "A2A-Version"


@dataclass(frozen=True)
class Operation:
    """An A2A operation: what its request parses into, and what answers it (a message, or for a
    streaming operation the stream of its updates)."""

    request: type[Message]
    run: Callable[[Caller, Any], Any]
    streaming: bool = False


def send_streaming(caller: Caller, request: pb.SendMessageRequest) -> Iterator[pb.StreamResponse | None]:
    after = streams.feed_position(caller.member.space_id)
    opening = operations.sent_task(caller, request)  # refused here, before the stream starts
    return streams.updates(caller, opening, after, REGISTRY.wait_for_event)


def subscribe(caller: Caller, request: pb.SubscribeToTaskRequest) -> Iterator[pb.StreamResponse | None]:
    after = streams.feed_position(caller.member.space_id)
    opening = operations.get_task(caller, pb.GetTaskRequest(id=request.id, history_length=0))
    return streams.updates(caller, opening, after, REGISTRY.wait_for_event)


OPERATIONS: dict[str, Operation] = {
    "SendMessage": Operation(pb.SendMessageRequest, operations.send_message),
    "SendStreamingMessage": Operation(pb.SendMessageRequest, send_streaming, streaming=True),
    "GetTask": Operation(pb.GetTaskRequest, operations.get_task),
    "ListTasks": Operation(pb.ListTasksRequest, operations.list_tasks),
    "CancelTask": Operation(pb.CancelTaskRequest, operations.cancel_task),
    "SubscribeToTask": Operation(pb.SubscribeToTaskRequest, subscribe, streaming=True),
    "CreateTaskPushNotificationConfig": Operation(pb.TaskPushNotificationConfig, push.create),
    "GetTaskPushNotificationConfig": Operation(pb.GetTaskPushNotificationConfigRequest, push.get),
    "ListTaskPushNotificationConfigs": Operation(pb.ListTaskPushNotificationConfigsRequest, push.listed),
    "DeleteTaskPushNotificationConfig": Operation(pb.DeleteTaskPushNotificationConfigRequest, push.delete),
    "GetExtendedAgentCard": Operation(pb.GetExtendedAgentCardRequest, operations.get_extended_card),
}


def as_json(message: Message) -> dict[str, Any]:
    """A message's JSON form with its REQUIRED fields (``field_behavior``) shown even when empty
    (``"tasks": []``, ``"nextPageToken": ""``): protobuf's JSON leaves an empty field out, and
    A2A's clients look for a required one."""
    return with_required(message, json_format.MessageToDict(message))


def with_required(message: Message, shown: dict[str, Any]) -> dict[str, Any]:
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            continue
        if field.is_repeated:
            if field.message_type is not None and field.json_name in shown:
                shown[field.json_name] = [with_required(item, part)
                                          for item, part in zip(value, shown[field.json_name])]
            elif field.json_name not in shown and REQUIRED in field.GetOptions().Extensions[field_behavior]:
                shown[field.json_name] = []
        elif field.message_type is not None:
            if field.json_name in shown and isinstance(shown[field.json_name], dict) \
                    and not field.message_type.full_name.startswith("google.protobuf."):
                with_required(value, shown[field.json_name])
        elif field.json_name not in shown and not field.has_presence \
                and REQUIRED in field.GetOptions().Extensions[field_behavior]:
            shown[field.json_name] = json_format.MessageToDict(
                message, always_print_fields_with_no_presence=True)[field.json_name]
    return shown


def base_url(request) -> str:
    return request.build_absolute_uri("/").rstrip("/")


class A2AView(APIView):
    """A route under ``/a2a/{slug}``: the member's key, the caller, the version check."""

    schema = None  # A2A, not the REST API: kept out of the OpenAPI schema
    content_negotiation_class = AnswersInJson  # a 401 or 404 before the protocol is JSON, whatever is accepted
    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [IsMember]

    def caller(self) -> Caller:
        raw_key = bearer_token(self.request.META.get("HTTP_AUTHORIZATION", "")) or ""
        return Caller(member=self.request.user, raw_key=raw_key, key_id=self.request.auth.pk,
                      base_url=base_url(self.request))

    def check_version(self) -> None:
        asked = self.request.headers.get(VERSION_HEADER, "").strip()
        if asked and asked.split(".")[0] != "1":
            raise protocol(a2a.VersionNotSupportedError, f"This agent speaks A2A 1.0, not {asked}.")


class JsonRpcView(A2AView):
    """``POST /a2a/{slug}``: JSON-RPC 2.0, one call a request (a streaming call answers SSE)."""

    def post(self, request: Request, slug: str) -> HttpResponse:
        call_id: Any = None
        try:
            try:
                call = json_input.loads(request.body or b"")
            except (ValueError, UnicodeDecodeError):
                raise protocol(a2a.JSONParseError, "The body is not JSON.") from None
            if not isinstance(call, dict):
                raise protocol(a2a.InvalidRequestError, "A JSON-RPC call is an object.")
            call_id = call.get("id")
            if call.get("jsonrpc") != "2.0" or not isinstance(call.get("method"), str) \
                    or not isinstance(call_id, (str, int, type(None))) or isinstance(call_id, bool):
                raise protocol(a2a.InvalidRequestError, "Not a JSON-RPC 2.0 call (jsonrpc, method, id).")
            operation = OPERATIONS.get(call["method"])
            if operation is None:
                raise protocol(a2a.MethodNotFoundError, f"No method {call['method']!r}.")
            self.check_version()
            params = call.get("params", {})
            if not isinstance(params, dict):
                raise protocol(a2a.InvalidParamsError, "params is an object.")
            arguments = parsed(operation.request, params)
            result = operation.run(self.caller(), arguments)
        except Refusal as refusal:
            return JsonResponse(jsonrpc_body(call_id, refusal.error))
        if operation.streaming:
            return event_stream(json.dumps({"jsonrpc": "2.0", "id": call_id, "result": as_json(update)})
                                if update is not None else None for update in result)
        return JsonResponse({"jsonrpc": "2.0", "id": call_id, "result": as_json(result) if result is not None else {}})


def event_stream(lines: Iterator[str | None]) -> StreamingHttpResponse:
    """Server-Sent Events: each update a ``data:`` line, a comment while nothing happens."""
    def framed() -> Iterator[str]:
        yield ": following the task\n\n"
        for line in lines:
            yield ": keep-alive\n\n" if line is None else f"data: {line}\n\n"

    response = StreamingHttpResponse(framed(), content_type=SSE)
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # a proxy in front passes each update on at once
    return response


class RestView(A2AView):
    """An HTTP+JSON route: each of its methods an operation, its request from the path (``routes``
    names which of the route's parts is which field), the query (GET, DELETE) or the body."""

    routes: dict[str, tuple[str, dict[str, str]]] = {}  # method: (operation, {route part: field})

    def answer(self, **kwargs: str) -> HttpResponse:
        name, path_fields = self.routes[self.request.method]
        operation = OPERATIONS[name]
        try:
            self.check_version()
            arguments = self.request_of(operation.request, {field: kwargs[part] for part, field in path_fields.items()})
            result = operation.run(self.caller(), arguments)
        except Refusal as refusal:
            status, body = rest_body(refusal.error)
            return JsonResponse(body, status=status)
        if operation.streaming:
            return event_stream(json.dumps(as_json(update)) if update is not None else None for update in result)
        return JsonResponse(as_json(result) if result is not None else {})

    def request_of(self, kind: type[Message], from_path: dict[str, str]) -> Message:
        if self.request.method in ("GET", "DELETE"):
            message = from_query(kind, self.request.query_params)
        else:
            try:
                body = json_input.loads(self.request.body or b"{}")
            except (ValueError, UnicodeDecodeError):
                raise protocol(a2a.JSONParseError, "The body is not JSON.") from None
            if not isinstance(body, dict):
                raise protocol(a2a.InvalidParamsError, "The body is an object.")
            message = parsed(kind, body)
        for field, value in from_path.items():
            setattr(message, field, value)
        return message


def rest_route(**routes: str | tuple[str, dict[str, str]]):
    """The view of one HTTP+JSON route: ``get="GetTask"``, or with the route's parts that are
    fields, ``post=("CancelTask", {"number": "id"})``."""
    table = {method.upper(): (route, {}) if isinstance(route, str) else route for method, route in routes.items()}
    handlers = {method.lower(): lambda self, request, slug, **kwargs: self.answer(**kwargs) for method in table}
    name = "".join(operation for operation, _ in table.values())
    return type(f"{name}View", (RestView,), {"routes": table, **handlers}).as_view()


class AgentCardView(APIView):
    """``GET /a2a/{slug}/.well-known/agent-card.json``: the space as an agent, for anyone."""

    schema = None
    content_negotiation_class = AnswersInJson
    authentication_classes: list = []
    permission_classes = [AllowAny]

    def get(self, request: Request, slug: str) -> HttpResponse:
        space = Space.objects.filter(slug=slug).first()
        if space is None:
            return problem_response(NotFound("No such space."))
        return JsonResponse(as_json(agent_card(space, base_url(request))))
