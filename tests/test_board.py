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
    changes as it enters it), and one past its expiry shows its task ready, writing nothing."""
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
    assert marked.json()["cards"]["1"]["lapsed"] is None and lapsed["cards"]["1"]["lapsed"]  # marked as lapsed
    assert lapsed["cards"]["1"]["status"] == "open"
    assert TaskEvent.objects.filter(kind="claim_lapsed").count() == 0  # the board read it; nothing written
    writer.api.post("/v1/spaces/agent-lab/next")  # held again: no longer marked
    assert viewer.get(DATA).json()["cards"]["1"]["lapsed"] is None
    assert TaskEvent.objects.filter(kind="claim_lapsed").count() == 1


def test_likely_duplicates_are_listed_and_acted_on_from_the_board(space, steward):
    create_task(space=space, actor=steward.member, title="Add retry with backoff to the webhook sender")
    create_task(space=space, actor=steward.member, title="Retry with backoff in the webhook sender")
    create_task(space=space, actor=steward.member, title="Upgrade PostgreSQL to 17")
    viewer = logged_in("viewer")
    assert logged_in("clerk", perms=()).get(PAIRS).status_code == 403
    pairs = viewer.get(PAIRS).json()["duplicates"]
    assert [[t["id"] for t in p["tasks"]] for p in pairs] == [[1, 2]]
    lead = logged_in("lead", perms=("view_task", "change_task"))
    assert f'data-pairs="{PAIRS}"' in lead.get(BOARD).content.decode()
    assert lead.post(f"{TASKS}1/not-duplicate", {"task": 2}, content_type="application/json").status_code == 200
    assert viewer.get(PAIRS).json()["duplicates"] == []


TASKS = "/board/agent-lab/tasks/"


def act(client: Client, number: int, action: str, body: dict | None = None):
    return client.post(f"{TASKS}{number}/{action}", body or {}, content_type="application/json")


def test_a_steward_acts_from_the_board_through_the_api_commands(space, steward, writer, reader):
    """Priority, labels, assign, supersede, withdraw, reject and hold from the board: each the
    API's command under the person's steward member, recorded in history under their name, its
    refusals the API's, in words."""
    from tasks.models import Task, TaskEvent

    keep = create_task(space=space, actor=steward.member, title="Retry policy", work_item_id="T1")
    dup = create_task(space=space, actor=steward.member, title="retry policy, again")
    other = create_task(space=space, actor=steward.member, title="Token spend dashboard")
    last = create_task(space=space, actor=steward.member, title="Onboarding guide")
    lead = logged_in("lead", perms=("view_task", "change_task", "add_slothold"))

    changed = act(lead, keep.number, "update", {"priority": 0})
    assert changed.status_code == 200 and changed.json()["card"]["priority"] == 0
    event = TaskEvent.objects.filter(task=keep, kind="priority_changed").get()
    assert event.actor.name == "admin:lead" and event.details == {"before": 2, "after": 0}
    assert act(lead, keep.number, "update", {"labels": ["API", "db"]}).json()["card"]["labels"] == ["api", "db"]
    bad = act(lead, keep.number, "update", {"priority": 9})
    assert bad.status_code == 422 and "priority" in bad.json()["fields"]
    unknown = act(lead, keep.number, "update", {"prio": 1})
    assert unknown.status_code == 422 and "prio" in unknown.json()["fields"]  # strict input, as the API

    to_reader = act(lead, other.number, "assign", {"member": reader.member.pk})
    assert to_reader.status_code == 422  # a reader cannot attempt work (SPEC §5.2)
    assigned = act(lead, other.number, "assign", {"member": writer.member.pk})
    assert assigned.status_code == 200 and assigned.json()["card"]["holders"] == ["writer"]

    nowhere = act(lead, dup.number, "supersede", {"surviving_task": 999})
    assert nowhere.status_code == 422 and nowhere.json()["error"] == "survivor_invalid"
    assert "999" in nowhere.json()["detail"]
    superseded = act(lead, dup.number, "supersede", {"surviving_task": keep.number})
    assert superseded.status_code == 200 and superseded.json()["card"]["status"] == "superseded"
    again = act(lead, dup.number, "withdraw")
    assert again.status_code == 409 and again.json()["detail"]  # closed already: the API's refusal, in words

    assert act(lead, keep.number, "hold").status_code == 200
    assert lead.get(f"{TASKS}{keep.number}").json()["slot_held"] is True
    assert act(lead, last.number, "hold").status_code == 422  # bound to no slot: nothing to hold
    assert act(lead, keep.number, "release").status_code == 403  # no delete_slothold
    releaser = logged_in("releaser", perms=("view_task", "change_task", "delete_slothold"))
    assert act(releaser, keep.number, "release").status_code == 200
    assert act(releaser, keep.number, "release").status_code == 404  # held no more
    assert lead.get(f"{TASKS}{keep.number}").json()["slot_held"] is False
    assert act(lead, last.number, "reject").json()["card"]["status"] == "rejected"
    assert act(lead, other.number, "withdraw").json()["card"]["status"] == "withdrawn"
    assert act(lead, keep.number, "explode").status_code == 404
    assert act(lead, 999, "withdraw").status_code == 404
    malformed = lead.post(f"{TASKS}{keep.number}/update", "[1", content_type="application/json")
    assert malformed.status_code == 400
    twice = lead.post(f"{TASKS}{keep.number}/update", '{"priority": 1, "priority": 2}',
                      content_type="application/json")
    assert twice.status_code == 400 and twice.json()["error"] == "malformed_json"
    assert lead.get(f"{TASKS}{keep.number}/update").status_code == 405
    kinds = set(TaskEvent.objects.filter(actor__name="admin:lead").values_list("kind", flat=True))
    assert kinds >= {"priority_changed", "labels_changed", "assigned", "superseded", "held", "rejected", "withdrawn"}
    from allocation.models import SlotHold

    assert not SlotHold.objects.filter(space=space).exists()
    assert Task.objects.get(pk=dup.pk).superseded_by_id == keep.pk


def test_without_the_permission_there_is_no_control_and_a_forged_post_is_refused(space, steward, reader):
    import json
    import re

    from tasks.models import Task

    task = create_task(space=space, actor=steward.member, title="Retry policy")
    viewer = logged_in("viewer")
    page = viewer.get(BOARD).content.decode()
    controls = json.loads(re.search(r'id="board-controls" type="application/json">(.*?)</script>', page).group(1))
    assert not any(controls.values()) and 'id="csrf"' not in page
    assert act(viewer, task.number, "update", {"priority": 0}).status_code == 403
    assert act(viewer, task.number, "withdraw").status_code == 403

    User.objects.create_user("lead", password="pw", is_staff=True).user_permissions.add(
        *Permission.objects.filter(codename__in=["view_task", "change_task"]))
    careful = Client(enforce_csrf_checks=True)
    careful.login(username="lead", password="pw")
    page = careful.get(BOARD).content.decode()
    controls = json.loads(re.search(r'id="board-controls" type="application/json">(.*?)</script>', page).group(1))
    assert controls["update"] and controls["withdraw"] and not controls["hold"]  # no add_slothold
    choices = json.loads(re.search(r'id="board-members" type="application/json">(.*?)</script>', page).group(1))
    assert [name for _, name in choices] == ["steward"]  # Assign offers who may attempt work, no reader
    forged = careful.post(f"{TASKS}{task.number}/withdraw", {}, content_type="application/json")
    assert forged.status_code == 403  # no CSRF token: another site's page cannot act as the steward
    assert Task.objects.get(pk=task.pk).status == "open"
    token = re.search(r'id="csrf" value="([^"]+)"', page).group(1)
    done = careful.post(f"{TASKS}{task.number}/withdraw", {}, content_type="application/json",
                        headers={"X-CSRFToken": token})
    assert done.status_code == 200 and Task.objects.get(pk=task.pk).status == "withdrawn"
    assert act(logged_in("lead2", perms=("view_task", "change_task")), task.number, "hold").status_code == 403
    outsider = Client()
    assert outsider.post(f"{TASKS}{task.number}/withdraw").status_code == 302  # to the login


def test_the_panel_shows_the_task_its_work_and_its_history_with_names(space, steward, writer, writer2):
    from spaces.models import Post

    first = create_task(space=space, actor=steward.member, title="Schema change")
    task = create_task(space=space, actor=steward.member, title="Migrate the runs", body="Move every run over.",
                       blocked_by=[first.number])
    writer.api.post(f"/v1/spaces/agent-lab/tasks/{first.number}/assign", {"member": writer.member.pk})
    steward.api.post(f"/v1/spaces/agent-lab/tasks/{first.number}/assign", {"member": writer.member.pk})
    post = Post.objects.create(space=space, author=writer.member, body="Done.")
    writer.api.post(f"/v1/spaces/agent-lab/tasks/{first.number}/done", {"post": post.pk})
    writer2.api.post(f"/v1/spaces/agent-lab/tasks/{first.number}/attempts/1/reject", {"reason": "no test"})
    viewer = logged_in("viewer")
    panel = viewer.get(f"{TASKS}{first.number}").json()
    assert panel["card"]["number"] == first.number and panel["blocks"] == [
        {"number": task.number, "title": "Migrate the runs", "status": "open"}]
    assert panel["claims"][0]["member"] == "writer" and panel["claims"][0]["end_reason"] == "attempt"
    assert panel["attempts"][0]["member"] == "writer"
    assert panel["attempts"][0]["checks"][0] | {"created_at": None} == {
        "member": "writer2", "verdict": "reject", "reason": "no test", "created_at": None}
    lines = [(e["actor"], e["text"]) for e in panel["history"]]
    assert ("steward", "created the task") in lines and ("steward", "assigned it to writer") in lines
    assert ("writer", "delivered attempt 1") in lines and ("writer2", "rejected attempt 1 (no test)") in lines
    assert panel["admin_url"].startswith("/admin/tasks/task/")
    other = viewer.get(f"{TASKS}{task.number}").json()
    assert other["body"] == "Move every run over." and other["blocked_by"][0]["number"] == first.number
    assert viewer.get(f"{TASKS}999").status_code == 404
    assert logged_in("clerk", perms=()).get(f"{TASKS}{task.number}").status_code == 403


def test_search_priority_and_label_filters_read_as_the_api_reads_them(space, steward):
    from tasks.models import SpaceLabel

    create_task(space=space, actor=steward.member, title="Retry policy", body="exponential backoff", priority=1)
    create_task(space=space, actor=steward.member, title="Dashboard", labels=["ui"], priority=3)
    done = create_task(space=space, actor=steward.member, title="Old work", labels=["legacy"])
    steward.api.post(f"/v1/spaces/agent-lab/tasks/{done.number}/reject", {"reason": "not needed"})
    viewer = logged_in("viewer")
    found = viewer.get(DATA, {"q": "backoff"})
    assert found.json()["columns"]["ready"]["cards"] == [1]  # a word of the body
    assert viewer.get(DATA, {"priority": "3"}).json()["columns"]["ready"]["cards"] == [2]
    assert viewer.get(DATA, {"label": "UI"}).json()["columns"]["ready"]["cards"] == [2]
    assert viewer.get(DATA, {"priority": "7"}).status_code == 422
    assert found["ETag"] != viewer.get(DATA)["ETag"]  # each view has its own version
    page = viewer.get(BOARD).content.decode()
    assert set(SpaceLabel.objects.filter(space=space).values_list("label", flat=True)) == {"ui", "legacy"}
    assert '<option value="legacy">' in page  # every label of the space, from its index, not live tasks only


def test_throughput_counts_tasks_done_per_hour_over_seven_days(space, steward):
    from datetime import timedelta

    from django.utils import timezone

    from tasks.models import Task

    for n in range(3):
        create_task(space=space, actor=steward.member, title=f"work {n}")
    now = timezone.now()
    Task.objects.filter(number=1).update(status="done", updated_at=now)
    Task.objects.filter(number=2).update(status="done", updated_at=now - timedelta(hours=5))
    Task.objects.filter(number=3).update(status="done", updated_at=now - timedelta(days=8))
    chart = logged_in("viewer").get(DATA).json()["throughput"]
    assert len(chart["done"]) == 168 and sum(chart["done"]) == 2
    assert chart["done"][-1] == 1 and chart["done"][-6] == 1


def test_a_person_answers_a_question_and_writes_to_the_thread_from_the_panel(space, steward, writer):
    """SPEC §21: a waiting task is on the Waiting on people column; its panel shows its questions
    and its thread; the staff user, a person member, answers and writes through the API's commands."""
    from spaces.models import Member
    from tasks.models import Question

    create_task(space=space, actor=steward.member, title="Pick the queue library")
    writer.api.post("/v1/spaces/agent-lab/next", {})
    asked = writer.api.post("/v1/spaces/agent-lab/tasks/1/questions",
                            {"body": "A or B?", "to": "stewards", "options": ["A", "B"]}).json()
    lead = logged_in("lead", perms=("view_task", "change_task"))
    data = lead.get(DATA).json()
    assert data["columns"]["people"] == {"total": 1, "cards": [1]}
    panel = lead.get("/board/agent-lab/tasks/1").json()
    assert panel["questions"][0]["state"] == "open" and panel["questions"][0]["options"] == ["A", "B"]
    answered = act(lead, 1, "answer", {"question": asked["id"], "option": "B"})
    assert answered.status_code == 200 and answered.json()["card"]["status"] == "claimed"
    question = Question.objects.get()
    assert question.answered_by.name == "admin:lead" and question.option == "B"
    assert Member.objects.get(name="admin:lead").kind == "person"
    again = act(lead, 1, "answer", {"question": asked["id"], "body": "A"})
    assert again.status_code == 409 and again.json()["error"] == "question_closed"
    assert act(lead, 1, "message", {"body": "B it is."}).status_code == 200
    thread = lead.get("/board/agent-lab/tasks/1").json()["messages"]
    assert [(m["sender"], m["body"]) for m in thread] == [("admin:lead", "B it is.")]
    assert writer.api.get("/v1/inbox").json()["messages"][0]["body"] == "B it is."


def test_where_a_persons_check_accepts_the_attempt_waits_on_people_and_is_checked_from_the_panel(
        space, steward, writer):
    """SPEC §21 checks_by: people: a task in review is in the Waiting on people column; its panel
    shows the attempt's result, and the staff user (a person member) confirms it there."""
    from tasks.models import Task

    steward.api.patch("/v1/spaces/agent-lab", {"checks_by": "people"})
    create_task(space=space, actor=steward.member, title="Pick the queue library")
    writer.api.post("/v1/spaces/agent-lab/next", {})
    post = writer.api.post("/v1/spaces/agent-lab/posts", {"body": "RabbitMQ, for its quorum queues."}).json()
    assert writer.api.post("/v1/spaces/agent-lab/tasks/1/done", {"post": post["id"]}).status_code == 201
    lead = logged_in("lead", perms=("view_task", "change_task"))
    data = lead.get(DATA).json()
    assert data["columns"]["people"] == {"total": 1, "cards": [1]} and data["columns"]["in_review"]["cards"] == []
    attempt = lead.get("/board/agent-lab/tasks/1").json()["attempts"][0]
    assert attempt["result"] == "RabbitMQ, for its quorum queues." and attempt["state"] == "waiting"
    confirmed = act(lead, 1, "confirm", {"attempt": 1})
    assert confirmed.status_code == 200, confirmed.json()
    assert Task.objects.get().status == "done"


def test_parked_work_waits_on_people_and_is_unparked_from_the_board_beside_the_routines(space, steward, writer):
    """SPEC §22: a parked task is under Waiting on people with its setbacks, a steward unparks it
    from the panel (the API's command); the page lists the routines with their next run."""
    from spaces.models import Space

    create_task(space=space, actor=steward.member, title="Flaky migration")
    Space.objects.filter(pk=space.pk).update(max_cycles=1)
    writer.api.post("/v1/spaces/agent-lab/next", {})
    writer.api.post("/v1/spaces/agent-lab/tasks/1/give-back")
    steward.api.post("/v1/spaces/agent-lab/routines", {"title": "Audit the dependencies", "schedule": "0 9 * * 1"})
    lead = logged_in("lead", perms=("view_task", "change_task"))
    data = lead.get(DATA).json()
    assert data["columns"]["people"]["cards"] == [1] and data["cards"]["1"]["status"] == "parked"
    assert data["cards"]["1"]["setbacks"] == 1
    page = lead.get(BOARD).content.decode()
    assert "Audit the dependencies" in page and "next run" in page
    unparked = act(lead, 1, "unpark", {})
    assert unparked.status_code == 200 and unparked.json()["card"]["status"] == "open"
    assert act(lead, 1, "unpark", {}).json()["error"] == "task_not_parked"
