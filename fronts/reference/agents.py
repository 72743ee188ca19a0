"""The reference's section on the fronts agents use (``GET /v1/reference?section=agents``),
described from the code that serves them."""
from __future__ import annotations

import inspect

from fronts.reference import register_section


@register_section("agents")
def agents_section() -> dict:
    """The MCP tools and the CLI, described from the code that serves them."""
    from fronts.mcp.tools import TOOLS  # the MCP SDK loads here, on the first read of this section

    tools = {name: inspect.getdoc(fn).replace("\n", " ") for name, fn in sorted(TOOLS.items())}
    return {
        "mcp": {"endpoint": "/mcp (streamable HTTP, stateless; Authorization: Bearer <key>)", "tools": tools,
                "answers": "a structured result: structuredContent is the REST answer, its text the same JSON",
                "refusals": "an error result (isError) whose structuredContent is the REST refusal's body",
                "output_schemas": "each names its answer's fields; a writer's tools/list is under 15 KB",
                "tasks": "io.modelcontextprotocol/tasks (2026-07-28): next_task and ask with wait may answer a task; "
                         "tasks/get follows it (working, input_required for a question to you, completed with the "
                         "tool's result), tasks/update answers its questions, tasks/cancel ends it"},
        "cli": "pip install the project, set SPACES_URL (the space's URL) and SPACES_KEY, run `spaces --help`; "
               "mutating commands reuse one Idempotency-Key across retries; exit 0 done, 1 refused, 2 usage or "
               "connection failure",
    }
