"""Turn ``DATABASE_URL`` into Django's ``DATABASES`` entry.

Twenty lines of our own instead of a dependency: PostgreSQL is the only database (SPEC §1).
"""
from __future__ import annotations

from urllib.parse import parse_qsl, unquote, urlsplit

# Server-side binding lets psycopg prepare a statement after its fifth run on a
# connection, so the hot statements (key lookup, reserve, mutate, claim) skip parsing and
# planning. Behind a transaction-mode pooler (PgBouncer without prepared-statement
# support) turn it off in the URL, with server-side cursors:
# ?prepare_threshold=none&server_side_binding=false&disable_server_side_cursors=true
POSTGRES_DEFAULTS: dict[str, object] = {"server_side_binding": True, "prepare_threshold": 5}


def _option(name: str, value: str) -> object:
    """Query-string options arrive as text; the two Django/psycopg read by type are converted."""
    if name == "server_side_binding":
        if value.lower() not in ("true", "false", "1", "0"):
            raise ValueError(f"DATABASE_URL: server_side_binding must be true or false, not {value!r}")
        return value.lower() in ("true", "1")
    if name == "prepare_threshold":
        if value.lower() in ("none", ""):
            return None
        if not value.isdigit():
            raise ValueError(f"DATABASE_URL: prepare_threshold must be a number or none, not {value!r}")
        return int(value)
    return value


def parse_database_url(url: str, *, conn_max_age: int, pool_size: int = 0) -> dict:
    """``postgres://user:password@host:port/name?option=value``; ``?host=/a/folder`` names a
    Unix socket folder instead of a host (as libpq reads it).

    ``pool_size``: a process-wide pool of at most that many connections (psycopg_pool),
    shared by the process's threads, instead of one persistent connection per thread: a
    threaded server (gunicorn.conf.py) has far more threads than requests running at once,
    most of them holding an agent's wait (SPEC §15), which holds no connection."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql", "pgsql"):
        raise ValueError(f"DATABASE_URL: unsupported scheme {parts.scheme!r} (PostgreSQL only: postgres://…)")
    query = dict(parse_qsl(parts.query))
    host = query.pop("host", None) or parts.hostname or ""
    # A transaction-mode pooler keeps no cursor open between transactions: say so, and
    # Django's .iterator() fetches in one go instead of through a server-side cursor.
    no_cursors = query.pop("disable_server_side_cursors", "false").lower() in ("true", "1")
    options = {**POSTGRES_DEFAULTS, **{name: _option(name, value) for name, value in query.items()}}
    if pool_size > 0:
        # Connections go back to the pool when each request ends (Django's pooling wants
        # CONN_MAX_AGE 0); a request finding all of them busy waits up to 10 s for one.
        options["pool"] = {"min_size": min(2, pool_size), "max_size": pool_size, "timeout": 10}
        conn_max_age = 0
    # Pooled connections are checked as they are handed out (common.postgresql); Django's check
    # would make the pool run its own, slower one instead.
    return {
        "ENGINE": "common.postgresql",  # Django's, with a cheaper health check
        "NAME": unquote(parts.path.lstrip("/")) or "spaces",
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": str(parts.port or ""),
        "OPTIONS": options,
        # Persistent connections: opening a PostgreSQL connection per request costs
        # more than the request's own queries (a one-INSERT view drops ~6x without them).
        "CONN_MAX_AGE": conn_max_age,
        "CONN_HEALTH_CHECKS": pool_size <= 0,
        "DISABLE_SERVER_SIDE_CURSORS": no_cursors,
    }
