"""Logging: refusals (4xx) are answers, not incidents."""
from __future__ import annotations

import json
import logging


class DropRefusals(logging.Filter):
    """Drops the MCP library's "Error in tool invocation" traceback when the tool's error is a
    refusal: our tools raise ``ToolError`` whose text is the REST problem body, and one with a
    4xx ``status`` is the service answering as it should. Server errors stay logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is None or type(error).__name__ != "ToolError":
            return True
        try:
            status = json.loads(str(error)).get("status")
        except (ValueError, AttributeError):
            return True
        return not (isinstance(status, int) and 400 <= status < 500)
