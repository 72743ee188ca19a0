"""The command layer, between the fronts and the apps: every change, from every front, is a
command run here.

- ``commands.base``: the command type, its reply and the registry (``COMMANDS``);
- ``commands.unit``: the unit of work and its runner: where a request's transaction starts and
  ends, why, and in what order it takes its locks;
- ``commands.running``: a command run for a caller by any front that is not REST's middleware
  (MCP, A2A), with the same runner and answers.
"""
