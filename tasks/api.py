"""Task routes: list, create, window, one task, history, notes (SPEC §3.1, §4)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from spaces.api.pagination import IdCursorPagination
from spaces.api.problems import translate
from spaces.api.views import SpaceView
from spaces.models import Role
from tasks import selectors, services
from tasks.filters import TaskFilter
from tasks.models import TaskStatus
from tasks.serializers import (
    NoteCreateSerializer,
    NoteSerializer,
    TaskCreateSerializer,
    TaskEventSerializer,
    TaskSerializer,
    WindowSerializer,
)


class NumberCursorPagination(IdCursorPagination):
    ordering = "number"


def operation_of(request: Request):
    """The idempotent operation this request runs under, if it sent an Idempotency-Key."""
    return getattr(request._request, "idempotency_operation", None)


class TaskListView(SpaceView):
    serializer_class = TaskSerializer
    required_roles = {"POST": Role.WRITER}

    @extend_schema(operation_id="tasks_list")
    def get(self, request: Request, slug: str) -> Response:
        statuses = request.query_params.getlist("status")
        include = request.query_params.get("include_superseded", "").lower() in ("1", "true", "yes")
        tasks = selectors.list_tasks(space=self.space, include_superseded=include or TaskStatus.SUPERSEDED in statuses)
        filtered = TaskFilter(request.query_params, queryset=tasks)
        if not filtered.is_valid():
            from spaces.errors import InvalidRequest

            raise InvalidRequest("Bad filter.", fields={k: [str(e) for e in v] for k, v in filtered.errors.items()})
        return self.paginate(filtered.qs, TaskSerializer, NumberCursorPagination)

    @extend_schema(request=TaskCreateSerializer)
    def post(self, request: Request, slug: str) -> Response:
        data = self.validated(TaskCreateSerializer)
        task = services.create_task(space=self.space, actor=self.member, operation=operation_of(request), **data)
        return Response(TaskSerializer(task).data, status=status.HTTP_201_CREATED)


class TaskWindowView(SpaceView):
    serializer_class = WindowSerializer
    required_roles = {"POST": Role.WRITER}

    def post(self, request: Request, slug: str) -> Response:
        proposals = self.validated(WindowSerializer)["proposals"]
        results = []
        valid: list[tuple[int, dict]] = []
        for index, raw in enumerate(proposals):
            serializer = TaskCreateSerializer(data=raw)
            if serializer.is_valid():
                valid.append((index, serializer.validated_data))
            else:
                error = translate(_validation_error(serializer))
                results.append({"index": index, "status": error.http_status, "body": error.as_body()})
        outcomes = services.create_tasks_window(
            space=self.space, actor=self.member, proposals=[p for _, p in valid], operation=operation_of(request)
        )
        for (index, _), outcome in zip(valid, outcomes):
            body = TaskSerializer(outcome.task).data if outcome.task else outcome.error.as_body()
            results.append({"index": index, "status": outcome.status, "body": body})
        results.sort(key=lambda r: r["index"])
        return Response({"results": results})


def _validation_error(serializer):
    from rest_framework.exceptions import ValidationError

    return ValidationError(serializer.errors)


class TaskDetailView(SpaceView):
    serializer_class = TaskSerializer

    def get(self, request: Request, slug: str, number: str) -> Response:
        return Response(TaskSerializer(selectors.get_task(space=self.space, number=number)).data)


class TaskHistoryView(SpaceView):
    serializer_class = TaskEventSerializer

    def get(self, request: Request, slug: str, number: str) -> Response:
        task = selectors.get_task(space=self.space, number=number)
        return self.paginate(task.events.select_related("actor"), TaskEventSerializer)


class TaskNotesView(SpaceView):
    serializer_class = NoteSerializer
    required_roles = {"POST": Role.WRITER}

    def get(self, request: Request, slug: str, number: str) -> Response:
        task = selectors.get_task(space=self.space, number=number)
        return self.paginate(task.notes.select_related("author"), NoteSerializer)

    @extend_schema(request=NoteCreateSerializer)
    def post(self, request: Request, slug: str, number: str) -> Response:
        task = selectors.get_task(space=self.space, number=number)
        data = self.validated(NoteCreateSerializer)
        note = services.add_note(task=task, actor=self.member, operation=operation_of(request), **data)
        return Response(NoteSerializer(note).data, status=status.HTTP_201_CREATED)
