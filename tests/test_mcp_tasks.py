"""Long calls as MCP tasks (SPEC §23): the official SDK's client, declaring the Tasks extension,
follows a waited ``next`` and a question against real gunicorn workers; a client without the
extension gets the plain call."""
from __future__ import annotations

import io
import threading
import time
from typing import Any, ClassVar, Literal

import anyio
import pytest
from django.db import connection
from pydantic import ConfigDict

from calls.models import LongCall
from tasks.models import Claim, Question
from tests.conftest import load_agent_lab
from tests.factories import create_task, member_with_key
from tests.live_server import gunicorn
from tests.test_mcp import connected

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TASKS = "io.modelcontextprotocol/tasks"


def task_types():
    """The extension's messages, as a client of the SDK declares them (the SDK has no types for them)."""
    from mcp_types import Request, RequestParams, Result

    class TaskIdParams(RequestParams):
        task_id: str

    class UpdateParams(TaskIdParams):
        input_responses: dict[str, Any]

    class GetTask(Request[TaskIdParams, Literal["tasks/get"]]):
        method: Literal["tasks/get"] = "tasks/get"
        name_param: ClassVar[str | None] = "taskId"

    class UpdateTask(Request[UpdateParams, Literal["tasks/update"]]):
        method: Literal["tasks/update"] = "tasks/update"
        name_param: ClassVar[str | None] = "taskId"

    class CancelTask(Request[TaskIdParams, Literal["tasks/cancel"]]):
        method: Literal["tasks/cancel"] = "tasks/cancel"
        name_param: ClassVar[str | None] = "taskId"

    class CreatedTask(Result):
        model_config = ConfigDict(extra="allow")
        result_type: Literal["task"] = "task"
        task_id: str
        status: str
        poll_interval_ms: int | None = None

    class TaskState(Result):
        model_config = ConfigDict(extra="allow")
        task_id: str
        status: str
        result: dict[str, Any] | None = None
        input_requests: dict[str, Any] | None = None

    return TaskIdParams, UpdateParams, GetTask, UpdateTask, CancelTask, CreatedTask, TaskState


async def follow_as_tasks(base: str, key: str, calls: list[tuple[str, dict]], *, answer_inputs=None,
                          cancel: bool = False, before_cancel=None) -> dict[str, Any]:
    """``calls`` through a session that declares the Tasks extension; a task returned is followed
    with tasks/get at its poll interval (``answer_inputs(requests)`` answers what it asks, through
    tasks/update; ``cancel`` cancels it at once). What was seen, by call."""
    from mcp import ClientSession
    from mcp.client.extension import ResultClaim
    from mcp.shared.exceptions import MCPError
    from mcp_types import CallToolResult, EmptyResult

    TaskIdParams, UpdateParams, GetTask, UpdateTask, CancelTask, CreatedTask, TaskState = task_types()
    seen: dict[str, Any] = {"tasks": [], "statuses": [], "results": [], "update_errors": []}

    async def resolve(created, session) -> CallToolResult:
        seen["tasks"].append(created.task_id)
        if before_cancel is not None:
            await anyio.to_thread.run_sync(before_cancel, created.task_id)
        if cancel:
            await session.send_request(CancelTask(params=TaskIdParams(task_id=created.task_id)), EmptyResult)
        while True:
            state = await session.send_request(GetTask(params=TaskIdParams(task_id=created.task_id)), TaskState)
            seen["statuses"].append(state.status)
            if state.status == "input_required" and answer_inputs is not None:
                responses = answer_inputs(state.input_requests)
                try:
                    await session.send_request(UpdateTask(params=UpdateParams(
                        task_id=created.task_id, input_responses=responses)), EmptyResult)
                except MCPError as error:
                    seen["update_errors"].append((error.error.code, (error.error.data or {}).get("error")))
            elif state.status in ("completed", "failed", "cancelled"):
                if state.status != "completed":
                    return CallToolResult(content=[], is_error=True, structured_content={"status": state.status})
                return CallToolResult.model_validate(state.result)
            await anyio.sleep((state.model_extra.get("pollIntervalMs") or 1000) / 4000)  # a quarter: the test's pace

    http, streams = connected(base, key)
    async with http, streams as (read, write):
        claim = ResultClaim(result_type="task", model=CreatedTask, resolve=lambda created, ctx: resolve(created, ctx.session))
        async with ClientSession(read, write, extensions={TASKS: {}}, result_claims={TASKS: [claim]}) as session:
            discovered = await session.discover()
            seen["extensions"] = discovered.capabilities.extensions
            for name, arguments in calls:
                called = await session.call_tool(name, arguments, allow_claimed=True)
                if isinstance(called, CreatedTask):  # the SDK parsed it by its claim: followed here
                    called = await resolve(called, session)
                seen["results"].append((called.is_error, called.structured_content))
    return seen


def until_a_task(caller: threading.Thread) -> None:
    """Until the call became a task (its row committed), or its thread ended (the test fails then)."""
    while not LongCall.objects.exists() and caller.is_alive():
        time.sleep(0.05)
    assert LongCall.objects.exists()


def test_a_waited_next_is_a_task_followed_until_work_comes():
    space = load_agent_lab()
    steward, _ = member_with_key(space, "steward", "lead")
    _, writer = member_with_key(space, "writer", "agent-1")
    with gunicorn(workers=2) as base:
        seen: dict[str, Any] = {}
        follower = threading.Thread(target=lambda: seen.update(anyio.run(
            follow_as_tasks, base, writer, [("next_task", {"wait": 30})])))
        follower.start()
        until_a_task(follower)  # durable before the client hears of it
        create_task(space=space, actor=steward, title="Work that comes while the agent waits")
        follower.join(timeout=60)
    assert seen["extensions"] == {TASKS: {}}
    assert len(seen["tasks"]) == 1 and seen["statuses"][-1] == "completed"
    [(error, answer)] = seen["results"]
    assert not error and answer["task"]["title"] == "Work that comes while the agent waits"
    assert Claim.objects.count() == 1  # the polls of both workers claimed once


def test_work_there_at_once_answers_without_a_task_and_a_client_without_the_extension_waits_as_before():
    space = load_agent_lab()
    agent, writer = member_with_key(space, "writer", "agent-1")
    create_task(space=space, actor=agent, title="Ready before the call")
    with gunicorn(workers=1) as base:
        seen = anyio.run(follow_as_tasks, base, writer, [("next_task", {"wait": 5}), ("next_task", {"wait": 1}),
                                                          ("next_task", {"wait": 61})])
    assert seen["tasks"] and len(seen["tasks"]) == 1  # only the second waited
    (e1, first), (e2, second), (e3, third) = seen["results"]
    assert first["task"]["title"] == "Ready before the call" and second == {"task": None}  # the wait ended: nothing
    assert e3 and third["status"] == 422  # a wait the command refuses is its refusal, not a task
    from tests.test_mcp import run
    with gunicorn(workers=1) as base:
        _, results = run(base, writer, [("next_task", {"wait": 1})])
    assert results == [(False, '{"task": null}')] and LongCall.objects.count() == 1


def test_a_question_to_the_caller_is_input_required_and_its_answer_goes_through_the_task():
    space = load_agent_lab()
    steward, steward_key = member_with_key(space, "steward", "lead")
    agent, writer = member_with_key(space, "writer", "agent-1")
    task = create_task(space=space, actor=agent, title="Needs the agent's view")
    from tasks.questions import ask
    from commands.unit import in_transaction
    in_transaction(ask, task=task, asker=steward, to="creator", body="Which port?", options=["80", "443"])
    other = create_task(space=space, actor=agent, title="Also the agent's")
    in_transaction(ask, task=other, asker=steward, to="creator", body="Which colour?")
    asked: list[dict] = []

    def answer(requests: dict) -> dict:
        asked.append(requests)
        port, colour = sorted(requests, key=lambda key: int(key.split("-")[1]))
        assert requests[port]["method"] == "elicitation/create" and "Which port?" in requests[port]["params"]["message"]
        assert requests[port]["params"]["requestedSchema"]["properties"]["option"]["enum"] == ["80", "443"]
        if len(asked) == 1:  # an option the question does not offer: refused, still outstanding
            return {port: {"action": "accept", "content": {"option": "8080"}}}
        return {port: {"action": "accept", "content": {"option": "443"}}, colour: {"action": "decline"}}

    with gunicorn(workers=2) as base:
        seen = anyio.run(lambda: follow_as_tasks(base, writer, [("next_task", {"wait": 4})], answer_inputs=answer))
    assert seen["update_errors"] == [(-32602, "invalid_request")] and len(asked) == 2
    assert seen["statuses"][-1] == "completed"  # and the declined one was not asked again (len(asked))
    port, colour = Question.objects.order_by("pk")
    assert port.state == "answered" and port.option == "443" and port.answered_by_id == agent.pk
    assert colour.state == "open"  # declined: not answered, and not asked of the task again


def test_a_waited_ask_is_a_task_that_ends_with_the_answer_and_asks_once():
    space = load_agent_lab()
    steward, steward_key = member_with_key(space, "steward", "lead")
    agent, writer = member_with_key(space, "writer", "agent-1")
    task = create_task(space=space, actor=steward, title="Unclear work")
    from commands.unit import in_transaction
    from tasks.claims import claim_task
    in_transaction(claim_task, space=space, member=agent, number=task.number, join=False)
    with gunicorn(workers=2) as base:
        seen: dict[str, Any] = {}
        asker = threading.Thread(target=lambda: seen.update(anyio.run(lambda: follow_as_tasks(
            base, writer, [("ask", {"number": task.number, "body": "Which database?", "wait": 30})]))))
        asker.start()
        until_a_task(asker)
        time.sleep(1.5)  # a few polls of the open question
        from tests.test_mcp import run
        _, answered = run(base, steward_key, [("answer", {"number": task.number,
                                                           "question": Question.objects.get().pk, "body": "PostgreSQL"})])
        asker.join(timeout=60)
    assert answered[0][0] is False
    [(error, body)] = seen["results"]
    assert not error and body["state"] == "answered" and body["answer"] == "PostgreSQL"
    assert Question.objects.count() == 1  # the polls asked nothing again


def test_a_cancelled_task_answers_cancelled_and_another_members_task_is_unknown():
    space = load_agent_lab()
    agent, writer = member_with_key(space, "writer", "agent-1")
    _, other = member_with_key(space, "writer", "agent-2")
    with gunicorn(workers=1) as base:
        seen = anyio.run(lambda: follow_as_tasks(base, writer, [("next_task", {"wait": 30})], cancel=True))
        assert seen["statuses"] == ["cancelled"] and seen["results"][0][0] is True
        task_id = seen["tasks"][0]

        async def peek() -> str:
            from mcp import ClientSession
            from mcp.shared.exceptions import MCPError
            TaskIdParams, _, GetTask, *_rest, TaskState = task_types()
            http, streams = connected(base, other)
            async with http, streams as (read, write):
                async with ClientSession(read, write, extensions={TASKS: {}}) as session:
                    await session.discover()
                    try:
                        await session.send_request(GetTask(params=TaskIdParams(task_id=task_id)), TaskState)
                    except MCPError as error:
                        return f"{error.error.code}"
            return "answered"

        assert anyio.run(peek) == "-32602"
    create_task(space=space, actor=agent, title="Comes after the cancel")
    assert Claim.objects.count() == 0  # a cancelled call claims nothing


def test_a_task_cancelled_while_a_poll_claimed_ends_with_the_claim_not_cancelled():
    """A poll that read the call before the cancel committed may claim after it: the task then
    ends completed with that claim (nobody's claim goes unheard of), never cancelled."""
    import time as clock

    from commands.base import COMMANDS
    from commands.running import Caller, run_command

    space = load_agent_lab()
    agent, writer = member_with_key(space, "writer", "agent-1")
    with gunicorn(workers=1) as base:
        def follow_then_cancel():
            return follow_as_tasks(base, writer, [("next_task", {"wait": 30})], cancel=True, before_cancel=late_poll)

        def late_poll(task_id: str) -> None:  # the poll in flight: it claims as the cancel lands
            try:
                create_task(space=space, actor=agent, title="Claimed by the poll in flight")
                call = LongCall.objects.get(pk=task_id)
                run_command(Caller(member=agent, raw_key=writer), COMMANDS[call.tool], front="mcp",
                            data=call.arguments["data"], idempotency_key=call.idempotency_key,
                            followed_until=clock.monotonic() + 5, **call.arguments["lookups"])
            finally:
                connection.close()  # this thread's own

        seen = anyio.run(follow_then_cancel)
    assert seen["statuses"] == ["completed"]
    [(error, answer)] = seen["results"]
    assert not error and answer["task"]["title"] == "Claimed by the poll in flight"
    assert Claim.objects.count() == 1


def test_hostile_task_requests_are_invalid_params_never_a_server_error():
    space = load_agent_lab()
    _, writer = member_with_key(space, "writer", "agent-1")

    async def send_all() -> list[int]:
        from mcp import ClientSession
        from mcp.shared.exceptions import MCPError
        from mcp_types import EmptyResult, Request, RequestParams

        class Loose(RequestParams):
            model_config = ConfigDict(extra="allow")

        def request(method: str, **params: Any):
            class Hostile(Request[Loose, str]):
                pass
            return Hostile(method=method, params=Loose(**params))

        codes = []
        http, streams = connected(base, writer)
        async with http, streams as (read, write):
            async with ClientSession(read, write, extensions={TASKS: {}}) as session:
                await session.discover()
                for method, params in [("tasks/get", {"taskId": "x" * 5000}), ("tasks/get", {}),
                                       ("tasks/get", {"taskId": "not-a-task"}), ("tasks/get", {"taskId": 5}),
                                       ("tasks/cancel", {"taskId": "\u0000"}),
                                       ("tasks/update", {"taskId": "00000000-0000-0000-0000-000000000000",
                                                         "inputResponses": [1, 2]}),
                                       ("tasks/update", {"taskId": "00000000-0000-0000-0000-000000000000",
                                                         "inputResponses": {"question-1": "yes"}})]:
                    try:
                        await session.send_request(request(method, **params), EmptyResult)
                        codes.append(0)
                    except MCPError as error:
                        codes.append(error.error.code)
        return codes

    with gunicorn(workers=1) as base:
        assert anyio.run(send_all) == [-32602] * 7
    assert LongCall.objects.count() == 0


def test_the_sweep_purges_long_calls_as_old_as_the_operations_they_run(settings):
    from datetime import timedelta

    from django.core.management import call_command
    from django.utils import timezone

    from calls.services import purge_long_calls

    space = load_agent_lab()
    agent, _ = member_with_key(space, "writer", "agent-1")
    old = timezone.now() - timedelta(hours=settings.SPACES_OPERATION_RETENTION_HOURS, minutes=1)
    for key, made in (("old", old), ("new", timezone.now())):
        LongCall.objects.create(space=space, member=agent, tool="next_task", idempotency_key=key,
                                arguments={"data": {"wait": 5}, "lookups": {}}, deadline=made, created_at=made)
    assert purge_long_calls(dry_run=True) == 1 and LongCall.objects.count() == 2
    call_command("sweep", stdout=io.StringIO())
    assert list(LongCall.objects.values_list("idempotency_key", flat=True)) == ["new"]
