"""The refusals of exports (SPEC §7.3)."""
from __future__ import annotations

from common.refusals import DomainError


class ExportNotFailed(DomainError):
    code = "export_not_failed"
    http_status = 409
    title = "Export not failed"
    meaning = "Only a failed export is retried by hand; one still unknown or in progress is retried by the worker."


class ExportNotCompleted(DomainError):
    code = "export_not_completed"
    http_status = 409
    title = "Export not completed"
    meaning = "The export has not completed under the tuple it was reserved with; poll it and share once completed."


class ExportQueueFull(DomainError):
    code = "export_queue_full"
    http_status = 429
    title = "Too many exports"
    meaning = ("The space already has max_queued_exports exports waiting or running: retry after `retry_after_ms`, "
               "once one has completed or failed.")
