"""A task's updates as an A2A stream (``SendStreamingMessage``, ``SubscribeToTask``; SPEC §18),
followed on the space's feed (SPEC §17) by the same means as ``GET …/events``' stream: a thread,
never a database connection, while nothing happens.

The stream opens with the Task; then each event of the task's history is a status update (the
event's type in ``metadata.spaces.event``), a completed task's artifact goes before its last
update, and the stream ends when the task ends (a superseded task is followed to its survivor),
or after ``events.feed.STREAM_SECONDS`` (the requester subscribes again).
"""
from __future__ import annotations

from typing import Iterator

from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format

from events import feed
from events.models import FeedCounter
from fronts.a2a.operations import task_body
from fronts.a2a.tasks import TERMINAL, as_task, struct
from commands.running import Caller

KEEP_ALIVE = None  # what the stream yields when it has nothing to say for a while


def feed_position(space_id: int) -> int:
    """The space's last committed seq: read before the Task it opens with, so nothing after is missed."""
    return FeedCounter.objects.filter(space_id=space_id).values_list("last_seq", flat=True).first() or 0


def updates(caller: Caller, opening: pb.Task, after: int, wait_for: feed.WaitForEvent
            ) -> Iterator[pb.StreamResponse | None]:
    """The stream of task ``opening``: the Task, then its updates; ``KEEP_ALIVE`` while idle."""
    space = caller.member.space
    yield pb.StreamResponse(task=opening)
    if opening.status.state in TERMINAL:
        return
    watched = {int(opening.id), *survivor_of(opening)}
    for page in feed.follow(space.pk, after, types=[], task=None, wait_for=wait_for):
        mine = [event for event in page.events if event.task_number in watched]
        if not mine:
            if not page.events:
                yield KEEP_ALIVE
            continue
        task = as_task(space, task_body(caller, opening.id), history_length=0)
        watched.update(survivor_of(task))  # a survivor's changes are this task's now
        yield from changes(task, [event.type for event in mine])
        if task.status.state in TERMINAL:
            return
    # The stream's time is up, or the server is stopping: the requester subscribes again.


def spaces_metadata(task: pb.Task) -> dict:
    return json_format.MessageToDict(task.metadata).get("spaces", {})


def survivor_of(task: pb.Task) -> list[int]:
    survivor = spaces_metadata(task).get("superseded_by")
    return [int(survivor)] if survivor is not None else []


def changes(task: pb.Task, types: list[str]) -> Iterator[pb.StreamResponse]:
    """The updates of ``types`` (the task's events since the last), as the task stands now."""
    if task.status.state == pb.TaskState.TASK_STATE_COMPLETED:
        for artifact in task.artifacts:
            yield pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(
                task_id=task.id, context_id=task.context_id, artifact=artifact, last_chunk=True))
    spaces = spaces_metadata(task)
    for type in types:
        yield pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
            task_id=task.id, context_id=task.context_id, status=task.status,
            metadata=struct({"spaces": {**spaces, "event": type}})))
