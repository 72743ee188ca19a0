"""What every MCP tool answers with: who calls, a refusal, a structured result."""
from __future__ import annotations

import contextvars
import json
from typing import Any

from mcp.types import CallToolResult, TextContent

from commands.running import Caller

CALLER: contextvars.ContextVar[Caller] = contextvars.ContextVar("mcp_caller")


class Refused(Exception):
    """A tool's refusal: the REST problem body, sent as the error result's structured content."""

    def __init__(self, body: dict) -> None:
        super().__init__(body.get("detail", ""))
        self.body = body


def result(body: Any, *, error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(body))], structured_content=body,
                          is_error=error)
