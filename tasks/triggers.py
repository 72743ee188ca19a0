"""The task rule the database keeps (SPEC §17): every history event of a task is also an event
of its space's feed, written by the same statement that writes the history row, whichever code
path wrote it (the ORM, the create statement, next's statement) — a trigger, so there is no
second path to forget. The feed's type is ``task.`` and the history kind; its data is the
history's details; the feed numbers it as it commits (``events.triggers.seal``). Applied by
``tasks/migrations/0024_history_into_the_feed_by_name.py``; ``tests/events/test_triggers.py``
holds the database's definition to this one."""
from __future__ import annotations

from functools import cache

from common.sql import Trigger, column, table
from events.models import Event
from tasks.models import Task, TaskEvent


@cache
def history_into_feed() -> Trigger:
    into = ", ".join(column(Event, name) for name in ("space", "seq", "type", "task_number", "actor", "data", "at"))
    return Trigger("tasks_history_into_feed", on=TaskEvent._meta.db_table, timing="AFTER INSERT", body=f"""
BEGIN
    INSERT INTO {table(Event)} ({into})
    SELECT NEW.{column(TaskEvent, "space")}, NULL, 'task.' || NEW.{column(TaskEvent, "kind")}, t.{column(Task, "number")},
           NEW.{column(TaskEvent, "actor")}, NEW.{column(TaskEvent, "details")}, NEW.{column(TaskEvent, "created_at")}
    FROM {table(Task)} t WHERE t.{column(Task, "id")} = NEW.{column(TaskEvent, "task")};
    RETURN NULL;
END """)
