"""The road not taken, for ``benchmarks/a2a_bench.py``: A2A served by the official SDK's own
Starlette server (its JSON-RPC route, dispatcher and version check) under uvicorn, each call
handed to the same operations the Django front runs, in a worker thread (Django's ORM is
synchronous). Only SendMessage and GetTask: what the benchmark measures. Not served by the project.

    python -m uvicorn benchmarks.a2a_starlette:app --workers 2
"""
from __future__ import annotations

import os
from typing import Any, Callable

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings.benchmark")
django.setup()

from a2a.server.request_handlers.request_handler import RequestHandler  # noqa: E402
from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes  # noqa: E402
from a2a.utils.errors import UnsupportedOperationError  # noqa: E402
from asgiref.sync import sync_to_async  # noqa: E402
from starlette.applications import Starlette  # noqa: E402

from fronts.a2a import operations  # noqa: E402
from fronts.a2a.errors import Refusal  # noqa: E402
from commands.running import Caller  # noqa: E402
from fronts.rest.authentication import bearer_token  # noqa: E402
from spaces.key_lookup import authenticate_key  # noqa: E402


def call(headers: dict[str, str], operation: Callable[[Caller, Any], Any], params: Any) -> Any:
    token = bearer_token(headers.get("authorization", "")) or ""
    key = authenticate_key(token)
    if key is None:
        raise UnsupportedOperationError("a member's API key, please")
    try:
        return operation(Caller(member=key.member, raw_key=token, key_id=key.pk), params)
    except Refusal as refusal:
        raise refusal.error from None


async def run(context, operation, params):
    return await sync_to_async(call, thread_sensitive=False)(context.state["headers"], operation, params)


class SpacesHandler(RequestHandler):
    async def on_message_send(self, params, context=None):
        return (await run(context, operations.send_message, params)).task

    async def on_get_task(self, params, context=None):
        return await run(context, operations.get_task, params)

    async def _unsupported(self, *args, **kwargs):
        raise UnsupportedOperationError("not in this benchmark")

    on_list_tasks = on_cancel_task = on_create_task_push_notification_config = _unsupported
    on_get_task_push_notification_config = on_list_task_push_notification_configs = _unsupported
    on_delete_task_push_notification_config = on_get_extended_agent_card = _unsupported

    async def on_message_send_stream(self, params, context=None):
        raise UnsupportedOperationError("not in this benchmark")
        yield

    async def on_subscribe_to_task(self, params, context=None):
        raise UnsupportedOperationError("not in this benchmark")
        yield


app = Starlette(routes=create_jsonrpc_routes(SpacesHandler(), rpc_url="/a2a/bench"))
