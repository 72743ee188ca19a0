"""Task routes: list, create, window, one task, history, notes (SPEC §3.1, §4)."""
from __future__ import annotations

from django.db.models import Prefetch
from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from allocation import services as allocation_services
from allocation.api import HoldSerializer
from allocation.models import SlotHold
from common.problems import translate
from common.refusals import DomainError, NotFound
from spaces.api.pagination import IdCursorPagination
from spaces.api.views import SpaceView
from spaces.models import Role
from spaces.secrets import SecretAnswer, mark_secret, reissuer
from spaces.selectors import as_int, get_member
from tasks import attempts, claims, exports, graph, selectors, services, stewardship, summary
from tasks.errors import SurvivorInvalid
from tasks.filters import filter_tasks
from tasks.models import Attempt, Export, Notification
from tasks.serializers import (
    AssignSerializer,
    AttemptSerializer,
    BlockerSerializer,
    ClaimSerializer,
    CloseSerializer,
    DoneSerializer,
    MarkReadSerializer,
    NextSerializer,
    NoteCreateSerializer,
    NoteSerializer,
    NotificationSerializer,
    RejectSerializer,
    ShareSerializer,
    SupersedeSerializer,
    TaskCreateSerializer,
    TaskDetailSerializer,
    TaskEventSerializer,
    TaskSerializer,
    TaskUpdateSerializer,
    WindowSerializer,
)


class NumberCursorPagination(IdCursorPagination):
    ordering = "number"


class SearchPagination(LimitOffsetPagination):
    """A ``q`` list is ordered by how well tasks match, so it pages by offset (SPEC §13)."""

    default_limit = IdCursorPagination.page_size
    max_limit = IdCursorPagination.max_page_size


def attempt_of(request: Request):
    """The idempotent attempt this request runs under (allocation.runner), if it sent an Idempotency-Key."""
    return getattr(request._request, "idempotency_attempt", None)


class TaskListView(SpaceView):
    serializer_class = TaskSerializer
    required_roles = {"POST": Role.WRITER}

    @extend_schema(operation_id="tasks_list")
    def get(self, request: Request, slug: str) -> Response:
        tasks, searching = filter_tasks(self.space, request.query_params)
        return self.paginate(tasks, TaskSerializer, SearchPagination if searching else NumberCursorPagination,
                             prepare=graph.attach)

    @extend_schema(request=TaskCreateSerializer)
    def post(self, request: Request, slug: str) -> Response:
        data = self.validated(TaskCreateSerializer)
        # The space came with the API key in this request, catalog version included.
        task = services.create_task(space=self.space, actor=self.member, attempt=attempt_of(request),
                                    catalog_version=self.space.catalog_version, **data)
        return Response(TaskSerializer(task).data, status=status.HTTP_201_CREATED)


class SummaryView(SpaceView):
    """``GET …/summary`` (SPEC §14): the space at a glance, for any member."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, slug: str) -> Response:
        return Response(summary.space_summary(self.space))


class TaskWindowView(SpaceView):
    serializer_class = WindowSerializer
    required_roles = {"POST": Role.WRITER}

    def post(self, request: Request, slug: str) -> Response:
        proposals = self.validated(WindowSerializer)["proposals"]
        return Response({"results": run_window(space=self.space, actor=self.member, proposals=proposals,
                                               attempt=attempt_of(request),
                                               catalog_version=self.space.catalog_version)})


def run_window(*, space, actor, proposals: list, attempt=None, catalog_version: int | None = None) -> list[dict]:
    """SPEC §4.7 for any front: validate each proposal, create the valid ones in array order,
    answer each exactly as a single create would have."""
    results = []
    valid: list[tuple[int, dict]] = []
    for index, raw in enumerate(proposals):
        serializer = TaskCreateSerializer(data=raw)
        if serializer.is_valid():
            valid.append((index, serializer.validated_data))
        else:
            error = translate(ValidationError(serializer.errors))
            results.append({"index": index, "status": error.http_status, "body": error.as_body()})
    outcomes = services.create_tasks_window(space=space, actor=actor, proposals=[p for _, p in valid],
                                            attempt=attempt, catalog_version=catalog_version)
    for (index, _), outcome in zip(valid, outcomes):
        body = TaskSerializer(outcome.task).data if outcome.task else outcome.error.as_body()
        results.append({"index": index, "status": outcome.status, "body": body})
    return sorted(results, key=lambda r: r["index"])


class TaskDetailView(SpaceView):
    serializer_class = TaskDetailSerializer
    required_roles = {"PATCH": Role.WRITER}  # the creator or a steward: the service checks who

    def get(self, request: Request, slug: str, number: str) -> Response:
        return Response(TaskDetailSerializer(task_with_work(self.space, number)).data)

    @extend_schema(request=TaskUpdateSerializer, responses=TaskSerializer)
    def patch(self, request: Request, slug: str, number: str) -> Response:
        task = selectors.get_task(space=self.space, number=number)
        task = services.update_task(task=task, actor=self.member, **self.validated(TaskUpdateSerializer))
        return Response(TaskSerializer(task).data)


class BlockerListView(SpaceView):
    """``POST …/tasks/{n}/blockers {"task": m}``: task n waits on task m (SPEC §13)."""

    serializer_class = TaskSerializer
    required_roles = {"POST": Role.WRITER}

    @extend_schema(request=BlockerSerializer, responses={200: TaskSerializer, 201: TaskSerializer})
    def post(self, request: Request, slug: str, number: str) -> Response:
        blocker = self.validated(BlockerSerializer)["task"]
        task, added = graph.add_blocker(space=self.space, number=number, blocker_number=blocker, actor=self.member)
        return Response(TaskSerializer(task).data, status=status.HTTP_201_CREATED if added else status.HTTP_200_OK)


class BlockerDetailView(SpaceView):
    serializer_class = TaskSerializer
    required_roles = {"DELETE": Role.WRITER}

    @extend_schema(request=None, responses={204: None})
    def delete(self, request: Request, slug: str, number: str, blocker: str) -> Response:
        graph.remove_blocker(space=self.space, number=number, blocker_number=blocker, actor=self.member)
        return Response(status=status.HTTP_204_NO_CONTENT)


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
        note = services.add_note(task=task, actor=self.member, attempt=attempt_of(request), **data)
        return Response(NoteSerializer(note).data, status=status.HTTP_201_CREATED)


def task_with_work(space, number):
    task = selectors.get_task(space=space, number=number)
    attempts = Attempt.objects.select_related("member").prefetch_related("checks__member")
    return (
        type(task).objects.select_related("creator", "superseded_by")
        .prefetch_related("claims__member", Prefetch("attempts", queryset=attempts))
        .get(pk=task.pk)
    )


class NextView(SpaceView):
    """``POST …/next``: claim the lowest open task, a given one (``number``, ``join``), or an attempt to check."""

    serializer_class = NextSerializer
    required_roles = {"POST": Role.WRITER}

    @extend_schema(request=NextSerializer)
    def post(self, request: Request, slug: str) -> Response:
        data = self.validated(NextSerializer)
        if data["kind"] == "check":
            offered = attempts.offer_check(space=self.space, member=self.member)
            if offered is None:
                return Response({"task": None, "attempt": None})
            task, attempt = offered
            return Response({"task": TaskSerializer(task).data, "attempt": AttemptSerializer(attempt).data})
        if "number" in data:
            task, claim = claims.claim_task(space=self.space, member=self.member, number=data["number"],
                                            join=data["join"])
            task.refresh_from_db()
            return Response(claimed_body((task, claim)))
        return Response(claimed_body(claims.claim_next_task(space=self.space, member=self.member,
                                                            labels=data["labels"])))


def claimed_body(claimed) -> dict:
    """What ``next`` answers for a claim (task and claim), or for nothing to claim."""
    if claimed is None:
        return {"task": None}
    task, claim = claimed
    return {"task": TaskSerializer(task).data, "claim": ClaimSerializer(claim).data}


class GiveBackView(SpaceView):
    serializer_class = ClaimSerializer
    required_roles = {"POST": Role.WRITER}

    def post(self, request: Request, slug: str, number: str) -> Response:
        task = selectors.get_task(space=self.space, number=number)
        claim = claims.give_back(task=task, member=self.member)
        task.refresh_from_db()
        return Response({"task": TaskSerializer(task).data, "claim": ClaimSerializer(claim).data})


class AssignView(SpaceView):
    serializer_class = ClaimSerializer
    required_roles = {"POST": Role.STEWARD}

    @extend_schema(request=AssignSerializer)
    def post(self, request: Request, slug: str, number: str) -> Response:
        task = selectors.get_task(space=self.space, number=number)
        member = get_member(space=self.space, member_id=self.validated(AssignSerializer)["member"])
        claim = claims.assign_task(task=task, member=member, actor=self.member)
        task.refresh_from_db()
        return Response({"task": TaskSerializer(task).data, "claim": ClaimSerializer(claim).data})


class DoneView(SpaceView):
    serializer_class = AttemptSerializer
    required_roles = {"POST": Role.WRITER}

    @extend_schema(request=DoneSerializer)
    def post(self, request: Request, slug: str, number: str) -> Response:
        task = selectors.get_task(space=self.space, number=number)
        data = self.validated(DoneSerializer)
        attempt = attempts.mark_done(task=task, member=self.member, post_id=data["post"])
        task.refresh_from_db()
        return Response({"task": TaskSerializer(task).data, "attempt": AttemptSerializer(attempt).data},
                        status=status.HTTP_201_CREATED)


class CheckView(SpaceView):
    serializer_class = AttemptSerializer
    required_roles = {"POST": Role.WRITER}
    verdict = "confirm"

    @extend_schema(request=RejectSerializer)
    def post(self, request: Request, slug: str, number: str, attempt: str) -> Response:
        task = selectors.get_task(space=self.space, number=number)
        if self.verdict == "confirm":
            result = attempts.confirm_attempt(task=task, number=attempt, member=self.member)
            reopened = None
        else:
            reason = self.validated(RejectSerializer)["reason"]
            result, reopened = attempts.reject_attempt(task=task, number=attempt, member=self.member, reason=reason)
        task.refresh_from_db()
        body = {"task": TaskSerializer(task).data, "attempt": AttemptSerializer(result).data}
        if reopened:
            body["reopened"] = reopened
        return Response(body)


class RejectView(CheckView):
    verdict = "reject"


class NotificationListView(SpaceView):
    serializer_class = NotificationSerializer

    def get(self, request: Request) -> Response:
        items = Notification.objects.filter(member=self.member).select_related("task")
        if request.query_params.get("unread", "").lower() in ("1", "true", "yes"):
            items = items.filter(read_at=None)
        return self.paginate(items, NotificationSerializer)


class NotificationReadView(SpaceView):
    serializer_class = NotificationSerializer

    @extend_schema(request=MarkReadSerializer)
    def post(self, request: Request) -> Response:
        ids = self.validated(MarkReadSerializer).get("ids")
        items = Notification.objects.filter(member=self.member, read_at=None)
        if ids is not None:
            items = items.filter(pk__in=ids)
        return Response({"marked_read": items.update(read_at=timezone.now())})


class SupersedeView(SpaceView):
    serializer_class = TaskSerializer
    required_roles = {"POST": Role.STEWARD}

    @extend_schema(request=SupersedeSerializer)
    def post(self, request: Request, slug: str, number: str) -> Response:
        data = self.validated(SupersedeSerializer)
        task = selectors.get_task(space=self.space, number=number)
        try:
            survivor = selectors.get_task(space=self.space, number=data["surviving_task"])
        except DomainError:
            raise SurvivorInvalid(f"No task {data['surviving_task']} in this space to survive.") from None
        task = stewardship.supersede_task(task=task, survivor=survivor, actor=self.member, reason=data["reason"])
        return Response(TaskSerializer(task).data)


class WithdrawView(SpaceView):
    serializer_class = TaskSerializer
    required_roles = {"POST": Role.WRITER}  # the creator may withdraw; the service checks who

    @extend_schema(request=CloseSerializer)
    def post(self, request: Request, slug: str, number: str) -> Response:
        task = selectors.get_task(space=self.space, number=number)
        task = stewardship.withdraw_task(task=task, actor=self.member, reason=self.validated(CloseSerializer)["reason"])
        return Response(TaskSerializer(task).data)


class RejectTaskView(SpaceView):
    serializer_class = TaskSerializer
    required_roles = {"POST": Role.STEWARD}

    @extend_schema(request=CloseSerializer)
    def post(self, request: Request, slug: str, number: str) -> Response:
        task = selectors.get_task(space=self.space, number=number)
        task = stewardship.reject_task(task=task, actor=self.member, reason=self.validated(CloseSerializer)["reason"])
        return Response(TaskSerializer(task).data)


class ExportListView(SpaceView):
    required_roles = {"POST": Role.STEWARD}

    @extend_schema(request=None, responses={202: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str) -> Response:
        export = exports.request_export(space=self.space, actor=self.member, api_key=request.auth)
        return Response(exports.export_state(export), status=status.HTTP_202_ACCEPTED)


def get_export(space, export_id):
    export = Export.objects.filter(space=space, pk=as_int(export_id)).first()
    if export is None:
        raise NotFound(f"No export {export_id} in this space.")
    return export


class ExportDetailView(SpaceView):
    required_roles = {"GET": Role.STEWARD}

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, slug: str, export_id: str) -> Response:
        return Response(exports.export_state(get_export(self.space, export_id)))


class ExportShareView(SpaceView):
    serializer_class = ShareSerializer
    required_roles = {"POST": Role.STEWARD, "DELETE": Role.STEWARD}

    @extend_schema(request=ShareSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str, export_id: str) -> Response:
        export = get_export(self.space, export_id)
        hours = self.validated(ShareSerializer)["expires_in_hours"]
        token = exports.share_export(export=export, expires_in_hours=hours)
        base = request.build_absolute_uri("/v1/shares/")
        return mark_secret(Response(share_body(base, token), status=status.HTTP_201_CREATED),
                           SecretAnswer("share", ("token", "url"),
                                        {"export": export.pk, "base": base, "hours": hours}))

    @extend_schema(request=None, responses={204: None})
    def delete(self, request: Request, slug: str, export_id: str) -> Response:
        if not exports.unshare_export(export=get_export(self.space, export_id)):
            raise NotFound(f"Export {export_id} is not shared.")
        return Response(status=status.HTTP_204_NO_CONTENT)


def share_body(base: str, token: str) -> dict:
    return {"token": token, "url": base + token}


@reissuer("share")
def reissue_share(ref: dict) -> tuple[dict, dict]:
    """A replayed share: a fresh token for the same export; the lost answer's token stops opening it."""
    token = exports.share_export(export=Export.objects.get(pk=ref["export"]), expires_in_hours=ref["hours"])
    return share_body(ref["base"], token), ref


class SharedExportView(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, token: str) -> StreamingHttpResponse:
        # Streamed from the stored chunks: a million-task export is never held whole in memory.
        return StreamingHttpResponse(exports.shared_export(token=token), content_type="application/json")


class ExportRetryView(SpaceView):
    """``POST …/exports/{id}/retry`` (SPEC §7.3): a failed export is retryable again."""

    required_roles = {"POST": Role.STEWARD}

    @extend_schema(request=None, responses={202: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str, export_id: str) -> Response:
        export = exports.retry_export(export=get_export(self.space, export_id))
        return Response(exports.export_state(export), status=status.HTTP_202_ACCEPTED)


# --- Holds (SPEC §5.2): allocation keeps the hold, tasks the history it writes. ---


def hold_body(hold) -> dict:
    return {"work_item_id": hold.work_item_id, "reason": hold.reason, "held_by": hold.held_by_id,
            "created_at": hold.created_at}


class HoldListView(SpaceView):
    serializer_class = HoldSerializer
    required_roles = {"POST": Role.STEWARD}

    def get(self, request: Request, slug: str) -> Response:
        return Response({"results": [hold_body(h) for h in SlotHold.objects.filter(space=self.space).order_by("pk")]})

    def post(self, request: Request, slug: str) -> Response:
        data = self.validated(HoldSerializer)
        hold = stewardship.hold_slot(space=self.space, actor=self.member, **data)
        return Response(hold_body(hold), status=status.HTTP_201_CREATED)


class HoldDetailView(SpaceView):
    serializer_class = HoldSerializer
    required_roles = {"DELETE": Role.STEWARD}

    def delete(self, request: Request, slug: str, work_item_id: str) -> Response:
        if not allocation_services.release_slot(space=self.space, work_item_id=work_item_id):
            raise NotFound(f"Slot {work_item_id} is not held.")
        return Response(status=status.HTTP_204_NO_CONTENT)
