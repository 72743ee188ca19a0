"""Django's PostgreSQL backend with a health check that costs no round trip when it need not.

With ``CONN_HEALTH_CHECKS`` Django sends ``SELECT 1`` before the first query of every
request that reuses a connection: a whole extra round trip on requests that make one or
two. A connection the server has closed (restart, ``pg_terminate_backend``, an idle
timeout) always has something waiting on its socket, the server's last message or the
end of the stream, while a healthy idle connection has nothing. So the socket is polled
without waiting, and only when it has something to say does Django's own ``SELECT 1``
decide (it also reads whatever arrived, e.g. a parameter change after a reload).

What no check made before the query can see, a peer that vanished without a word, is
what Django's ``SELECT 1`` could not see quickly either; the request's error marks the
connection and Django closes it when the request ends.
"""
from __future__ import annotations

import select

from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        if self.connection is None or self.connection.closed or not hasattr(select, "poll"):
            return super().is_usable()
        try:
            poller = select.poll()
            poller.register(self.connection.fileno(), select.POLLIN)
            waiting = poller.poll(0)
        except (OSError, ValueError):
            return False
        return not waiting or super().is_usable()
