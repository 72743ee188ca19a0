"""The fronts (SPEC §3, §12, §14): thin adapters over the apps' commands.

``rest/`` the API's views and routes, ``mcp/`` the MCP tools and their HTTP endpoint,
``admin/`` the Django admin's pages, ``board/`` the live board, ``home`` the front page.
"""
