"""SPEC §6.2–§6.4: attempts, checks, cycles, zero-confirmation spaces, notifications."""
from __future__ import annotations

import pytest

from tasks.models import Attempt, Notification, Task
from tests.tasks.conftest import set_space

S = "/v1/spaces/agent-lab"


def post_of(persona, body="result") -> int:
    return persona.api.post(f"{S}/posts", {"body": body}).json()["id"]


def done(persona, number=1, post=None):
    return persona.api.post(f"{S}/tasks/{number}/done", {"post": post or post_of(persona)})


def confirm(persona, attempt, number=1):
    return persona.api.post(f"{S}/tasks/{number}/attempts/{attempt}/confirm")


def reject(persona, attempt, number=1, reason="wrong"):
    return persona.api.post(f"{S}/tasks/{number}/attempts/{attempt}/reject", {"reason": reason})


def test_one_agent_claim_done_confirm(writer, writer2, tasks3):
    writer.api.post(f"{S}/next")
    response = done(writer)
    assert response.status_code == 201
    assert response.json()["attempt"]["number"] == 1 and response.json()["task"]["status"] == "in_review"
    accepted = confirm(writer2, 1)
    assert accepted.status_code == 200
    assert accepted.json()["attempt"]["state"] == "accepted" and accepted.json()["task"]["status"] == "done"
    assert Notification.objects.filter(member=writer.member, kind="attempt_accepted").exists()


def test_any_writer_may_mark_done_citing_another_keys_visible_post(writer, writer2, tasks3):
    post = post_of(writer2)
    assert done(writer, post=post).status_code == 201
    assert Notification.objects.filter(member=writer2.member, kind="task_attempt").exists()


def test_hidden_withheld_or_foreign_posts_cannot_be_cited(writer, writer2, steward, tasks3):
    hidden = post_of(writer2)
    writer2.api.post(f"{S}/posts/{hidden}/hide")
    withheld = post_of(writer2)
    steward.api.post(f"{S}/posts/{withheld}/withhold")
    for post in [hidden, withheld, 9999]:
        assert done(writer, post=post).json()["error"] == "task_post_not_found"
    assert not Attempt.objects.exists()


def test_attempts_are_numbered_across_cycles_and_refusals_take_no_number(writer, writer2, writer3, tasks3):
    assert done(writer).json()["attempt"]["number"] == 1
    assert done(writer).json()["error"] == "attempt_exists"  # refused: no number taken
    assert done(writer2).json()["attempt"]["number"] == 2
    reject(writer3, 1)
    body = reject(writer3, 2).json()
    assert body["task"]["status"] == "open" and body["task"]["cycle"] == 2
    assert done(writer).json()["attempt"]["number"] == 3


def test_at_most_five_attempts_a_cycle(space, tasks3):
    from tests.conftest import make_persona

    writers = [make_persona(space, "writer", f"w{i}") for i in range(6)]
    for w in writers[:5]:
        assert done(w).status_code == 201
    assert done(writers[5]).json()["error"] == "attempt_limit"


def test_the_first_attempt_ends_all_claims_and_notifies_holders(writer, writer2, writer3, tasks3):
    writer.api.post(f"{S}/next", {"number": 1})
    writer2.api.post(f"{S}/next", {"number": 1, "join": True})
    done(writer3)
    task = Task.objects.get(number=1)
    assert not task.claims.filter(ended_at=None).exists()
    assert set(task.claims.values_list("end_reason", flat=True)) == {"attempt"}
    notified = set(Notification.objects.filter(kind="task_attempt").values_list("member__name", flat=True))
    assert notified == {"writer", "writer2"}


def test_a_rejected_post_cannot_be_cited_again(writer, writer2, tasks3):
    post = post_of(writer)
    done(writer, post=post)
    reject(writer2, 1)
    assert done(writer, post=post).json()["error"] == "post_rejected_for_task"


def test_doer_or_checker_never_both(writer, writer2, writer3, tasks3):
    done(writer)
    assert confirm(writer, 1).json()["error"] == "doer_cannot_check"
    done(writer2)
    assert confirm(writer2, 1).json()["error"] == "doer_cannot_check"  # a doer in the cycle checks none of it
    confirm(writer3, 2)  # writer3 checks (one confirmation accepts attempt 2; task done)
    assert Task.objects.get(number=1).status == "done"


def test_a_checker_makes_no_attempt_in_the_cycle(writer, writer2, tasks3):
    set_space(writer.member.space, confirmations_required=2)
    done(writer)
    confirm(writer2, 1)
    assert done(writer2).json()["error"] == "checker_cannot_attempt"


def test_the_posts_author_does_not_check(writer, writer2, tasks3):
    done(writer, post=post_of(writer2))
    assert confirm(writer2, 1).json()["error"] == "author_cannot_check"


def test_a_key_checks_an_attempt_once(writer, writer2, tasks3):
    set_space(writer.member.space, confirmations_required=2)
    done(writer)
    confirm(writer2, 1)
    assert confirm(writer2, 1).json()["error"] == "check_exists"


def test_only_waiting_attempts_are_checked(writer, writer2, writer3, tasks3):
    done(writer)
    confirm(writer2, 1)
    # The task is done now: checks are refused as closed; attempt_not_waiting shows on a live task.
    assert confirm(writer3, 1).json()["error"] == "task_closed"


def test_attempt_not_waiting_on_a_live_task(writer, writer2, writer3, writer4, tasks3):
    done(writer)
    done(writer2)
    reject(writer3, 1)
    assert reject(writer4, 1).json()["error"] == "attempt_not_waiting"


def test_first_to_reach_the_confirmations_is_accepted_others_pass(writer, writer2, writer3, tasks3):
    done(writer)
    done(writer2)
    confirm(writer3, 2)
    states = dict(Attempt.objects.values_list("number", "state"))
    assert states == {1: "passed", 2: "accepted"}


def test_reopening_names_the_rejected_attempt_post_and_cleared_confirmations(writer, writer2, writer3, tasks3):
    set_space(writer.member.space, confirmations_required=2)
    post = post_of(writer)
    done(writer, post=post)
    confirm(writer2, 1)
    body = reject(writer3, 1).json()
    assert body["reopened"]["rejected_attempt"] == 1 and body["reopened"]["result_post"] == post
    assert body["reopened"]["confirmations_cleared"] == [{"attempt": 1, "member": writer2.member.pk}]
    assert body["task"]["cycle"] == 2 and body["task"]["status"] == "open"
    reopened_for = set(Notification.objects.filter(kind="task_reopened").values_list("member__name", flat=True))
    assert reopened_for == {"writer", "writer2", "writer3"}
    history = writer.api.get(f"{S}/tasks/1/history").json()["results"]
    assert history[-1]["kind"] == "reopened" and history[-1]["details"]["rejected_attempt"] == 1


def test_a_check_counts_for_its_cycle_only(writer, writer2, writer3, writer4, tasks3):
    set_space(writer.member.space, confirmations_required=2)
    done(writer)
    confirm(writer2, 1)
    reject(writer3, 1)  # cycle 2 begins; writer2's confirmation stays in cycle 1
    done(writer)  # writer's cycle-2 attempt (number 2)
    assert confirm(writer4, 2).json()["attempt"]["state"] == "waiting"  # 1 of 2 in this cycle
    assert confirm(writer2, 2).json()["attempt"]["state"] == "accepted"


def test_the_rejects_reason_reaches_the_doer(writer, writer2, tasks3):
    done(writer)
    reject(writer2, 1, reason="no tests")
    note = Notification.objects.get(member=writer.member, kind="attempt_rejected")
    assert note.details["reason"] == "no tests"


class TestZeroConfirmationSpaces:
    @pytest.fixture(autouse=True)
    def zero(self, space):
        set_space(space, confirmations_required=0)

    def test_a_solo_attempt_is_accepted_at_once(self, writer, tasks3):
        writer.api.post(f"{S}/next")
        body = done(writer).json()
        assert body["attempt"]["state"] == "accepted" and body["task"]["status"] == "done"

    def test_contested_when_another_key_held_it_live(self, writer, writer2, writer3, tasks3):
        writer.api.post(f"{S}/next", {"number": 1})
        writer2.api.post(f"{S}/next", {"number": 1, "join": True})
        assert done(writer).json()["attempt"]["state"] == "waiting"
        assert confirm(writer3, 1).json()["attempt"]["state"] == "accepted"

    def test_contested_when_another_key_gave_it_back(self, writer, writer2, tasks3):
        writer2.api.post(f"{S}/next", {"number": 1})
        writer2.api.post(f"{S}/tasks/1/give-back")
        assert done(writer).json()["attempt"]["state"] == "waiting"

    def test_contested_when_a_reject_came_first(self, writer, writer2, writer3, tasks3):
        writer.api.post(f"{S}/next", {"number": 1})
        writer2.api.post(f"{S}/next", {"number": 1, "join": True})
        done(writer)
        done(writer2)
        reject(writer3, 1)  # attempt 2 still waits: same cycle, a reject came first
        assert Task.objects.get(number=1).status == "in_review"

    def test_a_doer_may_confirm_a_rival(self, writer, writer2, tasks3):
        writer.api.post(f"{S}/next", {"number": 1})
        writer2.api.post(f"{S}/next", {"number": 1, "join": True})
        done(writer)
        done(writer2)
        assert confirm(writer2, 1).json()["attempt"]["state"] == "accepted"


def test_next_kind_check_offers_an_attempt_the_caller_may_check(writer, writer2, tasks3):
    assert writer2.api.post(f"{S}/next", {"kind": "check"}).json() == {"task": None, "attempt": None}
    done(writer, number=2)
    assert writer.api.post(f"{S}/next", {"kind": "check"}).json()["attempt"] is None  # its own
    offered = writer2.api.post(f"{S}/next", {"kind": "check"}).json()
    assert offered["task"]["id"] == 2 and offered["attempt"]["number"] == 1


def test_notifications_list_and_mark_read(writer, writer2, tasks3):
    done(writer, post=post_of(writer2))
    listed = writer2.api.get("/v1/notifications").json()["results"]
    assert [n["kind"] for n in listed] == ["task_attempt"] and listed[0]["task"] == 1 and not listed[0]["read"]
    for body, field in (({"ids": ["x"]}, "ids"), ({"colour": 1}, "colour")):
        bad = writer2.api.post("/v1/notifications/read", body)
        assert bad.status_code == 422 and set(bad.json()["fields"]) == {field}
    # Another member's ids mark nothing of theirs: a member reads only its own notifications.
    assert writer.api.post("/v1/notifications/read", {"ids": [listed[0]["id"]]}).json() == {"marked_read": 0}
    assert writer2.api.post("/v1/notifications/read", {}).json() == {"marked_read": 1}
    assert writer2.api.get("/v1/notifications?unread=true").json()["results"] == []
    assert writer.api.get("/v1/notifications").json()["results"] == []


def test_assign_is_a_stewards_claim(steward, writer, tasks3):
    response = steward.api.post(f"{S}/tasks/1/assign", {"member": writer.member.pk})
    assert response.status_code == 200 and response.json()["task"]["status"] == "assigned"
    assert writer.api.post(f"{S}/tasks/1/assign", {"member": writer.member.pk}).status_code == 403


def test_a_reader_cannot_be_assigned_a_task(steward, reader, tasks3):
    """A reader attempts nothing (SPEC §2): assigning one is a 422 naming the member, and the
    task stays open."""
    response = steward.api.post(f"{S}/tasks/1/assign", {"member": reader.member.pk})
    assert response.status_code == 422 and "member" in response.json()["fields"]
    assert Task.objects.get(number=1).status == "open"


def test_in_zero_confirmation_spaces_a_doer_still_cannot_reject_a_rival(space, writer, writer2, tasks3):
    set_space(space, confirmations_required=0)
    writer.api.post(f"{S}/next", {"number": 1})
    done(writer2)  # contested: writer held it live
    done(writer)
    assert reject(writer2, 2).json()["error"] == "doer_cannot_check"
