"""SPEC §5: supersede, holds, withdraw and reject, with history and occupancy."""
from __future__ import annotations

from allocation.models import Occupancy
from tasks.models import Claim, Notification, Task
from tests.conftest import ApiClient
from tests.factories import create_task

S = "/v1/spaces/agent-lab"


def duplicates(space, actor):
    """Two live tasks on one key, as left over from before the contract (imported)."""
    canonical = create_task(space=space, actor=actor, title="Retry policy")
    leftover = create_task(space=space, actor=actor, title="Retry policy", delivery_mode="review")
    # Same key now, as an import would leave it; the occupancy names the lowest-numbered one.
    Task.objects.filter(pk=leftover.pk).update(delivery_mode="result")
    Occupancy.objects.filter(task=leftover).delete()
    return canonical, Task.objects.get(pk=leftover.pk)


def test_supersede_a_leftover_duplicate(steward, writer, space):
    canonical, leftover = duplicates(space, steward.member)
    writer.api.post(f"{S}/next", {"number": leftover.number})
    response = steward.api.post(f"{S}/tasks/{leftover.number}/supersede",
                                {"surviving_task": canonical.number, "reason": "allocation_duplicate"})
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "superseded" and body["superseded_by"] == canonical.number
    stored = Task.objects.get(pk=leftover.pk)
    assert stored.closed_by == steward.member and stored.close_reason == "allocation_duplicate"
    assert not Claim.objects.filter(task=stored, ended_at=None).exists()
    assert Notification.objects.get(member=writer.member).kind == "task_superseded"
    assert Occupancy.objects.get(target=canonical.conflict_target).task == canonical
    history = steward.api.get(f"{S}/tasks/{leftover.number}/history").json()["results"]
    assert history[-1]["kind"] == "superseded" and history[-1]["actor"]["name"] == "steward"
    assert history[-1]["details"]["surviving_task"] == canonical.number


def test_superseded_tasks_leave_lists_unless_asked(steward, reader, space):
    canonical, leftover = duplicates(space, steward.member)
    steward.api.post(f"{S}/tasks/{leftover.number}/supersede", {"surviving_task": canonical.number})
    assert [t["id"] for t in reader.api.get(f"{S}/tasks").json()["results"]] == [canonical.number]
    assert [t["id"] for t in reader.api.get(f"{S}/tasks?include_superseded=true").json()["results"]] == [1, 2]
    assert [t["id"] for t in reader.api.get(f"{S}/tasks?status=superseded").json()["results"]] == [leftover.number]


def test_work_on_a_superseded_task_is_409_naming_the_survivor(steward, writer, writer2, space):
    canonical, leftover = duplicates(space, steward.member)
    post = writer.api.post(f"{S}/posts", {"body": "r"}).json()["id"]
    writer.api.post(f"{S}/tasks/{leftover.number}/done", {"post": post})
    steward.api.post(f"{S}/tasks/{leftover.number}/supersede", {"surviving_task": canonical.number})
    n = leftover.number
    for response in [
        writer.api.post(f"{S}/next", {"number": n}),
        writer2.api.post(f"{S}/tasks/{n}/done", {"post": post}),
        writer2.api.post(f"{S}/tasks/{n}/attempts/1/confirm"),
        writer2.api.post(f"{S}/tasks/{n}/notes", {"body": "late"}),
    ]:
        assert response.status_code == 409
        assert response.json()["error"] == "task_superseded"
        assert response.json()["surviving_task"]["id"] == canonical.number


def test_supersede_refusals(steward, writer, space):
    canonical, leftover = duplicates(space, steward.member)
    assert steward.api.post(f"{S}/tasks/1/supersede", {"surviving_task": 1}).json()["error"] == "survivor_invalid"
    assert steward.api.post(f"{S}/tasks/1/supersede", {"surviving_task": 99}).json()["error"] == "survivor_invalid"
    assert writer.api.post(f"{S}/tasks/2/supersede", {"surviving_task": 1}).status_code == 403
    steward.api.post(f"{S}/tasks/2/supersede", {"surviving_task": 1})
    assert steward.api.post(f"{S}/tasks/2/supersede", {"surviving_task": 1}).json()["error"] == "already_superseded"
    third = create_task(space=space, actor=steward.member, title="Write the onboarding guide")
    steward.api.post(f"{S}/tasks/{third.number}/reject")
    assert steward.api.post(f"{S}/tasks/1/supersede", {"surviving_task": third.number}).json()["error"] == (
        "survivor_invalid")


def test_occupancy_moves_to_the_next_live_sibling_when_the_occupant_ends(steward, writer, space):
    canonical, leftover = duplicates(space, steward.member)
    steward.api.post(f"{S}/tasks/{canonical.number}/reject", {"reason": "not needed"})
    assert Occupancy.objects.get(target=canonical.conflict_target).task == leftover
    response = writer.api.post(f"{S}/tasks", {"title": "retry policy"})
    assert response.json()["winner"] == {"type": "task", "id": leftover.number, "status": "open"}
    steward.api.post(f"{S}/tasks/{leftover.number}/withdraw")
    assert not Occupancy.objects.exists()
    assert writer.api.post(f"{S}/tasks", {"title": "retry policy"}).status_code == 201


def test_a_leftover_duplicate_keeps_occupying_when_its_sibling_is_done(steward, writer, writer2, space):
    canonical, leftover = duplicates(space, steward.member)
    post = writer.api.post(f"{S}/posts", {"body": "r"}).json()["id"]
    writer.api.post(f"{S}/tasks/{canonical.number}/done", {"post": post})
    writer2.api.post(f"{S}/tasks/{canonical.number}/attempts/1/confirm")
    assert Task.objects.get(pk=canonical.pk).status == "done"
    assert Occupancy.objects.get().task == leftover


def test_the_creator_may_withdraw_others_may_not(steward, writer, writer2, space):
    writer.api.post(f"{S}/tasks", {"title": "Retry policy"})
    assert writer2.api.post(f"{S}/tasks/1/withdraw").json()["error"] == "not_task_creator"
    response = writer.api.post(f"{S}/tasks/1/withdraw", {"reason": "changed my mind"})
    assert response.status_code == 200 and response.json()["status"] == "withdrawn"
    assert writer.api.post(f"{S}/tasks/1/withdraw").json()["error"] == "task_closed"


def test_reject_is_for_stewards(steward, writer, space):
    writer.api.post(f"{S}/tasks", {"title": "Retry policy"})
    assert writer.api.post(f"{S}/tasks/1/reject").status_code == 403
    assert steward.api.post(f"{S}/tasks/1/reject", {"reason": "out of scope"}).json()["status"] == "rejected"
    assert Task.objects.get().close_reason == "out of scope"


def test_other_spaces_cannot_touch_tasks(outsider, steward, space):
    create_task(space=space, actor=steward.member, title="Retry policy")
    for action in ["supersede", "withdraw", "reject", "assign", "give-back", "done"]:
        assert outsider.api.post(f"{S}/tasks/1/{action}", {"surviving_task": 1}).status_code == 404


def test_holding_a_slot_records_held_in_the_history_of_its_live_tasks_once(steward, writer, space):
    from tasks.models import EventKind

    bound = writer.api.post("/v1/spaces/agent-lab/tasks", {"title": "Build a benchmark for code review agents"}).json()
    assert bound["work_item_id"] == "T1"
    for _ in range(2):  # holding a held slot again changes nothing
        assert steward.api.post("/v1/spaces/agent-lab/holds", {"work_item_id": "T1", "reason": "rethink"}).status_code == 201
    history = writer.api.get(f"/v1/spaces/agent-lab/tasks/{bound['number']}/history").json()["results"]
    held = [event for event in history if event["kind"] == EventKind.HELD]
    assert len(held) == 1 and held[0]["actor"]["id"] == steward.member.pk
    assert held[0]["details"] == {"work_item_id": "T1", "reason": "rethink"}
    refused = writer.api.post("/v1/spaces/agent-lab/tasks", {"title": "review agent benchmark"})
    assert refused.json()["code"] in ("conflict_key_held", "conflict_key_occupied")
    assert steward.api.delete("/v1/spaces/agent-lab/holds/T1").status_code == 204


def test_any_member_lists_the_held_slots_and_only_a_steward_holds_one(steward, reader):
    """The decision docs/api.md records: reading holds is a member's (a create meets them as
    409 conflict_key_held), holding and releasing a steward's."""
    assert steward.api.post(f"{S}/holds", {"work_item_id": "T1"}).status_code == 201
    listed = reader.api.get(f"{S}/holds")
    assert listed.status_code == 200 and [h["work_item_id"] for h in listed.json()["results"]] == ["T1"]
    assert reader.api.post(f"{S}/holds", {"work_item_id": "T2"}).json()["error"] == "forbidden"
    assert reader.api.delete(f"{S}/holds/T1").json()["error"] == "forbidden"
    assert ApiClient(None).get(f"{S}/holds").status_code == 401
