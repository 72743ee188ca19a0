"""Task routes: list, create, window, one task, history, notes (SPEC §3.1, §4)."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from allocation.serializers import BindSerializer, HoldSerializer
from allocation.models import SlotHold
from fronts.rest.pagination import IdCursorPagination, RankedPagination
from fronts.rest.schema import page_of
from fronts.rest.spaces import CURSOR_PAGING, PAGING, SpaceView
from spaces.catalog import MAX_TITLE
from spaces.models import Role
from tasks import commands, graph, selectors, summary
from fronts.task_filters import LIST_PARAMETER_SCHEMAS, LIST_PARAMETERS, filter_tasks
from tasks.models import Notification
from tasks.serializers import (
    AnswerSerializer,
    AskSerializer,
    DirectMessageSerializer,
    MessageCreateSerializer,
    MessageSerializer,
    QuestionSerializer,
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


class TaskListView(SpaceView):
    serializer_class = TaskSerializer
    required_roles = {"POST": commands.create_task.role}
    query_parameters = PAGING | LIST_PARAMETERS
    query_schemas = LIST_PARAMETER_SCHEMAS

    @page_of(TaskSerializer, "Task")
    @extend_schema(operation_id="tasks_list")
    def get(self, request: Request, slug: str) -> Response:
        tasks, by_offset = filter_tasks(self.space, request.query_params)
        return self.paginate(tasks, TaskSerializer, RankedPagination if by_offset else NumberCursorPagination,
                             prepare=graph.attach)

    @extend_schema(request=TaskCreateSerializer, responses={201: TaskSerializer})
    def post(self, request: Request, slug: str) -> Response:
        return self.run(commands.create_task)


class SummaryView(SpaceView):
    """``GET …/summary`` (SPEC §14): the space at a glance, for any member."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, slug: str) -> Response:
        return Response(summary.space_summary(self.space))


class BindView(SpaceView):
    """``POST …/bind`` (SPEC §4.3, §16): the bind decision and the similar live tasks; writes nothing."""

    serializer_class = BindSerializer

    @extend_schema(request=BindSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, slug: str) -> Response:
        return self.run(commands.bind_title)


class SimilarTasksView(SpaceView):
    """``GET …/tasks/similar?title=…`` (SPEC §16): the live tasks most like a title."""

    query_parameters = frozenset({"title"})

    @extend_schema(responses=OpenApiTypes.OBJECT, parameters=[OpenApiParameter(
        "title", {"type": "string", "minLength": 1, "maxLength": MAX_TITLE, "pattern": "^[^\\x00]*$"}, required=True)])
    def get(self, request: Request, slug: str) -> Response:
        reply = commands.similar_tasks(self.member, unit=None, data=dict(request.query_params.items()))
        return Response(reply.body, status=reply.status)


class LikelyDuplicatesView(SpaceView):
    """``GET …/tasks/duplicates`` (SPEC §16): pairs of live tasks likely to be the same work."""

    query_parameters = frozenset()

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, slug: str) -> Response:
        return self.run(commands.likely_duplicates)


class NotDuplicateView(SpaceView):
    """``POST …/tasks/{n}/not-duplicate {"task": m}``: a steward says n and m are distinct work."""

    required_roles = {"POST": commands.mark_not_duplicate.role}

    @extend_schema(request=BlockerSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.mark_not_duplicate, number=number)


class TaskWindowView(SpaceView):
    serializer_class = WindowSerializer
    required_roles = {"POST": commands.create_tasks.role}

    @extend_schema(responses=inline_serializer("WindowResults", fields={"results": serializers.ListField(
        child=inline_serializer("WindowResult", fields={
            "index": serializers.IntegerField(), "status": serializers.IntegerField(),
            "body": serializers.DictField(help_text="What POST …/tasks answers for this proposal.")}))}))
    def post(self, request: Request, slug: str) -> Response:
        return self.run(commands.create_tasks)


class TaskDetailView(SpaceView):
    serializer_class = TaskDetailSerializer
    required_roles = {"PATCH": commands.update_task.role}  # the creator or a steward: the service checks who

    def get(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.get_task, number=number)

    @extend_schema(request=TaskUpdateSerializer, responses=TaskSerializer)
    def patch(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.update_task, number=number)


class BlockerListView(SpaceView):
    """``POST …/tasks/{n}/blockers {"task": m}``: task n waits on task m (SPEC §13)."""

    serializer_class = TaskSerializer
    required_roles = {"POST": commands.add_blocker.role}

    @extend_schema(request=BlockerSerializer, responses={200: TaskSerializer, 201: TaskSerializer})
    def post(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.add_blocker, number=number)


class BlockerDetailView(SpaceView):
    serializer_class = TaskSerializer
    required_roles = {"DELETE": commands.remove_blocker.role}

    @extend_schema(request=None, responses={204: None})
    def delete(self, request: Request, slug: str, number: str, blocker: str) -> Response:
        self.run(commands.remove_blocker, number=number, blocker=blocker)
        return Response(status=status.HTTP_204_NO_CONTENT)  # SPEC §13: a DELETE answers no body


class TaskHistoryView(SpaceView):
    serializer_class = TaskEventSerializer

    query_parameters = CURSOR_PAGING

    @page_of(TaskEventSerializer, "TaskEvent")
    def get(self, request: Request, slug: str, number: str) -> Response:
        task = selectors.get_task(space=self.space, number=number)
        return self.paginate(task.events.select_related("actor"), TaskEventSerializer)


class TaskNotesView(SpaceView):
    serializer_class = NoteSerializer
    required_roles = {"POST": commands.add_note.role}

    query_parameters = CURSOR_PAGING

    @page_of(NoteSerializer, "Note")
    def get(self, request: Request, slug: str, number: str) -> Response:
        task = selectors.get_task(space=self.space, number=number)
        return self.paginate(task.notes.select_related("author"), NoteSerializer)

    @extend_schema(request=NoteCreateSerializer, responses={201: NoteSerializer})
    def post(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.add_note, number=number)


class NextView(SpaceView):
    """``POST …/next``: claim the most urgent ready task, a given one (``number``, ``join``), or an attempt to check."""

    serializer_class = NextSerializer
    required_roles = {"POST": commands.next_task.role}

    @extend_schema(request=NextSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, slug: str) -> Response:
        return self.run(commands.next_task)


class GiveBackView(SpaceView):
    serializer_class = ClaimSerializer
    required_roles = {"POST": commands.give_back.role}

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.give_back, number=number)


class HeartbeatView(SpaceView):
    """``POST …/tasks/{n}/heartbeat`` (SPEC §15): the holder renews its claim's lease."""

    serializer_class = ClaimSerializer
    required_roles = {"POST": commands.heartbeat.role}

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.heartbeat, number=number)


class AssignView(SpaceView):
    serializer_class = ClaimSerializer
    required_roles = {"POST": commands.assign_task.role}

    @extend_schema(request=AssignSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.assign_task, number=number)


class DoneView(SpaceView):
    serializer_class = AttemptSerializer
    required_roles = {"POST": commands.mark_done.role}

    @extend_schema(request=DoneSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.mark_done, number=number)


class CheckView(SpaceView):
    serializer_class = AttemptSerializer
    required_roles = {"POST": commands.confirm_attempt.role}
    command = commands.confirm_attempt

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, slug: str, number: str, attempt: str) -> Response:
        return self.run(self.command, number=number, attempt=attempt)


class RejectView(CheckView):
    required_roles = {"POST": commands.reject_attempt.role}
    command = commands.reject_attempt

    @extend_schema(request=RejectSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, slug: str, number: str, attempt: str) -> Response:
        return self.run(self.command, number=number, attempt=attempt)


class NotificationListView(SpaceView):
    serializer_class = NotificationSerializer
    query_parameters = CURSOR_PAGING | {"unread"}

    @page_of(NotificationSerializer, "Notification")
    def get(self, request: Request) -> Response:
        items = Notification.objects.filter(member=self.member).select_related("task")
        if request.query_params.get("unread", "").lower() in ("1", "true", "yes"):
            items = items.filter(read_at=None)
        return self.paginate(items, NotificationSerializer)


class NotificationReadView(SpaceView):
    serializer_class = NotificationSerializer

    @extend_schema(request=MarkReadSerializer, responses=inline_serializer(
        name="MarkedRead", fields={"marked_read": serializers.IntegerField(min_value=0)}))
    def post(self, request: Request) -> Response:
        return self.run(commands.MARK_READ)


class SupersedeView(SpaceView):
    serializer_class = TaskSerializer
    required_roles = {"POST": commands.supersede_task.role}

    @extend_schema(request=SupersedeSerializer)
    def post(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.supersede_task, number=number)


class WithdrawView(SpaceView):
    serializer_class = TaskSerializer
    required_roles = {"POST": commands.withdraw_task.role}  # the creator may withdraw; the service checks who

    @extend_schema(request=CloseSerializer)
    def post(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.withdraw_task, number=number)


class RejectTaskView(SpaceView):
    serializer_class = TaskSerializer
    required_roles = {"POST": commands.reject_task.role}

    @extend_schema(request=CloseSerializer)
    def post(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.reject_task, number=number)


class ApproveView(SpaceView):
    """SPEC §21: a proposed task approved (→ open) by a steward or its approver."""
    serializer_class = TaskSerializer
    required_roles = {"POST": commands.approve_task.role}

    @extend_schema(request=None)
    def post(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.approve_task, number=number)


class RefuseView(SpaceView):
    """SPEC §21: a proposed task refused (→ rejected, its key freed) by a steward or its approver."""
    serializer_class = TaskSerializer
    required_roles = {"POST": commands.refuse_task.role}

    @extend_schema(request=CloseSerializer)
    def post(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.refuse_task, number=number)


class UnparkView(SpaceView):
    """SPEC §22: a parked task back in the queue (→ open, its setbacks counted from 0), by a steward."""
    serializer_class = TaskSerializer
    required_roles = {"POST": commands.unpark_task.role}

    @extend_schema(request=None)
    def post(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.unpark_task, number=number)


# --- Questions, messages and the inbox (SPEC §21) ---


class QuestionListView(SpaceView):
    """``…/tasks/{n}/questions``: ask one (a holder, the creator or a steward), or list them."""
    serializer_class = QuestionSerializer
    required_roles = {"POST": commands.ask_question.role}

    @extend_schema(responses=inline_serializer("Questions", fields={"results": QuestionSerializer(many=True)}))
    def get(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.LIST_QUESTIONS, number=number)

    @extend_schema(request=AskSerializer, responses={201: QuestionSerializer})
    def post(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.ask_question, number=number)


class QuestionAnswerView(SpaceView):
    serializer_class = QuestionSerializer
    required_roles = {"POST": commands.answer_question.role}  # an addressee or a steward: the service checks

    @extend_schema(request=AnswerSerializer)
    def post(self, request: Request, slug: str, number: str, question: str) -> Response:
        return self.run(commands.answer_question, number=number, question=question)


class QuestionWithdrawView(SpaceView):
    serializer_class = QuestionSerializer
    required_roles = {"POST": commands.WITHDRAW_QUESTION.role}  # the asker or a steward: the service checks

    @extend_schema(request=None)
    def post(self, request: Request, slug: str, number: str, question: str) -> Response:
        return self.run(commands.WITHDRAW_QUESTION, number=number, question=question)


class TaskMessagesView(SpaceView):
    """``…/tasks/{n}/messages``: the task's thread, oldest first, or a message posted to it."""
    serializer_class = MessageSerializer
    required_roles = {"POST": commands.post_task_message.role}

    @extend_schema(responses=inline_serializer("Messages", fields={"results": MessageSerializer(many=True)}))
    def get(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.LIST_TASK_MESSAGES, number=number)

    @extend_schema(request=MessageCreateSerializer, responses={201: MessageSerializer})
    def post(self, request: Request, slug: str, number: str) -> Response:
        return self.run(commands.post_task_message, number=number)


class DirectMessagesView(SpaceView):
    serializer_class = MessageSerializer
    required_roles = {"POST": commands.post_direct_message.role}

    @extend_schema(request=DirectMessageSerializer, responses={201: MessageSerializer})
    def post(self, request: Request, slug: str) -> Response:
        return self.run(commands.post_direct_message)


class InboxView(SpaceView):
    """``GET /v1/inbox``: what waits on the caller (SPEC §21)."""
    serializer_class = QuestionSerializer

    @extend_schema(responses=inline_serializer("Inbox", fields={
        "questions": QuestionSerializer(many=True), "approvals": TaskSerializer(many=True),
        "checks": serializers.ListField(child=inline_serializer("InboxCheck", fields={
            "task": serializers.IntegerField(), "attempt": serializers.IntegerField(),
            "member": serializers.IntegerField(), "post": serializers.IntegerField()})),
        "messages": MessageSerializer(many=True)}))
    def get(self, request: Request) -> Response:
        return self.run(commands.read_inbox)


class InboxReadView(SpaceView):
    serializer_class = MessageSerializer

    @extend_schema(request=MarkReadSerializer, responses=inline_serializer(
        name="InboxMarkedRead", fields={"marked_read": serializers.IntegerField(min_value=0)}))
    def post(self, request: Request) -> Response:
        return self.run(commands.MARK_INBOX_READ)


# --- Holds (SPEC §5.2): allocation keeps the hold, tasks the history it writes. ---


class HoldListView(SpaceView):
    serializer_class = HoldSerializer
    required_roles = {"POST": Role.STEWARD}

    @extend_schema(responses=inline_serializer("Holds", fields={"results": HoldSerializer(many=True)}))
    def get(self, request: Request, slug: str) -> Response:
        return Response({"results": [commands.hold_body(h) for h in SlotHold.objects.filter(space=self.space).order_by("pk")]})

    @extend_schema(responses={201: HoldSerializer})
    def post(self, request: Request, slug: str) -> Response:
        return self.run(commands.hold_slot)


class HoldDetailView(SpaceView):
    serializer_class = HoldSerializer
    required_roles = {"DELETE": commands.release_slot.role}

    @extend_schema(request=None, responses={204: None})
    def delete(self, request: Request, slug: str, work_item_id: str) -> Response:
        self.run(commands.release_slot, work_item_id=work_item_id)
        return Response(status=status.HTTP_204_NO_CONTENT)  # a DELETE answers no body
