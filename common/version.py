"""The project's version, as installed (pyproject.toml): what the MCP handshake and the A2A card name."""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def project_version() -> str:
    try:
        return version("spaces-service")
    except PackageNotFoundError:
        return "0+unknown"
