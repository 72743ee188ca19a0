"""Shared fixtures: the agent-lab space, personas with keys, and a JSON API client."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from allocation.catalog_index import forget_all
from spaces.throttles import VERDICTS
from tasks.similarity import KEPT
from spaces import services
from spaces.catalog import parse_catalog_row
from spaces.models import Member, Space
from tests.factories import SpaceFactory, member_with_key

FIXTURE = Path(__file__).resolve().parent.parent / "spaces" / "fixtures" / "agent-lab.json"


@pytest.fixture(scope="session", autouse=True)
def stop_work_listener(django_db_setup, django_db_blocker):
    """The suite's waiters start this process's work listener: stop it before the test
    database is dropped (its connection would keep it open)."""
    from tasks.waiting import REGISTRY

    yield
    REGISTRY.stop_listener()


@pytest.fixture(autouse=True)
def fresh_index_cache():
    # Test databases reuse primary keys across tests; the caches are keyed by space id.
    forget_all()
    KEPT.clear()
    VERDICTS.clear()
    yield
    forget_all()
    KEPT.clear()
    VERDICTS.clear()


@dataclass
class ApiClient:
    """Django's test client speaking JSON with a Bearer key."""

    key: str | None = None

    def __post_init__(self) -> None:
        self.client = Client()

    def request(self, method: str, path: str, data: Any = None, *, raw: bytes | str | None = None, headers=None):
        extra = {}
        if self.key:
            extra["HTTP_AUTHORIZATION"] = f"Bearer {self.key}"
        for name, value in (headers or {}).items():
            extra["HTTP_" + name.upper().replace("-", "_")] = value
        body = raw if raw is not None else (json.dumps(data) if data is not None else "")
        return self.client.generic(method, path, body, content_type="application/json", **extra)

    def get(self, path: str, **kw):
        return self.request("GET", path, **kw)

    def post(self, path: str, data: Any = None, **kw):
        return self.request("POST", path, {} if data is None and "raw" not in kw else data, **kw)

    def put(self, path: str, data: Any = None, **kw):
        return self.request("PUT", path, data, **kw)

    def patch(self, path: str, data: Any = None, **kw):
        return self.request("PATCH", path, data, **kw)

    def delete(self, path: str, **kw):
        return self.request("DELETE", path, **kw)


@dataclass
class Persona:
    member: Member
    key: str
    api: ApiClient


def make_persona(space: Space, role: str, name: str | None = None) -> Persona:
    member, key = member_with_key(space, role, name)
    return Persona(member, key, ApiClient(key))


def load_agent_lab() -> Space:
    data = json.loads(FIXTURE.read_text())
    space = services.create_space(slug=data["space"]["slug"], name=data["space"]["name"])
    services.import_catalog(space=space, rows=[parse_catalog_row(r) for r in data["catalog"]])
    space.refresh_from_db()
    return space


@pytest.fixture
def agent_lab(transactional_db) -> Space:
    return load_agent_lab()


@pytest.fixture
def space(agent_lab) -> Space:
    return agent_lab


@pytest.fixture
def steward(space) -> Persona:
    return make_persona(space, "steward", "steward")


@pytest.fixture
def writer(space) -> Persona:
    return make_persona(space, "writer", "writer")


@pytest.fixture
def writer2(space) -> Persona:
    return make_persona(space, "writer", "writer2")


@pytest.fixture
def reader(space) -> Persona:
    return make_persona(space, "reader", "reader")


@pytest.fixture
def outsider(transactional_db) -> Persona:
    """A steward of another space: everything in agent-lab must be 404 to it."""
    return make_persona(SpaceFactory(slug="elsewhere"), "steward", "outsider")


@pytest.fixture
def anonymous() -> ApiClient:
    return ApiClient()
