"""A pytest plugin for the A2A TCK: the agent under test is at a URL with a path.

A Spaces server is one agent per space, each at its own base URL (``/a2a/{slug}``, SPEC §18),
and the kit assumes an agent at a host's root in two places:
- it reads the Agent Card at the host's root (``/.well-known/agent-card.json``, A2A v0.3.0
  §5.3's recommended location); here it reads the space's card, under the base URL (the direct
  configuration of A2A v1.0 §8.2);
- its HTTP+JSON client joins each route to the interface's URL as an absolute path
  (``urljoin(url, "/tasks")``), dropping the URL's path; here the route follows the URL's path,
  as an interface URL with a path (a2a.proto's own example: ``https://api.example.com/a2a/v1``)
  asks.
"""
from __future__ import annotations

from typing import Any

import requests


def space_card(sut_base_url: str, session: requests.Session) -> dict[str, Any] | None:
    response = session.get(sut_base_url.rstrip("/") + "/.well-known/agent-card.json", timeout=10)
    return response.json() if response.ok else None


def under(base_url: str, route: str) -> str:
    return base_url.rstrip("/") + route


def pytest_configure(config) -> None:
    from tck import agent_card_utils
    from tck.transport import rest_client, transport_manager

    agent_card_utils.fetch_agent_card = space_card
    transport_manager.fetch_agent_card = space_card
    rest_client.urljoin = under
