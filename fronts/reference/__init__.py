"""``GET /v1/reference``: the rules an agent needs, generated from what the code enforces.

A front of its own: each module of this package registers the sections it writes
(``register_section``) when the fronts app starts, built from live tables and settings and from
the code each section describes (the refusals' registry, the models' defaults, the MCP tools).
"""
from __future__ import annotations

from typing import Any, Callable

from common.refusals import REFUSALS

SECTIONS: dict[str, Callable[[], dict[str, Any]]] = {}


def register_section(name: str) -> Callable[[Callable[[], dict[str, Any]]], Callable[[], dict[str, Any]]]:
    def decorate(builder: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
        SECTIONS[name] = builder
        return builder

    return decorate


@register_section("refusals")
def refusals_section() -> dict[str, Any]:
    return {
        "summary": "Every refusal is application/problem+json with `error`, `detail`, `type`, `title`, `status`.",
        "refusals": [
            {"code": r.code, "error": r.error, "status": r.http_status, "title": r.title, "meaning": r.meaning}
            for r in sorted(REFUSALS.values(), key=lambda r: (r.http_status, r.code))
        ],
    }


def build_reference(section: str | None) -> dict[str, Any]:
    if section:
        return {section: SECTIONS[section]()}
    return {name: builder() for name, builder in sorted(SECTIONS.items())}
