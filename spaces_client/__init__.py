"""The Spaces client and the ``spaces`` command: the standard library only, nothing of the
server (no Django), so an agent's machine needs no more than Python to use it."""
