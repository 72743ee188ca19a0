"""Long calls followed as tasks: a waited call (``next`` or ``ask`` with ``wait``) whose caller
polls for its end instead of holding its request open (SPEC §23, MCP's Tasks extension)."""
