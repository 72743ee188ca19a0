"""SPEC §3, route by route: every /v1/ route, found at run time (a route added later cannot skip
this), answers hostile input with a 4xx problem body, never a 500, and writes nothing."""
from __future__ import annotations

import re

import pytest
from django.urls import get_resolver

from spaces.models import ApiKey, JoinLink, Member, Post
from tasks.models import Attempt, Claim, Note, Task

METHODS = ("get", "post", "put", "patch", "delete")
PARAM = re.compile(r"<(?:\w+:)?(\w+)>")
DEEP = "[" * 200 + "]" * 200
DEEPER = "[" * 3000 + "]" * 3000  # past Python's recursion limit
# Numbers past a double: a JSON integer of 4,001 digits, and 1e999 (Python reads it as inf).
HUGE_NUMBERS = '{"wait": 1' + "0" * 4000 + ', "priority": 1' + "0" * 4000 + "}"
PAST_A_DOUBLE = '{"wait": 1e999, "priority": -1e999, "lease_seconds": 1e999, "cost_usd": 1e999}'
HOSTILE_PARAMS = ["ab\x00cd", "9" * 40, "-1", "T" + "9" * 30, "%", "x" * 300]
# Lone surrogates in the fields the body-taking routes read (a route that reads none of them,
# such as starting an export, does its work: that is no hostile input).
SURROGATES = ('{"title": "x\\ud800", "body": "\\ud800", "number": "\\ud800", "link": "\\ud800", '
              '"role": "\\ud800", "work_item_id": "\\ud800", "post": "\\ud800", "proposals": "\\ud800", '
              '"labels": ["\\ud800"], "blocked_by": "\\ud800", "task": "\\ud800", "priority": "\\ud800"}')


def routes_under(start: str) -> list[tuple[str, list[str]]]:
    """Every route starting with ``start`` (a regex route without its anchors), with the methods
    its view answers, found at run time."""
    found = []

    def walk(patterns, prefix=""):
        for pattern in patterns:
            if hasattr(pattern, "url_patterns"):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
                continue
            route = (prefix + str(pattern.pattern)).lstrip("^").rstrip("$")
            view = getattr(pattern.callback, "view_class", None)
            if route.startswith(start) and view is not None:
                found.append((route, [m for m in METHODS if hasattr(view, m)]))

    walk(get_resolver().url_patterns)
    return found


def api_routes() -> list[tuple[str, list[str]]]:
    return routes_under("v1/")


def concrete(route: str, value: str) -> str:
    return "/" + PARAM.sub(lambda m: "agent-lab" if m.group(1) == "slug" else value, route)


def domain_rows() -> dict[str, int]:
    """The rows a request's work writes (a refused idempotent POST stores its refusal as an
    operation's answer: that is the answer, not work)."""
    return {model.__name__: model.objects.count()
            for model in (Task, Claim, Attempt, Note, Post, JoinLink, Member, ApiKey)}


def test_the_routes_are_all_found():
    routes = dict(api_routes())
    assert len(routes) >= 35 and "v1/spaces/<slug:slug>/tasks" in routes and "v1/join" in routes


def test_every_route_refuses_hostile_input_with_a_4xx_and_writes_nothing(steward, space):
    from tests.factories import create_task

    create_task(space=space, actor=steward.member, title="Retry policy")
    before = domain_rows()
    seen = 0
    for route, methods in api_routes():
        for method in methods:
            paths = [concrete(route, value) for value in HOSTILE_PARAMS] if PARAM.search(route) else [concrete(route, "")]
            for path in paths:
                for body in (f'{{"x": {DEEP}}}', SURROGATES, "{not json", "[]", "null", HUGE_NUMBERS, PAST_A_DOUBLE,
                             DEEPER):
                    if method in ("get", "delete") and body != "null":
                        continue
                    seen += 1
                    response = steward.api.request(method.upper(), path.replace("\x00", "%00"), raw=body,
                                                   headers={"Idempotency-Key": f"hostile-{seen}"} if method == "post"
                                                   else None)
                    assert response.status_code < 500, (method, path, body[:30], response.status_code)
                    if response.status_code >= 400:
                        assert response["Content-Type"].startswith("application/problem+json"), (method, path)
                        assert "error" in response.json()
    assert seen > 300
    assert domain_rows() == before


def test_a_method_no_route_answers_is_405_whatever_its_query_string(steward, space):
    seen = 0
    for route, methods in api_routes():
        for method in set(METHODS) - set(methods):
            path = concrete(route, "1")
            response = steward.api.request(method.upper(), f"{path}?status=nope&x=1", raw="{}")
            assert response.status_code == 405, (method, path, response.content[:200])
            assert response.json()["error"] == "method_not_allowed"
            seen += 1
    assert seen > 50
