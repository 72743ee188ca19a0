"""SPEC §21: approval before work starts. A proposed task occupies its key and is not ready; a
steward or its named approver approves it (open) or refuses it (rejected), once."""
from __future__ import annotations

import threading

import pytest
from django.db import close_old_connections

from allocation.models import Occupancy
from events.models import Event
from tasks.models import Notification, Task
from tests.conftest import make_persona

S = "/v1/spaces/agent-lab"


def proposed(persona, title: str = "Migrate the build to the new runner", **extra) -> dict:
    response = persona.api.post(f"{S}/tasks", {"title": title, "approval": True, **extra})
    assert response.status_code == 201, response.json()
    assert response.json()["status"] == "proposed"
    return response.json()


def test_a_proposed_task_occupies_its_key_but_is_not_handed_out(writer, writer2, steward):
    task = proposed(writer)
    assert Occupancy.objects.filter(task__number=task["number"]).exists()
    again = writer2.api.post(f"{S}/tasks", {"title": "Migrate the build to the new runner"})
    assert again.status_code == 409 and again.json()["winner"] == {"type": "task", "id": task["number"],
                                                                   "status": "proposed"}
    assert writer2.api.post(f"{S}/next", {}).json() == {"task": None}
    assert writer2.api.post(f"{S}/next", {"number": task["number"]}).json()["error"] == "task_not_open"
    assert steward.api.get(f"{S}/tasks?status=proposed").json()["results"][0]["number"] == task["number"]


def test_the_steward_approves_and_the_task_is_work_like_any_other(writer, writer2, steward):
    task = proposed(writer)
    assert writer2.api.post(f"{S}/tasks/{task['number']}/approve").json()["error"] == "not_approver"
    approved = steward.api.post(f"{S}/tasks/{task['number']}/approve")
    assert approved.status_code == 200 and approved.json()["status"] == "open"
    claimed = writer2.api.post(f"{S}/next", {}).json()
    assert claimed["task"]["number"] == task["number"]
    types = list(Event.objects.filter(task_number=None).values_list("type", flat=True).order_by("id"))
    assert types.count("approval.requested") == 1 and types.count("approval.given") == 1
    assert set(Notification.objects.filter(member=steward.member).values_list("kind", flat=True)) == {
        "approval_requested"}
    assert set(Notification.objects.filter(member=writer.member).values_list("kind", flat=True)) == {
        "approval_given"}
    history = [e["kind"] for e in steward.api.get(f"{S}/tasks/{task['number']}/history").json()["results"]]
    assert history[:2] == ["created", "approved"]


def test_the_named_approver_refuses_and_the_key_is_free_again(writer, writer2, steward):
    task = proposed(writer, approver=writer2.member.pk)
    assert task["approver"] == writer2.member.pk
    assert not Notification.objects.filter(member=steward.member).exists()  # the approver is told, not them
    refused = writer2.api.post(f"{S}/tasks/{task['number']}/refuse", {"reason": "not this quarter"})
    assert refused.status_code == 200 and refused.json()["status"] == "rejected"
    assert Task.objects.get(number=task["number"]).close_reason == "not this quarter"
    late = steward.api.post(f"{S}/tasks/{task['number']}/approve")
    assert late.status_code == 409 and late.json()["error"] == "task_not_proposed"
    assert late.json()["task_status"] == "rejected"
    assert writer.api.post(f"{S}/tasks", {"title": "Migrate the build to the new runner"}).status_code == 201


def test_an_approver_outside_the_space_is_refused_with_nothing_made(writer, space):
    response = writer.api.post(f"{S}/tasks", {"title": "Rotate the signing keys", "approval": True, "approver": 10**9})
    assert response.status_code == 422 and "approver" in response.json()["fields"]
    assert not Task.objects.exists()


@pytest.mark.parametrize("setting, title, kind, expected", [
    ("all", "Retry and backoff policy for tool calls", "agent", "proposed"),
    ("uncatalogued", "Retry and backoff policy for tool calls", "agent", "open"),  # it binds slot T3
    ("uncatalogued", "Port the scheduler to Rust", "agent", "proposed"),
    ("agents", "Port the scheduler to Rust", "agent", "proposed"),
    ("agents", "Port the scheduler to Rust", "person", "open"),
    ("none", "Port the scheduler to Rust", "agent", "open"),
])
def test_the_space_says_which_creates_wait_for_an_approval(space, steward, setting, title, kind, expected):
    assert steward.api.patch(f"{S}", {"approval_required": setting}).json()["approval_required"] == setting
    creator = make_persona(space, "writer", "creator")
    assert steward.api.patch(f"{S}/members/{creator.member.pk}", {"kind": kind}).json()["kind"] == kind
    assert creator.api.post(f"{S}/tasks", {"title": title}).json()["status"] == expected
    # A steward's own create is approved at once, whatever the setting.
    assert steward.api.post(f"{S}/tasks", {"title": "A chore only a steward would write down", "approval": True}).json()[
        "status"] == "open"


def test_a_person_confirms_where_checks_are_people(space, steward, writer, writer2):
    steward.api.patch(f"{S}", {"checks_by": "people"})
    task = writer.api.post(f"{S}/tasks", {"title": "Write the onboarding guide"}).json()
    writer.api.post(f"{S}/next", {"number": task["number"]})
    post = writer.api.post(f"{S}/posts", {"body": "A guide."}).json()
    writer.api.post(f"{S}/tasks/{task['number']}/done", {"post": post["id"]})
    assert writer2.api.post(f"{S}/next", {"kind": "check"}).json() == {"task": None, "attempt": None}
    refused = writer2.api.post(f"{S}/tasks/{task['number']}/attempts/1/confirm")
    assert refused.status_code == 403 and refused.json()["error"] == "person_check_required"
    person = make_persona(space, "writer", "ada")
    steward.api.patch(f"{S}/members/{person.member.pk}", {"kind": "person"})
    accepted = person.api.post(f"{S}/tasks/{task['number']}/attempts/1/confirm")
    assert accepted.status_code == 200 and accepted.json()["task"]["status"] == "done"


def test_an_approval_racing_a_refusal_is_decided_once(writer, steward, space):
    """Threads against PostgreSQL: the task's row lock decides; the loser is told what won."""
    second = make_persona(space, "steward", "steward-2")
    for round_ in range(5):
        task = proposed(writer, title=f"Migrate build runner {round_}")
        barrier = threading.Barrier(2)
        answers: list = [None, None]

        def decide(index: int, persona, action: str) -> None:
            try:
                barrier.wait()
                answers[index] = persona.api.post(f"{S}/tasks/{task['number']}/{action}", {"reason": "no"}
                                                  if action == "refuse" else None)
            finally:
                close_old_connections()

        threads = [threading.Thread(target=decide, args=(0, steward, "approve")),
                   threading.Thread(target=decide, args=(1, second, "refuse"))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        statuses = sorted(answer.status_code for answer in answers)
        assert statuses == [200, 409], [a.json() for a in answers]
        winner = next(a for a in answers if a.status_code == 200).json()["status"]
        loser = next(a for a in answers if a.status_code == 409).json()
        assert loser["error"] == "task_not_proposed" and loser["task_status"] == winner
        assert Task.objects.get(number=task["number"]).status == winner
        decided = Event.objects.filter(type__in=["approval.given", "approval.refused"],
                                       data__task=task["number"]).count()
        assert decided == 1


def test_a2a_shows_a_proposal_as_submitted_awaiting_approval(writer, space):
    """SPEC §21 on A2A: TASK_STATE_SUBMITTED with metadata.spaces.awaiting "approval"."""
    from fronts.a2a.tasks import State, as_task

    task = proposed(writer)
    shown = as_task(space, task)
    assert shown.status.state == State.TASK_STATE_SUBMITTED
    assert shown.metadata["spaces"]["awaiting"] == "approval"
    open_task = writer.api.post(f"{S}/tasks", {"title": "Port the scheduler to Rust"}).json()
    assert "awaiting" not in as_task(space, open_task).metadata["spaces"]


def test_the_reference_tells_people_in_the_loop(writer):
    section = writer.api.get("/v1/reference?section=people").json()["people"]
    assert section["approval"]["setting"]["approval_required"]["values"] == ["none", "uncatalogued", "agents", "all"]
    assert {r["code"] for r in section["refusals"]} == {"not_approver", "task_not_proposed", "person_check_required",
                                                        "not_asker", "not_addressee", "question_closed", "not_in_thread"}


def test_a_person_decides_from_the_board_and_the_admin(writer, space):
    """The board's "Waiting on people" column and its Approve/Refuse, and the admin's actions: the
    same commands, as the staff user's steward member."""
    from django.contrib.auth.models import User
    from django.test import Client

    User.objects.create_superuser("ada", "ada@example.com", "pw")
    staff = Client()
    staff.login(username="ada", password="pw")
    first, second = proposed(writer), proposed(writer, title="Rotate the signing keys")
    data = staff.get("/board/agent-lab/data").json()
    assert data["columns"]["people"] == {"total": 2, "cards": [first["number"], second["number"]]}
    approved = staff.post(f"/board/agent-lab/tasks/{first['number']}/approve", "{}", content_type="application/json")
    assert approved.status_code == 200 and approved.json()["card"]["status"] == "open"
    again = staff.post(f"/board/agent-lab/tasks/{first['number']}/approve", "{}", content_type="application/json")
    assert again.status_code == 409 and again.json()["error"] == "task_not_proposed"
    staff.post("/admin/tasks/task/", {"action": "refuse", "_selected_action": [Task.objects.get(
        number=second["number"]).pk]}, follow=True)
    assert Task.objects.get(number=second["number"]).status == "rejected"
    assert Event.objects.filter(type="approval.refused", actor__name="admin:ada").count() == 1


def test_nobody_works_on_a_proposal_by_a_done_or_an_assignment(writer, writer2, steward):
    """A done without a claim, or a steward's assignment, would start the work a person has not
    approved: both are refused, and the task stays proposed."""
    task = proposed(writer)
    post = writer2.api.post(f"{S}/posts", {"body": "Done before anyone said yes."}).json()
    done = writer2.api.post(f"{S}/tasks/{task['number']}/done", {"post": post["id"]})
    assert done.status_code == 409 and done.json()["error"] == "task_not_open"
    assigned = steward.api.post(f"{S}/tasks/{task['number']}/assign", {"member": writer2.member.pk})
    assert assigned.status_code == 409 and assigned.json()["error"] == "task_not_open"
    assert Task.objects.get(number=task["number"]).status == "proposed"
