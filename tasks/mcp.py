"""The MCP front (SPEC §1, §10): agents' tools over the same services as the REST routes.

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
from rest_framework.exceptions import ValidationError

from allocation import services as allocation
from allocation.api import BindSerializer, HoldSerializer
from allocation.runner import Answer, Attempt, run_attempt
from common.problems import translate
from common.refusals import DomainError, Forbidden, Unauthenticated
from spaces import services as space_services
from spaces.api.serializers import PostCreateSerializer
from spaces.auth import ApiKeyAuthentication, bearer_token
from spaces.models import ROLE_RANK, Role
from spaces.permissions import IsMember
from spaces.reference import build_reference
from tasks import attempts, claims, graph, selectors, services, stewardship
from tasks.api import run_window
from tasks.filters import filter_tasks
from tasks.serializers import (
    AttemptSerializer,
    BlockerSerializer,
    ClaimSerializer,
    DoneSerializer,
    NextSerializer,
    NoteCreateSerializer,
    RejectSerializer,
    SupersedeSerializer,
    TaskCreateSerializer,
    TaskDetailSerializer,
    TaskSerializer,
    TaskUpdateSerializer,
    WindowSerializer,
)


def valid(serializer_class, data: dict) -> dict:
    """The tool's arguments through the same serializer the REST route uses: the same limits and
    the same ``422 invalid_request`` with per-field details."""
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise translate(ValidationError(serializer.errors))
    return dict(serializer.validated_data)


def tool_answer(call) -> Answer:
    """A tool's result as JSON, or its refusal, as the answer an operation stores."""
    try:
        return Answer(200, json.loads(json.dumps(call(), default=str)))
    except DomainError as error:
        return Answer(error.http_status, error.as_body())


class SpacesTools(MCPToolset):
    def _member(self, role: str = Role.READER):
        member = self.request.user
        if ROLE_RANK[member.role] < ROLE_RANK[role]:
            raise Forbidden(f"This tool needs the {role} role; your key is a {member.role}.")
        return member

    attempt: Attempt | None = None

    def _run(self, role: str, action, *, idempotency_key: str | None = None, tool: str = "", arguments=None) -> Any:
        """Run a tool's service call; with ``idempotency_key`` it is an attempt at an operation, run by
        the same runner as a keyed POST (SPEC §7.1): a retry answers with the first outcome instead
        of doing the work twice. The action reads ``self.attempt`` where its service takes one."""
        try:
            member = self._member(role)
        except DomainError as error:
            raise ToolError(json.dumps(error.as_body())) from None
        if not idempotency_key:
            answer = tool_answer(lambda: action(member))
        else:
            def work(attempt: Attempt) -> Answer:
                self.attempt = attempt
                try:
                    return tool_answer(lambda: action(attempt.api_key.member))
                finally:
                    self.attempt = None

            try:
                api_key, answer = run_attempt(
                    raw_key=bearer_token(self.request.META.get("HTTP_AUTHORIZATION", "")) or "",
                    idempotency_key=idempotency_key, method="MCP", path=f"/mcp/{tool}", body=arguments or {},
                    work=work)
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
                    "confirmations_required": s.confirmations_required,
                    "max_claims_per_task": s.max_claims_per_task, "max_attempts_per_cycle": s.max_attempts_per_cycle}
        return self._run(Role.READER, act)

    def reference(self, section: str = "") -> dict:
        """The service's rules for agents: section tasks, allocation, refusals, settlement or graph (empty for all)."""
        return self._run(Role.READER, lambda m: build_reference(section or None))

    def bind_title(self, title: str, work_item_id: str | None = None, delivery_mode: str = "result") -> dict:
        """Preview how a title binds to the catalog (scores as exact fractions) without creating anything."""
        data = {"title": title, "work_item_id": work_item_id, "delivery_mode": delivery_mode}
        return self._run(Role.READER, lambda m: allocation.bind_title(space=m.space, **valid(BindSerializer, data)).as_dict())

    def create_task(self, title: str, body: str = "", delivery_mode: str = "result",
                    work_item_id: str | None = None, priority: int = 2, labels: list[str] | None = None,
                    blocked_by: list[int] | None = None, idempotency_key: str | None = None) -> dict:
        """Create a task. If the work already exists the error is 409 allocation_conflict naming the `winner`:
        claim or join that task instead; on conflict_key_reserved retry after retry_after_ms with the same
        idempotency_key (a retry with it never creates a second task). `priority` 0 (most urgent) to 4,
        `labels` up to 10, `blocked_by` the numbers of tasks this one waits on."""
        arguments = {"title": title, "body": body, "delivery_mode": delivery_mode, "work_item_id": work_item_id,
                     "priority": priority, "labels": labels or [], "blocked_by": blocked_by or []}
        return self._run(Role.WRITER, lambda m: TaskSerializer(services.create_task(
            space=m.space, actor=m, attempt=self.attempt, **valid(TaskCreateSerializer, arguments))).data,
            idempotency_key=idempotency_key, tool="create_task", arguments=arguments)

    def create_tasks(self, proposals: list[dict], idempotency_key: str | None = None) -> dict:
        """Several create intents in one allocation window, in order: each proposal is {"title", "body"?,
        "delivery_mode"?, "work_item_id"?, "priority"?, "labels"?, "blocked_by"?} and gets the answer a single
        create_task would have given."""
        def act(m):
            checked = valid(WindowSerializer, {"proposals": proposals})["proposals"]
            return {"results": run_window(space=m.space, actor=m, proposals=checked, attempt=self.attempt)}
        return self._run(Role.WRITER, act, idempotency_key=idempotency_key, tool="create_tasks",
                         arguments={"proposals": proposals})

    def list_tasks(self, status: str = "", ready: bool | None = None, blocked: bool | None = None,
                   priority: int | None = None, labels: list[str] | None = None, q: str = "") -> dict:
        """Tasks of your space (the first 200), lowest number first; superseded ones only with
        status=superseded. `ready`: open and nothing blocks them; `labels`: carrying all of them; `q`:
        full-text search over titles and bodies, best match first."""
        def act(m):
            params = QueryDict(mutable=True)
            for name, value in {"status": status, "q": q, "priority": priority, "ready": ready,
                                "blocked": blocked}.items():
                if value not in (None, ""):
                    params[name] = str(value).lower() if isinstance(value, bool) else str(value)
            params.setlist("label", list(labels or []))
            tasks, searching = filter_tasks(m.space, params)
            page = list((tasks if searching else tasks.order_by("number"))[:200])
            graph.attach(page)
            return {"tasks": TaskSerializer(page, many=True).data}
        return self._run(Role.READER, act)

    def update_task(self, number: int, priority: int | None = None, labels: list[str] | None = None,
                    idempotency_key: str | None = None) -> dict:
        """Change task `number`'s priority (0 most urgent to 4) or labels (the creator or a steward)."""
        arguments = {k: v for k, v in {"priority": priority, "labels": labels}.items() if v is not None}
        return self._run(Role.WRITER, lambda m: TaskSerializer(services.update_task(
            task=selectors.get_task(space=m.space, number=number), actor=m,
            **valid(TaskUpdateSerializer, arguments))).data,
            idempotency_key=idempotency_key, tool="update_task", arguments={"number": number, **arguments})

    def add_blocker(self, number: int, blocker: int, idempotency_key: str | None = None) -> dict:
        """Task `number` waits on task `blocker` (no `next` hands it out until that one ends). A blocker that
        would close a cycle is 422 dependency_cycle naming it."""
        def act(m):
            checked = valid(BlockerSerializer, {"task": blocker})["task"]
            task, _ = graph.add_blocker(space=m.space, number=number, blocker_number=checked, actor=m)
            return TaskSerializer(task).data
        return self._run(Role.WRITER, act, idempotency_key=idempotency_key, tool="add_blocker",
                         arguments={"number": number, "blocker": blocker})

    def remove_blocker(self, number: int, blocker: int, idempotency_key: str | None = None) -> dict:
        """Task `number` no longer waits on task `blocker`."""
        def act(m):
            task = graph.remove_blocker(space=m.space, number=number, blocker_number=blocker, actor=m)
            return TaskSerializer(task).data
        return self._run(Role.WRITER, act, idempotency_key=idempotency_key, tool="remove_blocker",
                         arguments={"number": number, "blocker": blocker})

    def get_task(self, number: int) -> dict:
        """One task with its live claims and its attempts with their checks."""
        return self._run(Role.READER, lambda m: TaskDetailSerializer(selectors.get_task(space=m.space,
                                                                                       number=number)).data)

    def next_task(self, number: int | None = None, join: bool = False, kind: str = "task",
                  labels: list[str] | None = None, idempotency_key: str | None = None) -> dict:
        """Claim the most urgent ready task (lowest priority, then number; with `labels`, only tasks carrying
        all of them); or task `number` (`join`=true to hold it beside other keys, up to 3);
        or kind="check" for an attempt you may check. {"task": null} means nothing to do."""
        def act(m):
            data = valid(NextSerializer, {k: v for k, v in {"number": number, "join": join, "kind": kind,
                                                            "labels": labels}.items() if v is not None})
            number_, join_, kind_ = data.get("number"), data["join"], data["kind"]
            if kind_ == "check":
                offered = attempts.offer_check(space=m.space, member=m)
                return {"task": None, "attempt": None} if offered is None else {
                    "task": TaskSerializer(offered[0]).data, "attempt": AttemptSerializer(offered[1]).data}
            if number_ is not None:
                task, claim = claims.claim_task(space=m.space, member=m, number=number_, join=join_)
            else:
                claimed = claims.claim_next_task(space=m.space, member=m, labels=data["labels"])
                if claimed is None:
                    return {"task": None}
                task, claim = claimed
            return {"task": TaskSerializer(task).data, "claim": ClaimSerializer(claim).data}
        return self._run(Role.WRITER, act, idempotency_key=idempotency_key, tool="next_task",
                         arguments={"number": number, "join": join, "kind": kind, "labels": labels})

    def give_back(self, number: int, idempotency_key: str | None = None) -> dict:
        """End your own claim on task `number`; other keys holding it keep theirs."""
        return self._run(Role.WRITER, lambda m: ClaimSerializer(claims.give_back(
            task=selectors.get_task(space=m.space, number=number), member=m)).data,
            idempotency_key=idempotency_key, tool="give_back", arguments={"number": number})

    def create_post(self, body: str, title: str = "", idempotency_key: str | None = None) -> dict:
        """Write a post (a result to cite with mark_done)."""
        return self._run(Role.WRITER, lambda m: {"id": space_services.create_post(
            space=m.space, author=m, **valid(PostCreateSerializer, {"body": body, "title": title})).pk},
            idempotency_key=idempotency_key,
            tool="create_post", arguments={"body": body, "title": title})

    def mark_done(self, number: int, post: int, idempotency_key: str | None = None) -> dict:
        """Record a numbered attempt on task `number` citing post `post` (one a key a cycle, 5 a cycle)."""
        return self._run(Role.WRITER, lambda m: AttemptSerializer(attempts.mark_done(
            task=selectors.get_task(space=m.space, number=number), member=m,
            post_id=valid(DoneSerializer, {"post": post})["post"])).data,
            idempotency_key=idempotency_key, tool="mark_done", arguments={"number": number, "post": post})

    def confirm_attempt(self, number: int, attempt: int, idempotency_key: str | None = None) -> dict:
        """Confirm attempt `attempt` of task `number` (not your own, not one citing your post)."""
        return self._run(Role.WRITER, lambda m: AttemptSerializer(attempts.confirm_attempt(
            task=selectors.get_task(space=m.space, number=number), number=attempt, member=m)).data,
            idempotency_key=idempotency_key, tool="confirm_attempt", arguments={"number": number, "attempt": attempt})

    def reject_attempt(self, number: int, attempt: int, reason: str = "", idempotency_key: str | None = None) -> dict:
        """Reject attempt `attempt` of task `number`; the task reopens when no attempt waits."""
        def act(m):
            checked = valid(RejectSerializer, {"reason": reason})["reason"]
            result, reopened = attempts.reject_attempt(task=selectors.get_task(space=m.space, number=number),
                                                       number=attempt, member=m, reason=checked)
            return {"attempt": AttemptSerializer(result).data, "reopened": reopened}
        return self._run(Role.WRITER, act, idempotency_key=idempotency_key, tool="reject_attempt",
                         arguments={"number": number, "attempt": attempt, "reason": reason})

    def add_note(self, number: int, body: str, criterion: int | None = None,
                 idempotency_key: str | None = None) -> dict:
        """A review note on task `number`; the same note again is 409 naming the first one."""
        return self._run(Role.WRITER, lambda m: {"id": services.add_note(
            task=selectors.get_task(space=m.space, number=number), actor=m, attempt=self.attempt,
            **valid(NoteCreateSerializer, {"body": body, "criterion": criterion})).pk}, idempotency_key=idempotency_key, tool="add_note",
            arguments={"number": number, "body": body, "criterion": criterion})

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
        def act(m):
            data = valid(SupersedeSerializer, {"surviving_task": surviving_task, "reason": reason})
            return TaskSerializer(stewardship.supersede_task(
                task=selectors.get_task(space=m.space, number=number),
                survivor=selectors.get_task(space=m.space, number=data["surviving_task"]), actor=m,
                reason=data["reason"])).data
        return self._run(Role.STEWARD, act,
            idempotency_key=idempotency_key, tool="supersede_task",
            arguments={"number": number, "surviving_task": surviving_task, "reason": reason})

    def hold_slot(self, work_item_id: str, reason: str = "", idempotency_key: str | None = None) -> dict:
        """Steward: hold a catalog slot so no new task takes it."""
        return self._run(Role.STEWARD, lambda m: {"work_item_id": stewardship.hold_slot(
            space=m.space, actor=m, **valid(HoldSerializer, {"work_item_id": work_item_id, "reason": reason})
        ).work_item_id},
            idempotency_key=idempotency_key, tool="hold_slot", arguments={"work_item_id": work_item_id, "reason": reason})


class MCPEndpoint(MCPServerStreamableHttpView):
    """``/mcp``: the member's API key authenticates, as on every REST route."""

    schema = None  # JSON-RPC, not REST: kept out of the OpenAPI schema
    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [IsMember]
