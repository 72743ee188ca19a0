"""A NUL (or another control character) in any enum field is a 422 naming the field, never a
500, with or without an Idempotency-Key, and a retry answers the same (SPEC §3, §7.1): every
choice a route takes, on every route that takes one, in the body and in a list's filters."""
from __future__ import annotations

import pytest

from tests.factories import create_task

S = "/v1/spaces/agent-lab"
HOSTILE = ["\u0000", "\u0000writer", "result\u0000", "check\u0001", "open\u0000"]

# (method, path, body with {v} where the hostile value goes, the field it is answered under)
ROUTES = [
    ("POST", f"{S}/tasks", {"title": "Retry policy", "delivery_mode": "{v}"}, "delivery_mode"),
    ("POST", f"{S}/bind", {"title": "Retry policy", "delivery_mode": "{v}"}, "delivery_mode"),
    ("POST", f"{S}/next", {"kind": "{v}"}, "kind"),
    ("POST", f"{S}/join-links", {"role": "{v}"}, "role"),
    ("PATCH", f"{S}/members/{{member}}", {"role": "{v}"}, "role"),
]


def fill(body: dict, value: str) -> dict:
    return {k: value if v == "{v}" else v for k, v in body.items()}


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("method, path, body, field", ROUTES, ids=[r[1].rsplit("/", 1)[-1] for r in ROUTES])
@pytest.mark.parametrize("keyed", [False, True], ids=["plain", "keyed"])
def test_a_hostile_choice_is_422_naming_the_field(steward, writer, method, path, body, field, value, keyed):
    path = path.replace("{member}", str(writer.member.pk))
    headers = {"Idempotency-Key": f"nul-{field}-{HOSTILE.index(value)}"} if keyed and method == "POST" else {}
    for attempt in (1, 2):  # the retry answers the same
        response = steward.api.request(method, path, fill(body, value), headers=headers)
        assert response.status_code == 422, (attempt, response.status_code, response.content[:300])
        assert field in response.json()["fields"]


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_window_proposal_is_answered_422_in_its_place(steward, value):
    response = steward.api.post(f"{S}/tasks/window", {"proposals": [
        {"title": "Write the onboarding guide"}, {"title": "Retry policy", "delivery_mode": value}]},
        headers={"Idempotency-Key": f"nul-window-{HOSTILE.index(value)}"})
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["status"] for r in results] == [201, 422] and "delivery_mode" in results[1]["body"]["fields"]


@pytest.mark.parametrize("name", ["status", "delivery_mode", "priority", "ready", "blocked", "order", "label"])
def test_a_nul_in_a_list_filter_is_422(writer, steward, space, name):
    create_task(space=space, actor=steward.member, title="Retry policy")
    response = writer.api.get(f"{S}/tasks?{name}=open%00")
    assert response.status_code == 422, response.content[:300]
