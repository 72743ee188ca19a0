"""The ``a2a`` section of GET /v1/reference: the space as an A2A agent (SPEC §18), from the A2A front's own tables."""
from __future__ import annotations

from a2a.types import a2a_pb2 as pb

from fronts.a2a import messages, operations
from fronts.a2a.card import BINDINGS, PROTOCOL_VERSION
from fronts.a2a.tasks import STATES
from fronts.a2a.urls import urlpatterns
from fronts.a2a.views import OPERATIONS
from fronts.reference import register_section


@register_section("a2a")
def a2a_section() -> dict:
    return {
        "summary": f"Each space is an A2A {PROTOCOL_VERSION} agent at /a2a/{{slug}}: any A2A client (the official "
                   "a2a-sdk's included) hands its team work, follows it and reads the checked result.",
        "card": "GET /a2a/{slug}/.well-known/agent-card.json (anyone): one skill per charter slot and one for other "
                "work; GetExtendedAgentCard (a member) says what the caller's key may do",
        "bindings": {binding: "/a2a/{slug}" for binding in BINDINGS},
        "http_json_routes": [str(pattern.pattern).replace("^a2a/(?P<slug>[-a-zA-Z0-9_]+)/", "/a2a/{slug}/")
                             .replace("(?P<number>[^/:]+)", "{id}").replace("(?P<push_id>[^/]+)", "{push_id}")
                             .rstrip("$") for pattern in urlpatterns[2:]],
        "operations": sorted(OPERATIONS),
        "auth": "Authorization: Bearer <a member's API key>; each call checks the key's role as REST does",
        "send": {
            "text": "the first text part's first line is the title, the rest the body",
            "data": f"a data part may carry {', '.join(messages.DATA_FIELDS)}; its numbers are doubles, and an "
                    "integral one (1.0) is taken where an integer is expected",
            "idempotency": "messageId is the create's Idempotency-Key: a retried message answers the same task",
            "converge": "work another task holds answers that task with metadata.spaces.outcome = redirect",
            "note": "a message with taskId adds a note to that task; the same note again answers the task with "
                    "metadata.spaces.outcome = redirect",
            "context": "contextId is the space's slug: a message with another is refused (A2A v1.0: a context the "
                       "agent cannot take is refused, never replaced)",
            "wait": f"another request creating the same work is waited out (up to {operations.RESERVED_PATIENCE:g} s)",
        },
        "list": "ListTasks: the last changed first (status timestamp, descending), pageSize the page's size "
                "(asked, or 50), pageToken the nextPageToken of the page before",
        "states": {status: pb.TaskState.Name(state) for status, state in STATES.items()}
                  | {"superseded": "the survivor's"},
        "streams": "SendStreamingMessage and SubscribeToTask: the Task, then a status update per event of its history "
                   "(metadata.spaces.event), a completed task's artifact, and the end when the task ends",
        "push": "Create/Get/List/DeleteTaskPushNotificationConfig: the task's updates POSTed to your url by the "
                "webhooks' worker (same retries, order and address checks), with your token as "
                "X-A2A-Notification-Token and your authentication as Authorization",
        "errors": "a refusal is an A2A error whose data (google.rpc.ErrorInfo metadata) is the REST problem body",
    }
