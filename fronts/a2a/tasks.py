"""A space's task as an A2A ``Task`` (SPEC §18).

Built from the task's answer as the commands give it (``TaskSerializer``'s shape, the same for
every front), with what A2A shows beside it: the accepted attempt's post as an artifact, the
task's history as messages, and, for a superseded task, the state of the task that replaced it.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from a2a.types import a2a_pb2 as pb
from django.db.models import QuerySet
from django.utils import timezone
from google.protobuf.struct_pb2 import Struct
from google.protobuf.timestamp_pb2 import Timestamp

from spaces.models import Post, Space
from tasks import history, questions
from tasks.models import Attempt, AttemptState, Task, TaskEvent, TaskStatus
from tasks.status import with_shown_status

State = pb.TaskState

# SPEC §18: a Spaces status as an A2A task state (superseded: the survivor's).
STATES: dict[str, int] = {
    TaskStatus.PROPOSED: State.TASK_STATE_SUBMITTED,  # SPEC §21: metadata.spaces.awaiting says "approval"
    TaskStatus.OPEN: State.TASK_STATE_SUBMITTED,
    TaskStatus.PARKED: State.TASK_STATE_SUBMITTED,  # SPEC §22: back in the queue once a steward unparks it
    TaskStatus.CLAIMED: State.TASK_STATE_WORKING,
    TaskStatus.ASSIGNED: State.TASK_STATE_WORKING,
    TaskStatus.IN_REVIEW: State.TASK_STATE_WORKING,
    # SPEC §21: input required while a question to the creator is open (as_task), else working.
    TaskStatus.WAITING: State.TASK_STATE_WORKING,
    TaskStatus.DONE: State.TASK_STATE_COMPLETED,
    TaskStatus.WITHDRAWN: State.TASK_STATE_CANCELED,
    TaskStatus.REJECTED: State.TASK_STATE_REJECTED,
}
TERMINAL = frozenset({State.TASK_STATE_COMPLETED, State.TASK_STATE_CANCELED, State.TASK_STATE_REJECTED,
                      State.TASK_STATE_FAILED})
MAX_SUPERSEDED_HOPS = 20  # a chain of supersessions is followed this far to its survivor
MAX_HISTORY = 500  # a Task shows at most its latest events (the REST history route pages them all)


def statuses_of(state: int) -> list[str]:
    """The Spaces statuses an A2A state stands for (``ListTasks`` by state)."""
    return [status for status, mapped in STATES.items() if mapped == state]


def struct(values: dict[str, Any]) -> Struct:
    message = Struct()
    message.update(values)
    return message


def survivor_status(space: Space, number: int) -> tuple[str, int]:
    """The status a read shows of the task that replaced ``number`` (followed along a chain of
    supersessions), and its number."""
    for _ in range(MAX_SUPERSEDED_HOPS):
        task = with_shown_status(Task.objects.filter(space=space, number=number), timezone.now()).select_related(
            "superseded_by").first()
        status = getattr(task, "shown_status", task.status)
        if status != TaskStatus.SUPERSEDED or task.superseded_by_id is None:
            return status, number
        number = task.superseded_by.number
    return TaskStatus.OPEN, number


def artifact_of(space: Space, number: int) -> pb.Artifact | None:
    """The accepted attempt's post (SPEC §18: a completed task's artifact)."""
    attempt = (Attempt.objects.filter(task__space=space, task__number=number, state=AttemptState.ACCEPTED)
               .order_by("-cycle", "-number").first())
    if attempt is None:
        return None
    post = Post.objects.filter(space=space, pk=attempt.post_id).first()
    text = "" if post is None or post.withheld_at or post.hidden_at else post.body
    return pb.Artifact(artifact_id=f"attempt-{attempt.cycle}-{attempt.number}", name=f"Attempt {attempt.number}",
                       parts=[pb.Part(text=text, media_type="text/plain")],
                       metadata=struct({"attempt": attempt.number, "cycle": attempt.cycle, "post": attempt.post_id}))


def history_of(space: Space, number: int, context_id: str, length: int | None) -> list[pb.Message]:
    """The task's history (SPEC §8) as agent messages, oldest first; the last ``length`` of them
    (at most MAX_HISTORY)."""
    events: QuerySet[TaskEvent] = TaskEvent.objects.filter(space=space, task__number=number).order_by("-id")
    events = events[:min(MAX_HISTORY, MAX_HISTORY if length is None else length)]
    found = list(events)[::-1]
    names = history.member_names(found)
    return [pb.Message(message_id=f"event-{event.pk}", context_id=context_id, task_id=str(number),
                       role=pb.Role.ROLE_AGENT, parts=[pb.Part(text=history.sentence(event, names))],
                       metadata=struct({"kind": event.kind, "actor": history.actor_name(event, names),
                                        "at": event.created_at.isoformat()}))
            for event in found]


def as_task(space: Space, body: dict[str, Any], *, history_length: int | None = 0, artifacts: bool = True,
            extra: dict[str, Any] | None = None) -> pb.Task:
    """The A2A Task of a task's answer (``body``); ``history_length`` None for all of its
    history, ``extra`` added to ``metadata.spaces``."""
    number, status = body["number"], body["status"]
    spaces: dict[str, Any] = {"number": number, "status": status, "work_item_id": body["work_item_id"],
                              "conflict_key": body["conflict_key"], "priority": body["priority"],
                              "labels": body["labels"], **(extra or {})}
    if status == TaskStatus.PROPOSED:
        spaces["awaiting"] = "approval"
    question = questions.open_to_creator(space_id=space.pk, number=number) if status == TaskStatus.WAITING else None
    if question is not None:
        spaces["awaiting"], spaces["question"] = "answer", question.pk
    shown = status
    if status == TaskStatus.SUPERSEDED and body.get("superseded_by"):
        shown, survivor = survivor_status(space, body["superseded_by"])
        spaces["superseded_by"] = survivor
    state = STATES.get(shown, State.TASK_STATE_SUBMITTED)
    status_message = None
    if question is not None:  # the question is the status message; the requester's reply answers it
        state = State.TASK_STATE_INPUT_REQUIRED
        status_message = pb.Message(message_id=f"question-{question.pk}", context_id=space.slug, task_id=str(number),
                                    role=pb.Role.ROLE_AGENT, parts=[pb.Part(text=question.body)],
                                    metadata=struct({"question": question.pk, "options": list(question.options)}))
    task = pb.Task(id=str(number), context_id=space.slug,
                   status=pb.TaskStatus(state=state, timestamp=timestamp(body["updated_at"]), message=status_message),
                   metadata=struct({"spaces": spaces}))
    if artifacts and state == State.TASK_STATE_COMPLETED:
        artifact = artifact_of(space, spaces.get("superseded_by", number))
        if artifact is not None:
            task.artifacts.append(artifact)
    if history_length != 0:
        task.history.extend(history_of(space, number, space.slug, history_length))
    return task


def timestamp(iso: str) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(datetime.fromisoformat(iso.replace("Z", "+00:00")))
    return stamp
