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

import psycopg
import psycopg_pool

from django.db.backends.postgresql import base


def has_word_waiting(conn) -> bool:
    """Whether the server said something on this idle connection (or closed it): its socket is
    readable. True also when the socket cannot be polled: the caller then asks for real."""
    if conn.closed or not hasattr(select, "poll"):
        return True
    try:
        poller = select.poll()
        poller.register(conn.fileno(), select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True


def answers(conn) -> bool:
    """One round trip: does the connection still work?"""
    if conn.closed:
        return False
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        """A persistent connection's check (``CONN_HEALTH_CHECKS``)."""
        if self.connection is None:
            return False
        return not has_word_waiting(self.connection) or answers(self.connection)

    def get_new_connection(self, conn_params):
        """A pooled connection is checked here as it is handed out, the same cheap way. The pool's
        own check (Django's with ``CONN_HEALTH_CHECKS``, off when pooling: common.database_url)
        costs a round trip each time and, after a connection that failed it, sleeps a second and
        more before trying the next: with the pool's idle connections ended by the server
        (pg_terminate_backend, a failover), the next request on each worker took 3 to 7 s. A
        dead one goes back to the pool, which drops it and opens another, and the next is tried
        at once."""
        connection = super().get_new_connection(conn_params)
        if not self.pool:
            return connection
        for _ in range(self.pool.max_size):
            if not has_word_waiting(connection) or answers(connection):
                return connection
            self.pool.putconn(connection)  # closed or broken: dropped
            connection = super().get_new_connection(conn_params)
        return connection
