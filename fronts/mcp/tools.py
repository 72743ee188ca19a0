"""The MCP front (SPEC §1, §10): agents' tools over the same commands as the REST routes (``tasks.commands``).

Served at /mcp by the official MCP SDK (2.x, ``MCPServer``): ``fronts/mcp/http.py``
authenticates the member's API key as every REST route does and hands the request to the
SDK's stateless streamable HTTP exchange, so any server process answers. Every tool answers
a structured result (``structuredContent``, and the same JSON as text): what its REST twin
answers, or, for a refusal, an error result whose structured content is exactly the REST
problem body. A refusal is an answer, not a crash: nothing is logged for it.

This module imports the SDK; nothing imports it until the first MCP request (the SDK costs
about a second of every process start).
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from asgiref.sync import sync_to_async
from django.http import QueryDict
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import ValidationError
from mcp.types import CallToolResult, ToolAnnotations

from common.refusals import DomainError, InvalidRequest
from common.version import project_version
from commands.running import answer_of, run_command
from costs import commands as cost_commands
from spaces import commands as space_commands
from commands.base import COMMANDS, Command
from spaces.models import Member, Role
from spaces.permissions import role_refusal
from events import feed
from fronts import feed as feed_http
from fronts.mcp import long_calls
from fronts.mcp.answers import CALLER, Refused, result
from fronts.mcp.outputs import output_schema
from fronts.reference import build_reference
from tasks import approvals, commands, graph, questions
from fronts.task_filters import filter_tasks
from tasks.serializers import TaskSerializer
from tasks.waiting import REGISTRY


def member(role: str = Role.READER) -> Member:
    caller = CALLER.get().member
    refused = role_refusal(caller, role)
    if refused is not None:
        raise refused
    return caller


def read_result(role: str, action) -> Any:
    """A read that is not a command of its own (space_info, reference, list_tasks, notifications):
    the role check, then the action, its refusal as the REST problem body."""
    answer = answer_of(lambda: action(member(role)))
    if answer.status >= 400:
        raise Refused(answer.body)
    return answer.body


def command_result(command: Command, *, data: Any = None, idempotency_key: str | None = None,
                   **lookups: Any) -> Any:
    """Run a command (``tasks.commands``) as its REST route does: a command that changes something
    runs as one unit of work, by the same runner; with ``idempotency_key`` the unit is an attempt
    at an operation (SPEC §7.1), so a retry answers with the first outcome instead of doing the
    work twice. The answer is the command's reply body; a refusal, the REST problem body."""
    following = long_calls.FOLLOWING.get()
    try:
        if following is not None and following.command == command.name:  # it may become an MCP task
            answer = following.start(CALLER.get(), command, data=data, idempotency_key=idempotency_key, **lookups)
        else:
            answer = run_command(CALLER.get(), command, front="mcp", data=data, idempotency_key=idempotency_key,
                                 **lookups)
    except DomainError as error:
        raise Refused(error.as_body()) from None
    if answer.status >= 400:
        raise Refused(answer.body)
    return answer.body


def answered(fn: Callable[..., Any], arguments: dict[str, Any]) -> CallToolResult:
    try:
        return result(fn(**arguments))
    except Refused as refusal:
        return result(refusal.body, error=True)


TOOLS: dict[str, Callable[..., Any]] = {}
# The role each tool needs: its command's (commands.base.COMMANDS, the role the command
# checks), or a reader's for the reads that are no command (``read_result`` checks READER).
TOOL_ROLES: dict[str, str] = {}
# Tools a steward's listing shows, and a member's when a proposal names it the approver (SPEC
# §21): any member may call them (the command says who may decide), but a writer's context pays
# for them only when it has something to approve.
APPROVER_TOOLS = frozenset({"approve_task", "refuse_task"})
# Likewise ``answer``: listed to stewards and to a member an open question is addressed to.
ANSWERER_TOOLS = frozenset({"answer"})


class SpacesServer(MCPServer):
    """The SDK's server, with SPEC §3's strict input for tool arguments: the SDK's argument model
    drops an argument the tool does not take, so an agent's misspelt ``work_item_id`` would
    quietly become a title-fallback create. Here it is ``422 invalid_request`` naming it and the
    arguments the tool takes, as an unknown body field is over REST; an argument of the wrong
    type is the same refusal, with the SDK's reason, instead of its own error text."""

    async def get_prompt(self, name: str, arguments=None, context=None):
        """This server has no prompts: an unknown one is the client's mistake (-32602), not a
        server error with a traceback."""
        if self._prompt_manager.get_prompt(name) is None:
            raise MCPError(INVALID_PARAMS, f"No prompt {name[:100]!r}; prompts/list lists them.")
        return await super().get_prompt(name, arguments, context)

    async def list_tools(self):
        """The tools the caller's role may call, each schema saying what ``call_tool`` enforces (no
        argument beyond its own) in as few bytes as say it: the listing is read into an agent's
        context on every connection (a writer's is under 15 KB with its annotations and output fields, tests/test_mcp.py)."""
        caller = CALLER.get().member
        steward = role_refusal(caller, Role.STEWARD) is None
        approver = steward or await sync_to_async(approvals.awaits_decision_by, thread_sensitive=True)(caller)
        answerer = steward or await sync_to_async(questions.awaits_answer_by, thread_sensitive=True)(caller)
        tools = [listed for listed in await super().list_tools() if role_refusal(caller, TOOL_ROLES[listed.name]) is None
                 and (approver or listed.name not in APPROVER_TOOLS) and (answerer or listed.name not in ANSWERER_TOOLS)]
        for listed in tools:
            listed.input_schema = {**compact(listed.input_schema), "additionalProperties": False}
            listed.output_schema = output_schema(listed.name)
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        fn = TOOLS.get(name)
        if fn is not None:
            taken = list(inspect.signature(fn).parameters)
            unknown = sorted(str(argument) for argument in arguments if argument not in taken)
            if unknown:
                message = f"Unknown argument; this tool takes: {', '.join(taken) or 'none'}."
                return result(invalid_arguments({argument: [message] for argument in unknown}), error=True)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            if fn is None or not isinstance(error.__cause__, ValidationError):
                raise
            fields: dict[str, list[str]] = {}
            for problem in error.__cause__.errors():
                fields.setdefault(".".join(str(part) for part in problem["loc"]), []).append(problem["msg"])
            return result(invalid_arguments(fields), error=True)


def compact(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema as the SDK derives it from a signature, without what tells a client nothing:
    the titles pydantic makes of names ("Idempotency Key"), ``additionalProperties: true`` (the
    default), and an optional argument's ``anyOf`` with null (not being required says it may be
    left out; null is still taken)."""
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if (key == "title" and isinstance(value, str)) or (key == "additionalProperties" and value is True):
            continue  # a name's title, and JSON Schema's own default
        if key == "properties":
            value = {name: compact(prop) for name, prop in value.items()}
        out[key] = value
    options = out.get("anyOf")
    if isinstance(options, list) and out.get("default", ...) is None:
        kept = [option for option in options if option != {"type": "null"}]
        if len(kept) == 1:
            del out["anyOf"], out["default"]
            out = {**compact(kept[0]), **out}
    return out


def invalid_arguments(fields: dict[str, list[str]]) -> dict:
    return InvalidRequest("The request has invalid fields; see `fields`.", fields=fields).as_body()


# The server names itself and this project's version in its MCP handshake, not the library's.
server = SpacesServer(name="spaces", version=project_version(), log_level="WARNING",  # Django's LOGGING decides
                      extensions=[long_calls.TasksExtension()],
                   instructions="Coordination of an agent team's work: create tasks once, claim the most "
                                "urgent ready one, deliver numbered attempts, check each other's.")


# Tools that end or undo something of someone's (SPEC §23: a withdraw, reject or supersede is
# destructive, a create is not).
DESTRUCTIVE = frozenset({"withdraw_task", "reject_task", "supersede_task", "refuse_task", "reject_attempt", "delete_routine",
                         "release_slot"})


def annotations_of(fn: Callable[..., dict]) -> ToolAnnotations:
    """SPEC §23's hints: a tool without ``idempotency_key`` changes nothing (a read); one with it is
    idempotent (the same call again replays its first answer, SPEC §7.1), destructive or not."""
    if "idempotency_key" not in inspect.signature(fn).parameters:
        return ToolAnnotations(read_only_hint=True)
    return ToolAnnotations(destructive_hint=fn.__name__ in DESTRUCTIVE, idempotent_hint=True)


def tool(fn: Callable[..., dict]) -> Callable[..., dict]:
    """Publish ``fn`` as a tool: its signature is the input schema, its docstring the description,
    an object its output. The SDK awaits it; the work runs in the request's own thread (Django's
    database connection is per thread), through ``sync_to_async``."""
    @functools.wraps(fn)
    async def call(**arguments: Any) -> dict[str, Any]:
        return await sync_to_async(answered, thread_sensitive=True)(fn, arguments)

    call.__signature__ = inspect.signature(fn, eval_str=True)  # type: ignore[attr-defined]
    server.add_tool(call, name=fn.__name__, description=" ".join(inspect.getdoc(fn).split()), structured_output=True,
                    annotations=annotations_of(fn))
    TOOLS[fn.__name__] = fn
    known = COMMANDS.get(fn.__name__)
    TOOL_ROLES[fn.__name__] = known.role if known is not None else Role.READER
    return fn


@tool
def space_info() -> dict[str, Any]:
    """Your space: slug, name, settings."""
    def act(member):
        s = member.space
        return {"slug": s.slug, "name": s.name, "task_claim_hours": s.task_claim_hours,
                "claim_lease_seconds": s.claim_lease_seconds, "similar_threshold": s.similar_threshold,
                "confirmations_required": s.confirmations_required,
                "max_claims_per_task": s.max_claims_per_task, "max_attempts_per_cycle": s.max_attempts_per_cycle}
    return read_result(Role.READER, act)

@tool
def reference(section: str = "") -> dict[str, Any]:
    """The service's rules by `section` (tasks, refusals, live, people, ...; empty: all)."""
    return read_result(Role.READER, lambda m: build_reference(section or None))

@tool
def bind_title(title: str, work_item_id: str | None = None, delivery_mode: str = "result") -> dict[str, Any]:
    """Preview how a title binds to the catalog, creating nothing; `similar`: live tasks like it."""
    data = {"title": title, "work_item_id": work_item_id, "delivery_mode": delivery_mode}
    return command_result(commands.bind_title, data=data)

@tool
def similar_tasks(title: str) -> dict[str, Any]:
    """Up to 5 live tasks whose titles look like `title` (score 0-1, best first)."""
    return command_result(commands.similar_tasks, data={"title": title})

@tool
def likely_duplicates() -> dict[str, Any]:
    """Pairs of live tasks likely to be the same work, most alike first."""
    return command_result(commands.likely_duplicates)

@tool
def mark_not_duplicate(number: int, task: int, idempotency_key: str | None = None) -> dict[str, Any]:
    """Steward: tasks `number` and `task` are distinct work; the pair is not listed as likely duplicates again."""
    return command_result(commands.mark_not_duplicate, data={"task": task}, number=number,
                         idempotency_key=idempotency_key)

@tool
def create_task(title: str, body: str = "", delivery_mode: str = "result",
                work_item_id: str | None = None, priority: int = 2, labels: list[str] | None = None,
                blocked_by: list[int] | None = None, if_similar: str = "allow", approval: bool = False,
                approver: int | None = None, idempotency_key: str | None = None) -> dict[str, Any]:
    """Create a task; work that exists is 409 naming the `winner` (conflict_key_reserved: retry,
    same idempotency_key). `priority` 0 (most urgent)-4, `blocked_by` task numbers. An unbound
    title gets `similar` tasks (if_similar="refuse": 409). `approval`: wait for `approver`."""
    data = {"title": title, "body": body, "delivery_mode": delivery_mode, "work_item_id": work_item_id,
            "priority": priority, "labels": labels or [], "blocked_by": blocked_by or [],
            "if_similar": if_similar, "approval": approval, "approver": approver}
    return command_result(commands.create_task, data=data, idempotency_key=idempotency_key)

@tool
def create_tasks(proposals: list[dict], idempotency_key: str | None = None) -> dict[str, Any]:
    """Several create_task proposals in one window, in order, each answered as create_task."""
    return command_result(commands.create_tasks, data={"proposals": proposals}, idempotency_key=idempotency_key)

@tool
def list_tasks(status: str = "", ready: bool | None = None, blocked: bool | None = None,
               priority: int | None = None, labels: list[str] | None = None, q: str = "",
               order: str = "") -> dict[str, Any]:
    """Your space's tasks (first 200) by number. `ready`: open, unblocked; `labels`: carrying all;
    `q`: full-text search; `order`: "next" for next's order."""
    def act(m):
        params = QueryDict(mutable=True)
        for name, value in {"status": status, "q": q, "priority": priority, "ready": ready,
                            "blocked": blocked, "order": order}.items():
            if value not in (None, ""):
                params[name] = str(value).lower() if isinstance(value, bool) else str(value)
        params.setlist("label", list(labels or []))
        tasks, by_offset = filter_tasks(m.space, params)
        page = list((tasks if by_offset else tasks.order_by("number"))[:200])
        graph.attach(page)
        return {"tasks": TaskSerializer(page, many=True).data}
    return read_result(Role.READER, act)

@tool
def events(after: int | None = None, types: list[str] | None = None, task: int | None = None,
           limit: int | None = None, wait: float | None = None) -> dict[str, Any]:
    """Your space's feed: {"events", "next"} after seq `after`, oldest first (ask again with
    after=next). `types` (task.created, ...), `task`, `limit` 1-500, `wait` up to 60 s."""
    def act(m):
        params = QueryDict(mutable=True)
        for name, value in {"after": after, "task": task, "limit": limit, "wait": wait}.items():
            if value is not None:
                params[name] = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
        if types is not None:
            params["types"] = ",".join(types)
        return feed.answer(space_id=m.space_id, asked=feed_http.question(params), wait_for=REGISTRY.wait_for_event)
    return read_result(Role.READER, act)

@tool
def update_task(number: int, priority: int | None = None, labels: list[str] | None = None,
                idempotency_key: str | None = None) -> dict[str, Any]:
    """Change task `number`'s priority (0-4) or labels (its creator or a steward)."""
    data = {k: v for k, v in {"priority": priority, "labels": labels}.items() if v is not None}
    return command_result(commands.update_task, data=data, number=number, idempotency_key=idempotency_key)

@tool
def add_blocker(number: int, blocker: int, idempotency_key: str | None = None) -> dict[str, Any]:
    """Task `number` waits on task `blocker` until it ends (a cycle: 422 dependency_cycle)."""
    return command_result(commands.add_blocker, data={"task": blocker}, number=number,
                         idempotency_key=idempotency_key)

@tool
def remove_blocker(number: int, blocker: int, idempotency_key: str | None = None) -> dict[str, Any]:
    """Task `number` no longer waits on task `blocker`."""
    return command_result(commands.remove_blocker, number=number, blocker=blocker,
                         idempotency_key=idempotency_key)

@tool
def get_task(number: int) -> dict[str, Any]:
    """Task `number` with its live claims and attempts."""
    return command_result(commands.get_task, number=number)

@tool
def next_task(number: int | None = None, join: bool = False, kind: str = "task",
              labels: list[str] | None = None, wait: float = 0, idempotency_key: str | None = None) -> dict[str, Any]:
    """Claim the most urgent ready task (with all `labels`), or task `number` (`join`: beside
    others), or kind="check": an attempt to check. `wait`: seconds (0-60) for work."""
    data = {k: v for k, v in {"number": number, "join": join, "kind": kind, "labels": labels,
                              "wait": wait or None}.items() if v is not None}
    return command_result(commands.next_task, data=data, idempotency_key=idempotency_key)

@tool
def give_back(number: int, cost: dict[str, Any] | None = None, idempotency_key: str | None = None) -> dict[str, Any]:
    """End your claim on task `number`. `cost`: spent in all (as heartbeat)."""
    return command_result(commands.give_back, data=with_cost({}, cost), number=number,
                          idempotency_key=idempotency_key)

@tool
def heartbeat(number: int, cost: dict[str, Any] | None = None, idempotency_key: str | None = None) -> dict[str, Any]:
    """Renew your claim on task `number`. `cost`: spent so far, {usd, input_tokens, output_tokens,
    seconds, model}. 409 claim_lapsed: claim again; budget_exhausted: stop."""
    return command_result(commands.heartbeat, data=with_cost({}, cost), number=number,
                          idempotency_key=idempotency_key)

@tool
def create_post(body: str, title: str = "", idempotency_key: str | None = None) -> dict[str, Any]:
    """Write a post (a result to cite with mark_done)."""
    return command_result(space_commands.create_post, data={"body": body, "title": title},
                         idempotency_key=idempotency_key)

@tool
def mark_done(number: int, post: int, cost: dict[str, Any] | None = None,
              idempotency_key: str | None = None) -> dict[str, Any]:
    """A numbered attempt on task `number` citing post `post`. `cost`: spent in all (as heartbeat)."""
    return command_result(commands.mark_done, data=with_cost({"post": post}, cost), number=number,
                          idempotency_key=idempotency_key)


def with_cost(data: dict[str, Any], cost: dict[str, Any] | None) -> dict[str, Any]:
    return data if cost is None else {**data, "cost": cost}


@tool
def space_costs(since: str | None = None, until: str | None = None, group_by: str = "member") -> dict[str, Any]:
    """Spend from `since` to `until` (ISO 8601; default: this month) by `group_by`, and per outcome."""
    query = {"group_by": group_by, **({"since": since} if since else {}), **({"until": until} if until else {})}
    return command_result(cost_commands.space_costs, data=query)

@tool
def confirm_attempt(number: int, attempt: int, idempotency_key: str | None = None) -> dict[str, Any]:
    """Confirm attempt `attempt` of task `number` (not your own)."""
    return command_result(commands.confirm_attempt, number=number, attempt=attempt,
                         idempotency_key=idempotency_key)

@tool
def reject_attempt(number: int, attempt: int, reason: str = "", idempotency_key: str | None = None) -> dict[str, Any]:
    """Reject attempt `attempt` of task `number`; the task reopens when no attempt waits."""
    return command_result(commands.reject_attempt, data={"reason": reason}, number=number, attempt=attempt,
                         idempotency_key=idempotency_key)

@tool
def add_note(number: int, body: str, criterion: int | None = None,
             idempotency_key: str | None = None) -> dict[str, Any]:
    """A review note on task `number` (again: 409 naming it)."""
    return command_result(commands.add_note, data={"body": body, "criterion": criterion}, number=number,
                         idempotency_key=idempotency_key)

@tool
def notifications(unread_only: bool = True) -> dict[str, Any]:
    """Your notifications, oldest first."""
    def act(m):
        items = m.notifications.select_related("task").order_by("id")
        if unread_only:
            items = items.filter(read_at=None)
        return {"notifications": [{"id": n.pk, "kind": n.kind, "task": n.task.number if n.task_id else None,
                                   "details": n.details} for n in items[:200]]}
    return read_result(Role.READER, act)

@tool
def supersede_task(number: int, surviving_task: int, reason: str = "allocation_duplicate",
                   idempotency_key: str | None = None) -> dict[str, Any]:
    """Steward: mark task `number` a leftover duplicate of `surviving_task`."""
    return command_result(commands.supersede_task, data={"surviving_task": surviving_task, "reason": reason},
                         number=number, idempotency_key=idempotency_key)

@tool
def assign_task(number: int, member: int, idempotency_key: str | None = None) -> dict[str, Any]:
    """Steward: claim task `number` for member `member` (its status becomes assigned)."""
    return command_result(commands.assign_task, data={"member": member}, number=number,
                         idempotency_key=idempotency_key)

@tool
def withdraw_task(number: int, reason: str = "", idempotency_key: str | None = None) -> dict[str, Any]:
    """Withdraw task `number` (its creator or a steward), freeing its key."""
    return command_result(commands.withdraw_task, data={"reason": reason}, number=number,
                         idempotency_key=idempotency_key)

@tool
def reject_task(number: int, reason: str = "", idempotency_key: str | None = None) -> dict[str, Any]:
    """Steward: reject task `number` (work nobody should do): it ends and frees its conflict key."""
    return command_result(commands.reject_task, data={"reason": reason}, number=number,
                         idempotency_key=idempotency_key)

@tool
def approve_task(number: int, idempotency_key: str | None = None) -> dict[str, Any]:
    """A steward or its approver: proposed task `number` may start (it opens)."""
    return command_result(commands.approve_task, number=number, idempotency_key=idempotency_key)

@tool
def refuse_task(number: int, reason: str = "", idempotency_key: str | None = None) -> dict[str, Any]:
    """A steward or its approver: proposed task `number` is not to be done (rejected)."""
    return command_result(commands.refuse_task, data={"reason": reason}, number=number,
                         idempotency_key=idempotency_key)

@tool
def unpark_task(number: int, idempotency_key: str | None = None) -> dict[str, Any]:
    """Steward: parked task `number` (set back max_cycles times) goes back in the queue, open."""
    return command_result(commands.unpark_task, number=number, idempotency_key=idempotency_key)

@tool
def ask(number: int, body: str, to: str = "creator", options: list[str] | None = None,
        hold: bool | None = None, wait: float = 0, idempotency_key: str | None = None) -> dict[str, Any]:
    """Ask `to` ("creator", "stewards", a member id) about task `number`; it waits until answered,
    your claim paused (hold=false: given back). `wait`: seconds (0-60) for the answer."""
    addressee: str | int = int(to) if to.isdigit() else to  # a member's id, as REST takes it
    data = {k: v for k, v in {"body": body, "to": addressee, "options": options, "hold": hold,
                              "wait": wait or None}.items() if v is not None}
    return command_result(commands.ask_question, data=data, number=number, idempotency_key=idempotency_key)

@tool
def answer(number: int, question: int, body: str = "", option: str | None = None,
           idempotency_key: str | None = None) -> dict[str, Any]:
    """Answer `question` on task `number`; the first answer wins."""
    return command_result(commands.answer_question, data={"body": body, "option": option}, number=number,
                          question=question, idempotency_key=idempotency_key)

@tool
def message(body: str, to: list[int] | None = None, number: int | None = None,
            idempotency_key: str | None = None) -> dict[str, Any]:
    """Message task `number`'s thread (and `to`), or with no `number` the members `to` names."""
    if number is None:
        return command_result(commands.post_direct_message, data={"body": body, "to": to or []},
                              idempotency_key=idempotency_key)
    return command_result(commands.post_task_message, data={"body": body, "to": to or []}, number=number,
                          idempotency_key=idempotency_key)

@tool
def inbox() -> dict[str, Any]:
    """What waits on you: questions, approvals, checks, unread messages."""
    return command_result(commands.read_inbox)

@tool
def hold_slot(work_item_id: str, reason: str = "", idempotency_key: str | None = None) -> dict[str, Any]:
    """Steward: hold a catalog slot so no new task takes it."""
    return command_result(commands.hold_slot, data={"work_item_id": work_item_id, "reason": reason},
                         idempotency_key=idempotency_key)

@tool
def create_routine(title: str, schedule: str, timezone: str = "UTC", body: str = "", work_item_id: str | None = None,
                   priority: int = 2, labels: list[str] | None = None, overlap: str = "skip",
                   catch_up: str = "latest", idempotency_key: str | None = None) -> dict[str, Any]:
    """Steward: work made each period of a cron `schedule` (5 fields, in IANA `timezone`), once a period."""
    data = {"title": title, "schedule": schedule, "timezone": timezone, "body": body, "work_item_id": work_item_id,
            "priority": priority, "labels": labels or [], "overlap": overlap, "catch_up": catch_up}
    return command_result(commands.create_routine, data=data, idempotency_key=idempotency_key)

@tool
def update_routine(routine: int, enabled: bool | None = None, schedule: str | None = None,
                   timezone: str | None = None, title: str | None = None,
                   idempotency_key: str | None = None) -> dict[str, Any]:
    """Steward: pause (enabled=false) or resume a routine, or change its schedule, zone or title."""
    data = {k: v for k, v in {"enabled": enabled, "schedule": schedule, "timezone": timezone,
                              "title": title}.items() if v is not None}
    return command_result(commands.update_routine, data=data, routine=routine, idempotency_key=idempotency_key)

@tool
def delete_routine(routine: int, idempotency_key: str | None = None) -> dict[str, Any]:
    """Steward: delete a routine (the tasks it made stay)."""
    return command_result(commands.delete_routine, routine=routine, idempotency_key=idempotency_key)

@tool
def release_slot(work_item_id: str, idempotency_key: str | None = None) -> dict[str, Any]:
    """Steward: end the hold on a catalog slot; new tasks may take it again."""
    return command_result(commands.release_slot, work_item_id=work_item_id, idempotency_key=idempotency_key)


