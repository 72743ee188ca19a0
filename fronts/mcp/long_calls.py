"""Long calls as MCP tasks (SPEC §23; the ``io.modelcontextprotocol/tasks`` extension).

A client that declares the extension on a request (2026-07-28's per-request capabilities) and
calls ``next_task`` or ``ask`` with a ``wait`` gets, when the answer is not there at once, a
task instead of a call held open: ``tasks/get`` follows it, ``tasks/update`` answers what it
asks, ``tasks/cancel`` ends it. Clients without the extension get the plain call.

Nothing runs between polls and nothing is kept in a process. The call runs as an attempt at
one operation (its ``idempotency_key``, or one made for it: SPEC §7.1), and each ``tasks/get``
runs the same command again with the same key, until the deadline its ``wait`` set: the runner
answers ``WaitElsewhere`` while it would wait, and once the work is done (a claim, an answer)
the operation holds the outcome, committed with the work, which every later poll replays. So
any process answers any poll, a crash loses nothing, and no poll claims twice. The row that
says which call to run again (``calls.models.LongCall``) commits before the client is told of
the task. A question addressed to the caller, open while its task waits, is ``input_required``:
an elicitation the client answers with ``tasks/update``, which runs the ``answer`` command.
"""
from __future__ import annotations

import contextvars
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone as tz
from typing import Any

from asgiref.sync import sync_to_async
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, RequestParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from calls import commands as call_commands
from calls.selectors import get_call, settled
from idempotency.models import Operation
from commands.base import COMMANDS, Command
from commands.running import Caller, run_command
from commands.unit import Answer, WaitElsewhere
from common.refusals import NotFound
from idempotency.errors import IdempotencyInProgress
from fronts.mcp.answers import CALLER, Refused, result
from tasks import commands as task_commands, questions

IDENTIFIER = "io.modelcontextprotocol/tasks"
# The tools whose wait may become a task, by the command each runs.
LONG_TOOLS = {"next_task": task_commands.next_task.name, "ask": task_commands.ask_question.name}
POLL_INTERVAL_MS = 1000  # each poll is one short request: a claim or a read, never a wait
TTL_MS = 3_600_000  # a task is answered for an hour after it began (its operation is kept a day)
INPUTS_LISTED = 10  # questions to the caller shown at once


@dataclass
class Following:
    """Set by the interceptor around a call it may turn into a task; the tool's command, run by
    ``start``, says whether it did (``call``: the long call's row)."""

    command: str
    call: dict[str, Any] | None = field(default=None)

    def start(self, caller: Caller, command: Command, *, data: dict[str, Any], idempotency_key: str | None,
              **lookups: Any) -> Answer:
        """The call's first run, as an attempt at its operation: its answer when it has one at
        once; otherwise the long call, committed, and a task for the client to follow."""
        key = idempotency_key or f"mcp-task-{secrets.token_hex(12)}"
        wait = float(data["wait"])
        try:
            return run_command(caller, command, front="mcp", data=data, idempotency_key=key,
                               followed_until=time.monotonic() + wait, **lookups)
        except WaitElsewhere:
            answer = run_command(caller, call_commands.follow_call, front="mcp", tool=command.name,
                                 arguments={"data": data, "lookups": lookups}, key=key, wait=wait)
            self.call = answer.body
            return answer


FOLLOWING: contextvars.ContextVar[Following | None] = contextvars.ContextVar("mcp_following", default=None)


def waited(arguments: dict[str, Any]) -> bool:
    """The call asks to wait; whether it may (how long) is its command's to say (a refusal is
    the plain result)."""
    wait = arguments.get("wait")
    return isinstance(wait, (int, float)) and not isinstance(wait, bool) and wait > 0


def iso(moment: datetime) -> str:
    return moment.astimezone(tz.utc).isoformat().replace("+00:00", "Z")


def task_of(call: dict[str, Any], status: str, **details: Any) -> dict[str, Any]:
    """The extension's ``Task``, with what its status carries (``result``, ``inputRequests``);
    last updated when its row last changed (made, cancelled, an input answered)."""
    return {"taskId": call["id"], "status": status, "createdAt": call["created_at"],
            "lastUpdatedAt": call["updated_at"], "ttlMs": TTL_MS, "pollIntervalMs": POLL_INTERVAL_MS, **details}


def completed(call: dict[str, Any], answer: Answer, done: Operation | None) -> dict[str, Any]:
    """The task ended with the call's answer, last updated when its operation settled."""
    when = iso(done.completed_at) if done is not None and done.completed_at else iso(datetime.now(tz.utc))
    return task_of({**call, "updated_at": when}, "completed", result=tool_result(answer))


def tool_result(answer: Answer) -> dict[str, Any]:
    return result(answer.body, error=answer.status >= 400).model_dump(by_alias=True, exclude_none=True, mode="json")


def input_requests(caller: Caller, responded: list[str]) -> dict[str, tuple[Any, dict[str, Any]]]:
    """The open questions addressed to the caller, as elicitations keyed once per question:
    ``{key: (question, request)}``."""
    asked = {}
    for question in questions.addressed_to(caller.member).select_related("task")[:INPUTS_LISTED + len(responded)]:
        key = f"question-{question.pk}"
        if key in responded or len(asked) >= INPUTS_LISTED:
            continue
        properties: dict[str, Any] = {"answer": {"type": "string", "description": "Your answer."}}
        if question.options:
            properties["option"] = {"type": "string", "enum": list(question.options)}
        asked[key] = (question, {"method": "elicitation/create", "params": {
            "mode": "form", "message": f"Task {question.task.number} asks: {question.body}",
            "requestedSchema": {"type": "object", "properties": properties,
                                "required": ["option"] if question.options else ["answer"]}}})
    return asked


def poll(caller: Caller, params: "TaskParams") -> dict[str, Any]:
    """``tasks/get``: the call run again with its key until its deadline (module docstring)."""
    call = get_call(caller.member, params.task_id)
    body = call_commands.call_body(call)
    if call.cancelled_at is not None:
        # A poll that began before the cancel may have finished the work after it: then the task
        # ends with that work (the extension allows it), not with a claim nobody hears of.
        done = settled(call)
        if done is None:
            return task_of(body, "cancelled", statusMessage="Cancelled by its caller.")
        return completed(body, Answer.stored(done), done)
    remaining = max(0.0, (call.deadline - datetime.now(tz.utc)).total_seconds())
    try:
        answer = run_command(caller, COMMANDS[call.tool], front="mcp", data=call.arguments["data"],
                             idempotency_key=call.idempotency_key, followed_until=time.monotonic() + remaining,
                             **call.arguments["lookups"])
    except (WaitElsewhere, IdempotencyInProgress):  # waiting; or another poll of it is running
        asked = input_requests(caller, call.responded)
        if asked:
            return task_of(body, "input_required", inputRequests={key: request for key, (_, request) in asked.items()})
        return task_of(body, "working")
    return completed(body, answer, settled(call))


def update(caller: Caller, params: "UpdateParams") -> dict[str, Any]:
    """``tasks/update``: each accepted elicitation answers its question (the ``answer`` command:
    the first answer wins, so one answered meanwhile is set aside too); a declined one is set
    aside. Keys not outstanding are ignored. An answer the command refuses (an option not among
    the question's) stays outstanding, and the refusal is the request's error."""
    call = get_call(caller.member, params.task_id)
    outstanding = input_requests(caller, call.responded)
    handled, refused = [], None
    for key, response in params.input_responses.items():
        if key not in outstanding or not isinstance(response, dict):
            continue
        content = response.get("content") if isinstance(response.get("content"), dict) else {}
        if response.get("action") == "accept":
            question = outstanding[key][0]
            answer = run_command(caller, task_commands.answer_question, front="mcp", number=question.task.number,
                                 question=question.pk, data={"body": str(content.get("answer", "")),
                                                             "option": content.get("option")})
            if answer.status >= 400 and answer.status != 409:
                refused = refused or Refused(answer.body)
                continue
        handled.append(key)
    if handled:
        run_command(caller, call_commands.set_aside_inputs, front="mcp", call=call.pk, keys=handled)
    if refused is not None:
        raise refused
    return {"resultType": "complete"}


def cancel(caller: Caller, params: "TaskParams") -> dict[str, Any]:
    answer = run_command(caller, call_commands.cancel_call, front="mcp", call=params.task_id)
    if answer.status >= 400:
        raise Refused(answer.body)
    return {"resultType": "complete"}


class TaskParams(RequestParams):
    task_id: str = Field(alias="taskId", max_length=100)


class UpdateParams(TaskParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses", default_factory=dict)


def method(action):
    """A tasks/* handler: the caller's own task, in the request's thread; an unknown one is
    ``-32602`` (invalid params), as the extension asks."""
    async def handle(ctx, params: TaskParams) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            try:
                found = action(CALLER.get(), params)
            except NotFound as error:
                raise MCPError(INVALID_PARAMS, str(error), data=error.as_body()) from None
            except Refused as error:  # the REST problem body, as a tool's refusal carries it
                raise MCPError(INVALID_PARAMS, str(error), data=error.body) from None
            return {"resultType": "complete", **found}
        return await sync_to_async(run, thread_sensitive=True)()
    return handle


class TasksExtension(Extension):
    identifier = IDENTIFIER

    def methods(self):
        return (MethodBinding("tasks/get", TaskParams, method(poll), MODERN_PROTOCOL_VERSIONS),
                MethodBinding("tasks/update", UpdateParams, method(update), MODERN_PROTOCOL_VERSIONS),
                MethodBinding("tasks/cancel", TaskParams, method(cancel), MODERN_PROTOCOL_VERSIONS))

    async def intercept_tool_call(self, params, ctx, call_next):
        """A waited long call from a client that declared the extension may become a task."""
        capabilities = ctx.session.client_capabilities
        declared = bool(capabilities and capabilities.extensions and IDENTIFIER in capabilities.extensions)
        arguments = params.arguments or {}
        if not (declared and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and params.name in LONG_TOOLS
                and waited(arguments)):
            return await call_next(ctx)
        following = Following(LONG_TOOLS[params.name])
        token = FOLLOWING.set(following)
        try:
            answered = await call_next(ctx)
        finally:
            FOLLOWING.reset(token)
        if following.call is None:
            return answered  # done at once (or refused): the plain result
        return {"resultType": "task", **task_of(following.call, "working")}
