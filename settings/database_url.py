"""Turn ``DATABASE_URL`` into Django's ``DATABASES`` entry.

Twenty lines of our own instead of a dependency: only two schemes are supported.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit


# Server-side binding lets psycopg prepare a statement after its fifth run on a
# connection, so the hot statements (key lookup, reserve, mutate, claim) skip parsing and
# planning. Behind a transaction-mode pooler (PgBouncer without prepared-statement
# support) turn it off in the URL: ?prepare_threshold=none&server_side_binding=false.
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


def parse_database_url(url: str, *, base_dir: Path, conn_max_age: int) -> dict:
    parts = urlsplit(url)
    if parts.scheme in ("sqlite", "sqlite3"):
        # sqlite:///relative.db and sqlite:////absolute/path.db, as dj-database-url reads them.
        path = unquote(parts.path)[1:] if parts.path.startswith("/") else unquote(parts.path)
        name = path if Path(path).is_absolute() else str(base_dir / path)
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": name or str(base_dir / "db.sqlite3")}
    if parts.scheme in ("postgres", "postgresql", "pgsql"):
        options = {**POSTGRES_DEFAULTS, **{name: _option(name, value) for name, value in parse_qsl(parts.query)}}
        return {
            "ENGINE": "settings.postgresql",  # Django's, with a cheaper health check
            "NAME": unquote(parts.path.lstrip("/")) or "spaces",
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "OPTIONS": options,
            # Persistent connections: opening a PostgreSQL connection per request costs
            # more than the request's own queries (a one-INSERT view drops ~6x without them).
            "CONN_MAX_AGE": conn_max_age,
            "CONN_HEALTH_CHECKS": True,
        }
    raise ValueError(f"DATABASE_URL: unsupported scheme {parts.scheme!r} (use postgres:// or sqlite:///)")
