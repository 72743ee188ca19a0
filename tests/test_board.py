"""SPEC §14: the board's page and data, for staff users with view_task (Django's test client)."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from tests.factories import create_task

pytestmark = [pytest.mark.django_db(transaction=True)]

BOARD = "/board/agent-lab/"
DATA = "/board/agent-lab/data"
PAIRS = "/board/agent-lab/duplicates"


def logged_in(username: str, *, staff: bool = True, perms: tuple[str, ...] = ("view_task",)) -> Client:
    user = User.objects.create_user(username, password="pw", is_staff=staff)
    user.user_permissions.add(*Permission.objects.filter(codename__in=perms))
    client = Client()
    client.login(username=username, password="pw")
    return client


def test_the_board_is_for_staff_with_view_task_and_loads_nothing_from_outside(space):
    assert Client().get(BOARD).status_code == 302  # to the login
    assert logged_in("guest", staff=False).get(BOARD).status_code == 302
    assert logged_in("clerk", perms=()).get(BOARD).status_code == 403
    assert logged_in("clerk2", perms=()).get(DATA).status_code == 403
    response = logged_in("viewer").get(BOARD)
    assert response.status_code == 200
    policy = response["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy and "unsafe-eval" not in policy
    html = response.content.decode()
    assert "http://" not in html and "https://" not in html  # every asset is the server's own
    assert logged_in("other").get("/board/no-such-space/").status_code == 404


def test_the_docs_page_runs_no_inline_script_under_its_policy(space):
    response = Client().get("/v1/docs")
    assert response.status_code == 200 and "script-src 'self'" in response["Content-Security-Policy"]
    html = response.content.decode()
    assert "<script>" not in html.replace(" ", "") and "?script=" in html.replace("&amp;", "&")


def test_the_data_lists_columns_and_answers_304_while_nothing_changes(space, steward, writer):
    viewer = logged_in("viewer")
    first = create_task(space=space, actor=steward.member, title="schema change", priority=1, labels=["db"])
    create_task(space=space, actor=steward.member, title="migration", blocked_by=[first.number])
    create_task(space=space, actor=steward.member, title="docs", priority=3)
    response = viewer.get(DATA)
    body = response.json()
    assert body["columns"]["ready"] == {"total": 2, "cards": [1, 3]}
    assert body["columns"]["blocked"] == {"total": 1, "cards": [2]}
    assert set(body["cards"]) == {"1", "2", "3"}
    card = body["cards"]["2"]
    assert card["blocked_by"] == [1] and card["age_verb"] == "created" and card["url"].startswith("/admin/tasks/task/")
    assert body["summary"]["ready"] == 2
    etag = response["ETag"]
    again = viewer.get(DATA, {"since": body["version"]}, headers={"If-None-Match": etag})
    assert again.status_code == 304

    writer.api.post("/v1/spaces/agent-lab/next")  # claims task 1
    changed = viewer.get(DATA, {"since": body["version"]}, headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed["ETag"] != etag
    data = changed.json()
    assert set(data["cards"]) == {"1"}  # only the card that changed comes whole
    assert data["cards"]["1"]["holders"] == ["writer"] and data["cards"]["1"]["age_verb"] == "claimed"
    assert data["columns"]["claimed"]["cards"] == [1] and data["columns"]["ready"]["cards"] == [3]
    asked = viewer.get(DATA, {"since": data["version"], "numbers": "3,99"}).json()
    assert set(asked["cards"]) == {"3"}


def test_filters_by_label_and_member(space, steward, writer):
    viewer = logged_in("viewer")
    create_task(space=space, actor=steward.member, title="a", labels=["db"])
    create_task(space=space, actor=writer.member, title="b", labels=["api"])
    create_task(space=space, actor=steward.member, title="c")
    writer.api.post("/v1/spaces/agent-lab/next", {"number": 3})
    assert viewer.get(DATA, {"label": "db"}).json()["columns"]["ready"]["cards"] == [1]
    by_writer = viewer.get(DATA, {"member": writer.member.pk}).json()["columns"]
    assert by_writer["ready"]["cards"] == [2] and by_writer["claimed"]["cards"] == [3]
    assert viewer.get(DATA, {"label": "Not A Label!"}).status_code == 422


def test_a_column_shows_fifty_cards_and_counts_the_rest(space, steward):
    from tasks.models import Task

    create_task(space=space, actor=steward.member, title="first")
    rows = [Task(space=space, number=n, title=f"bulk {n}", conflict_target=f"bulk {n}", received_seq=0,
                 payload_sha256="", creator=steward.member) for n in range(2, 62)]
    Task.objects.bulk_create(rows)
    column = logged_in("viewer").get(DATA).json()["columns"]["ready"]
    assert len(column["cards"]) == 50 and column["total"] == 61


def test_a_claim_about_to_lapse_is_marked_and_a_lapsed_one_shows_ready(space, steward, writer):
    """SPEC §14, §15: a claim in the last fifth of its lease is marked on its card (the ETag
    changes as it enters it), and one past its expiry is recorded and its task shown ready."""
    from datetime import timedelta

    from django.utils import timezone

    from tasks.models import Claim, TaskEvent

    viewer = logged_in("viewer")
    create_task(space=space, actor=steward.member, title="schema change")
    writer.api.post("/v1/spaces/agent-lab/next")
    response = viewer.get(DATA)
    assert response.json()["cards"]["1"]["lapsing"] is False
    now = timezone.now()
    Claim.objects.update(created_at=now - timedelta(seconds=100), expires_at=now + timedelta(seconds=10))
    marked = viewer.get(DATA, headers={"If-None-Match": response["ETag"]})
    assert marked.status_code == 200 and marked.json()["cards"]["1"]["lapsing"] is True
    Claim.objects.update(expires_at=now - timedelta(seconds=1))
    lapsed = viewer.get(DATA, headers={"If-None-Match": marked["ETag"]}).json()
    assert lapsed["columns"]["ready"]["cards"] == [1] and lapsed["cards"]["1"]["holders"] == []
    assert TaskEvent.objects.filter(kind="claim_lapsed").count() == 1


def test_likely_duplicates_are_listed_and_acted_on_from_the_board(space, steward):
    create_task(space=space, actor=steward.member, title="Add retry with backoff to the webhook sender")
    create_task(space=space, actor=steward.member, title="Retry with backoff in the webhook sender")
    create_task(space=space, actor=steward.member, title="Upgrade PostgreSQL to 17")
    viewer = logged_in("viewer")
    assert logged_in("clerk", perms=()).get(PAIRS).status_code == 403
    pairs = viewer.get(PAIRS).json()["duplicates"]
    assert [[t["id"] for t in p["tasks"]] for p in pairs] == [[1, 2]]
    page = viewer.get(BOARD).content.decode()
    assert 'id="csrf"' not in page  # no change_task: no controls

    lead = logged_in("lead", perms=("view_task", "change_task"))
    page = lead.get(BOARD).content.decode()
    assert 'id="csrf"' in page and f'data-url="/admin/tasks/task/duplicates/{space.pk}/"' in page
    assert f'data-pairs="{PAIRS}"' in page
    done = lead.post(f"/admin/tasks/task/duplicates/{space.pk}/", {"first": 1, "second": 2, "distinct": 1,
                                                                    "next": BOARD})
    assert done.status_code == 302 and done["Location"] == BOARD
    assert viewer.get(PAIRS).json()["duplicates"] == []
    # somewhere else is not where the board sends you back to
    away = lead.post(f"/admin/tasks/task/duplicates/{space.pk}/", {"first": 1, "second": 3, "distinct": 1,
                                                                    "next": "https://example.com/"})
    assert away["Location"] == f"/admin/tasks/task/duplicates/{space.pk}/"
