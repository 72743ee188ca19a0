"""What ``bin/run`` shares with the commands run beside it: ``manage.py`` in another shell finds
its database, secret key and debug setting without being told.

``bin/run`` writes them to ``.postgres/<run name>.env`` (owner-only, git-ignored, beside the
database's folder); ``manage.py`` reads that file when neither ``DATABASE_URL`` nor
``DJANGO_SECRET_KEY`` is set. The embedded server's own address is not in it: settings find
the running server by its folder, and say in one line how to start it when it is not running.
"""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_name() -> str:
    return os.environ.get("SPACES_RUN_NAME", "").strip() or "run"


def env_file(name: str | None = None) -> Path:
    return ROOT / ".postgres" / f"{name or run_name()}.env"


def load() -> None:
    """``bin/run``'s settings, for a command run beside it with none of its own."""
    if os.environ.get("DATABASE_URL") or os.environ.get("DJANGO_SECRET_KEY"):
        return
    path = env_file()
    if not path.is_file():
        return
    for line in path.read_text().splitlines():
        name, _, value = line.partition("=")
        if name.strip() and not line.lstrip().startswith("#"):
            os.environ.setdefault(name.strip(), value.strip())
