"""A refusal over MCP logs no traceback; a server error does (common.logs.DropRefusals)."""
from __future__ import annotations

import json
import logging
import sys

from mcp.server.fastmcp.exceptions import ToolError


def logged(error: Exception) -> list[logging.LogRecord]:
    logger = logging.getLogger("mcp_server.djangomcp")
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep()
    logger.addHandler(keep)
    try:
        try:
            raise error
        except Exception:
            logger.exception("Error in tool invocation", exc_info=sys.exc_info())
    finally:
        logger.removeHandler(keep)
    return records


def test_a_refused_tool_logs_nothing_and_a_crashed_one_logs_its_traceback():
    assert logged(ToolError(json.dumps({"error": "allocation_conflict", "status": 409}))) == []
    assert logged(ToolError(json.dumps({"error": "invalid_request", "status": 422}))) == []
    assert len(logged(ToolError(json.dumps({"error": "internal", "status": 500})))) == 1
    assert len(logged(RuntimeError("a bug"))) == 1
