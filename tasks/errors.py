"""Task refusals (SPEC §4–§6)."""
from __future__ import annotations

from spaces.errors import DomainError


class TaskSuperseded(DomainError):
    code = "task_superseded"
    http_status = 409
    title = "Task superseded"
    meaning = "This task was superseded by a duplicate's survivor: `surviving_task` names the task to work on."


class WindowTooLarge(DomainError):
    code = "window_too_large"
    http_status = 422
    title = "Window too large"
    meaning = "A window holds 1 to 500 proposals."
