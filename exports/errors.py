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
