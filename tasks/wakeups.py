"""Work made ready wakes the agents waiting for it (SPEC §15).

The transaction that makes work ready — a task created, unblocked, given back, reopened or
relabelled, a claim lapsed, an attempt to check — sends ``NOTIFY spaces_work, '<space id>'`` (``tasks.sql.WORK_READY``).
PostgreSQL delivers it when that transaction commits, and not at all when it rolls back, so
a waiter is never woken for work that is not there; several in one transaction arrive as one.
Each server process listens (``tasks.waiting``) and wakes its waiters of that space.
"""
from __future__ import annotations

from django.db import connection

from tasks import sql
from telemetry import tracing


def work_ready(space_id: int) -> None:
    """Work in this space may be ready for someone: wake its waiters when this commits."""
    with connection.cursor() as cursor:
        cursor.execute(sql.WORK_READY, [space_id, tracing.wake_context()])
