"""The fronts of the tasks app, thin adapters over ``tasks.commands`` and the selectors: the
REST views (``rest``), the MCP tools (``mcp``), the Django admin (``admin``) and the board
(``board``). ``tasks.apps`` loads the ones that register themselves (admin, MCP tools)."""
