"""The MCP front (SPEC §1, §10): agents' tools over the same commands as the REST routes (``tasks.commands``).

Served at /mcp by django-mcp-server (stateless streamable HTTP from a synchronous Django
view, so any server process answers), authenticated with the member's API key. A
refusal comes back as a tool error whose text is the REST refusal's JSON.
"""
from __future__ import annotations

import json
from typing import Any

from mcp.server.fastmcp.exceptions import ToolError
from mcp_server import MCPToolset
from mcp_server.views import MCPServerStreamableHttpView
from django.http import QueryDict
from rest_framework.utils.encoders import JSONEncoder

from allocation.runner import Answer, Idempotent, UnitOfWork, run_unit
from common.refusals import DomainError, Unauthenticated
from spaces import commands as space_commands
from spaces.auth import ApiKeyAuthentication, bearer_token
from spaces.commands import Command
from spaces.models import Role
from spaces.permissions import IsMember, role_refusal
from spaces.reference import build_reference
from tasks import commands, graph
from tasks.filters import filter_tasks
from tasks.serializers import TaskSerializer


def tool_answer(call) -> Answer:
    """A tool's result as JSON (or the answer it made), or its refusal, as the answer an operation stores."""
    try:
        result = call()
        return result if isinstance(result, Answer) else Answer(200, json.loads(json.dumps(result, default=str)))
    except DomainError as error:
        return Answer(error.http_status, error.as_body())


class SpacesTools(MCPToolset):
    def _member(self, role: str = Role.READER):
        member = self.request.user
        refused = role_refusal(member, role)
        if refused is not None:
            raise refused
        return member

    def _run(self, role: str, action) -> Any:
        """A read that is not a command of its own (space_info, reference, bind_title, list_tasks,
        notifications): the role check, then the action, its refusal as the REST problem body."""
        answer = tool_answer(lambda: action(self._member(role)))
        if answer.status >= 400:
            raise ToolError(json.dumps(answer.body))
        return answer.body

    def _command(self, command: Command, *, data: Any = None, idempotency_key: str | None = None,
                 **lookups: Any) -> Any:
        """Run a command (``tasks.commands``) as its REST route does: a command that changes something
        runs as one unit of work, by the same runner; with ``idempotency_key`` the unit is an attempt
        at an operation (SPEC §7.1), so a retry answers with the first outcome instead of doing the
        work twice. The answer is the command's reply body; a refusal, the REST problem body."""
        def act(member, unit=None) -> Answer:
            reply = command(member, unit=unit, data=data, **lookups)
            return Answer(reply.status, json.loads(json.dumps(reply.body, cls=JSONEncoder)))

        if not command.mutates:
            answer = tool_answer(lambda: act(self.request.user))
        else:
            def work(unit: UnitOfWork) -> Answer:
                return tool_answer(lambda: act(unit.api_key.member if unit.api_key else self.request.user, unit))

            idempotent = None if not idempotency_key else Idempotent(
                raw_key=bearer_token(self.request.META.get("HTTP_AUTHORIZATION", "")) or "",
                key=idempotency_key, method="MCP", path=f"/mcp/{command.name}",
                body={"data": data, **lookups})
            try:
                api_key, answer = run_unit(work, idempotent=idempotent)
            except DomainError as error:
                raise ToolError(json.dumps(error.as_body())) from None
            if answer is None:
                raise ToolError(json.dumps(Unauthenticated().as_body()))
        if answer.status >= 400:
            raise ToolError(json.dumps(answer.body))
        return answer.body

    def space_info(self) -> dict:
        """Your space: its slug, name and settings (claim hours, confirmations required, limits)."""
        def act(member):
            s = member.space
            return {"slug": s.slug, "name": s.name, "task_claim_hours": s.task_claim_hours,
                    "claim_lease_seconds": s.claim_lease_seconds, "similar_threshold": s.similar_threshold,
                    "confirmations_required": s.confirmations_required,
                    "max_claims_per_task": s.max_claims_per_task, "max_attempts_per_cycle": s.max_attempts_per_cycle}
        return self._run(Role.READER, act)

    def reference(self, section: str = "") -> dict:
        """The service's rules for agents: section tasks, allocation, refusals, settlement, graph, live, similar or agents (empty for all)."""
        return self._run(Role.READER, lambda m: build_reference(section or None))

    def bind_title(self, title: str, work_item_id: str | None = None, delivery_mode: str = "result") -> dict:
        """Preview how a title binds to the catalog (scores as exact fractions) without creating anything,
        with `similar`: the live tasks whose titles look like it."""
        data = {"title": title, "work_item_id": work_item_id, "delivery_mode": delivery_mode}
        return self._command(commands.bind_title, data=data)

    def similar_tasks(self, title: str) -> dict:
        """The live tasks whose titles look like `title` (best first, at most 5, each with a score 0-1):
        likely the same work under other words. Look before you create work no catalog slot names."""
        return self._command(commands.similar_tasks, data={"title": title})

    def likely_duplicates(self) -> dict:
        """Pairs of live tasks likely to be the same work under other words, most alike first: for a steward
        to supersede one of each pair (supersede_task) or say they differ (mark_not_duplicate)."""
        return self._command(commands.likely_duplicates)

    def mark_not_duplicate(self, number: int, task: int, idempotency_key: str | None = None) -> dict:
        """Steward: tasks `number` and `task` are distinct work; the pair is not listed as likely duplicates again."""
        return self._command(commands.mark_not_duplicate, data={"task": task}, number=number,
                             idempotency_key=idempotency_key)

    def create_task(self, title: str, body: str = "", delivery_mode: str = "result",
                    work_item_id: str | None = None, priority: int = 2, labels: list[str] | None = None,
                    blocked_by: list[int] | None = None, if_similar: str = "allow",
                    idempotency_key: str | None = None) -> dict:
        """Create a task. If the work already exists the error is 409 allocation_conflict naming the `winner`:
        claim or join that task instead; on conflict_key_reserved retry after retry_after_ms with the same
        idempotency_key (a retry with it never creates a second task). `priority` 0 (most urgent) to 4,
        `labels` up to 10, `blocked_by` the numbers of tasks this one waits on. A title that binds no catalog
        slot is answered with `similar` (live tasks that look like it); `if_similar="refuse"` makes any of them
        a 409 similar_task_exists instead, with nothing created."""
        data = {"title": title, "body": body, "delivery_mode": delivery_mode, "work_item_id": work_item_id,
                "priority": priority, "labels": labels or [], "blocked_by": blocked_by or [],
                "if_similar": if_similar}
        return self._command(commands.create_task, data=data, idempotency_key=idempotency_key)

    def create_tasks(self, proposals: list[dict], idempotency_key: str | None = None) -> dict:
        """Several create intents in one allocation window, in order: each proposal is {"title", "body"?,
        "delivery_mode"?, "work_item_id"?, "priority"?, "labels"?, "blocked_by"?} and gets the answer a single
        create_task would have given."""
        return self._command(commands.create_tasks, data={"proposals": proposals}, idempotency_key=idempotency_key)

    def list_tasks(self, status: str = "", ready: bool | None = None, blocked: bool | None = None,
                   priority: int | None = None, labels: list[str] | None = None, q: str = "",
                   order: str = "") -> dict:
        """Tasks of your space (the first 200), lowest number first; superseded ones only with
        status=superseded. `ready`: open and nothing blocks them; `labels`: carrying all of them; `q`:
        full-text search over titles and bodies, best match first; `order`: "next" for the order
        next takes tasks (most urgent first, then lowest number)."""
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
        return self._run(Role.READER, act)

    def update_task(self, number: int, priority: int | None = None, labels: list[str] | None = None,
                    idempotency_key: str | None = None) -> dict:
        """Change task `number`'s priority (0 most urgent to 4) or labels (the creator or a steward)."""
        data = {k: v for k, v in {"priority": priority, "labels": labels}.items() if v is not None}
        return self._command(commands.update_task, data=data, number=number, idempotency_key=idempotency_key)

    def add_blocker(self, number: int, blocker: int, idempotency_key: str | None = None) -> dict:
        """Task `number` waits on task `blocker` (no `next` hands it out until that one ends). A blocker that
        would close a cycle is 422 dependency_cycle naming it."""
        return self._command(commands.add_blocker, data={"task": blocker}, number=number,
                             idempotency_key=idempotency_key)

    def remove_blocker(self, number: int, blocker: int, idempotency_key: str | None = None) -> dict:
        """Task `number` no longer waits on task `blocker`."""
        return self._command(commands.remove_blocker, number=number, blocker=blocker,
                             idempotency_key=idempotency_key)

    def get_task(self, number: int) -> dict:
        """One task with its live claims and its attempts with their checks."""
        return self._command(commands.get_task, number=number)

    def next_task(self, number: int | None = None, join: bool = False, kind: str = "task",
                  labels: list[str] | None = None, wait: float = 0, idempotency_key: str | None = None) -> dict:
        """Claim the most urgent ready task (lowest priority, then number; with `labels`, only tasks carrying
        all of them); or task `number` (`join`=true to hold it beside other keys, up to 3);
        or kind="check" for an attempt you may check. {"task": null} means nothing to do. `wait`: up to that
        many seconds (0-60) to wait for work when there is none, instead of calling again."""
        data = {k: v for k, v in {"number": number, "join": join, "kind": kind, "labels": labels,
                                  "wait": wait or None}.items() if v is not None}
        return self._command(commands.next_task, data=data, idempotency_key=idempotency_key)

    def give_back(self, number: int, idempotency_key: str | None = None) -> dict:
        """End your own claim on task `number`; other keys holding it keep theirs."""
        return self._command(commands.give_back, number=number, idempotency_key=idempotency_key)

    def heartbeat(self, number: int, idempotency_key: str | None = None) -> dict:
        """Renew your claim on task `number` while you work on it (the space's claim_lease_seconds from now).
        409 claim_lapsed: it lapsed (claim the task again); 409 not_holder: you hold none."""
        return self._command(commands.heartbeat, number=number, idempotency_key=idempotency_key)

    def create_post(self, body: str, title: str = "", idempotency_key: str | None = None) -> dict:
        """Write a post (a result to cite with mark_done)."""
        return self._command(space_commands.create_post, data={"body": body, "title": title},
                             idempotency_key=idempotency_key)

    def mark_done(self, number: int, post: int, idempotency_key: str | None = None) -> dict:
        """Record a numbered attempt on task `number` citing post `post` (one a key a cycle, 5 a cycle)."""
        return self._command(commands.mark_done, data={"post": post}, number=number, idempotency_key=idempotency_key)

    def confirm_attempt(self, number: int, attempt: int, idempotency_key: str | None = None) -> dict:
        """Confirm attempt `attempt` of task `number` (not your own, not one citing your post)."""
        return self._command(commands.confirm_attempt, number=number, attempt=attempt,
                             idempotency_key=idempotency_key)

    def reject_attempt(self, number: int, attempt: int, reason: str = "", idempotency_key: str | None = None) -> dict:
        """Reject attempt `attempt` of task `number`; the task reopens when no attempt waits."""
        return self._command(commands.reject_attempt, data={"reason": reason}, number=number, attempt=attempt,
                             idempotency_key=idempotency_key)

    def add_note(self, number: int, body: str, criterion: int | None = None,
                 idempotency_key: str | None = None) -> dict:
        """A review note on task `number`; the same note again is 409 naming the first one."""
        return self._command(commands.add_note, data={"body": body, "criterion": criterion}, number=number,
                             idempotency_key=idempotency_key)

    def notifications(self, unread_only: bool = True) -> dict:
        """Your notifications (task_attempt, attempt_accepted, attempt_rejected, task_reopened, ...)."""
        def act(m):
            items = m.notifications.select_related("task").order_by("id")
            if unread_only:
                items = items.filter(read_at=None)
            return {"notifications": [{"id": n.pk, "kind": n.kind, "task": n.task.number if n.task_id else None,
                                       "details": n.details} for n in items[:200]]}
        return self._run(Role.READER, act)

    def supersede_task(self, number: int, surviving_task: int, reason: str = "allocation_duplicate",
                       idempotency_key: str | None = None) -> dict:
        """Steward: mark task `number` a leftover duplicate of `surviving_task`."""
        return self._command(commands.supersede_task, data={"surviving_task": surviving_task, "reason": reason},
                             number=number, idempotency_key=idempotency_key)

    def assign_task(self, number: int, member: int, idempotency_key: str | None = None) -> dict:
        """Steward: claim task `number` for member `member` (its status becomes assigned)."""
        return self._command(commands.assign_task, data={"member": member}, number=number,
                             idempotency_key=idempotency_key)

    def withdraw_task(self, number: int, reason: str = "", idempotency_key: str | None = None) -> dict:
        """Withdraw task `number` (its creator, or a steward): it ends and frees its conflict key."""
        return self._command(commands.withdraw_task, data={"reason": reason}, number=number,
                             idempotency_key=idempotency_key)

    def reject_task(self, number: int, reason: str = "", idempotency_key: str | None = None) -> dict:
        """Steward: reject task `number` (work nobody should do): it ends and frees its conflict key."""
        return self._command(commands.reject_task, data={"reason": reason}, number=number,
                             idempotency_key=idempotency_key)

    def hold_slot(self, work_item_id: str, reason: str = "", idempotency_key: str | None = None) -> dict:
        """Steward: hold a catalog slot so no new task takes it."""
        return self._command(commands.hold_slot, data={"work_item_id": work_item_id, "reason": reason},
                             idempotency_key=idempotency_key)

    def release_slot(self, work_item_id: str, idempotency_key: str | None = None) -> dict:
        """Steward: end the hold on a catalog slot; new tasks may take it again."""
        return self._command(commands.release_slot, work_item_id=work_item_id, idempotency_key=idempotency_key)


class MCPEndpoint(MCPServerStreamableHttpView):
    """``/mcp``: the member's API key authenticates, as on every REST route."""

    schema = None  # JSON-RPC, not REST: kept out of the OpenAPI schema
    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [IsMember]


def project_version() -> str:
    """The project's version, as installed (pyproject.toml)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("spaces-service")
    except PackageNotFoundError:
        return "0+unknown"


# The server names itself and this project's version in its MCP handshake, not the library's.
MCPEndpoint.mcp_server._mcp_server.version = project_version()
