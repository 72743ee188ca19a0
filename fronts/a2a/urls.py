"""The A2A routes (SPEC §18), under /a2a/{slug}: the card, JSON-RPC, and HTTP+JSON's routes.
A task id never holds ``/`` or ``:``, so ``tasks/5:cancel`` is task 5's cancel."""
from django.urls import path, re_path

from fronts.a2a.views import AgentCardView, JsonRpcView, rest_route

TASK = r"(?P<number>[^/:]+)"
PUSH = r"(?P<push_id>[^/]+)"
ID = {"number": "id"}
TASK_ID = {"number": "task_id"}
CONFIG = {"number": "task_id", "push_id": "id"}


def route(pattern: str, view, name: str):
    return re_path(rf"^a2a/(?P<slug>[-a-zA-Z0-9_]+)/{pattern}$", view, name=name)


urlpatterns = [
    path("a2a/<slug:slug>/.well-known/agent-card.json", AgentCardView.as_view(), name="a2a-card"),
    path("a2a/<slug:slug>", JsonRpcView.as_view(), name="a2a"),
    # The base URL with its trailing slash too: a client resolving ".well-known/agent-card.json"
    # against it (as the JavaScript SDK does, by URL rules) is given that form.
    path("a2a/<slug:slug>/", JsonRpcView.as_view(), name="a2a-slash"),
    route("message:send", rest_route(post="SendMessage"), "a2a-send"),
    route("message:stream", rest_route(post="SendStreamingMessage"), "a2a-stream"),
    route("tasks", rest_route(get="ListTasks"), "a2a-tasks"),
    route(rf"tasks/{TASK}:cancel", rest_route(post=("CancelTask", ID)), "a2a-cancel"),
    route(rf"tasks/{TASK}:subscribe", rest_route(get=("SubscribeToTask", ID), post=("SubscribeToTask", ID)),
          "a2a-subscribe"),
    route(rf"tasks/{TASK}", rest_route(get=("GetTask", ID)), "a2a-task"),
    route(rf"tasks/{TASK}/pushNotificationConfigs",
          rest_route(post=("CreateTaskPushNotificationConfig", TASK_ID),
                     get=("ListTaskPushNotificationConfigs", TASK_ID)), "a2a-pushes"),
    route(rf"tasks/{TASK}/pushNotificationConfigs/{PUSH}",
          rest_route(get=("GetTaskPushNotificationConfig", CONFIG),
                     delete=("DeleteTaskPushNotificationConfig", CONFIG)), "a2a-push"),
    route("extendedAgentCard", rest_route(get="GetExtendedAgentCard"), "a2a-extended-card"),
]
