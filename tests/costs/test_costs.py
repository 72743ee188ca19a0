"""SPEC §19: spend reported on heartbeat, give-back and done, exact figures, and budgets that hold."""
from __future__ import annotations

import threading
from datetime import timedelta
from decimal import Decimal
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.utils import timezone

from costs.models import MonthSpend, Spend
from events.models import Event
from tests.tasks.conftest import set_space

S = "/v1/spaces/agent-lab"


def claim(persona) -> int:
    response = persona.api.post(f"{S}/next")
    assert response.status_code == 200, response.content
    return response.json()["task"]["number"]


def done(persona, number: int, cost=None):
    post = persona.api.post(f"{S}/posts", {"body": "result"}).json()["id"]
    return persona.api.post(f"{S}/tasks/{number}/done", {"post": post, **({"cost": cost} if cost else {})})


def task_cost(persona, number: int) -> dict:
    return persona.api.get(f"{S}/tasks/{number}").json()["cost"]


def test_a_heartbeat_reports_the_claims_running_total_and_done_its_final_one(writer, tasks3):
    number = claim(writer)
    first = writer.api.post(f"{S}/tasks/{number}/heartbeat",
                            {"cost": {"usd": 0.25, "input_tokens": 1000, "output_tokens": 200, "model": "m-1"}})
    assert first.status_code == 200, first.content
    writer.api.post(f"{S}/tasks/{number}/heartbeat", {"cost": {"usd": 0.5, "input_tokens": 3000, "seconds": 12.5}})
    assert task_cost(writer, number) == {"usd": 0.5, "input_tokens": 3000, "output_tokens": 0, "seconds": 12.5,
                                         "attempts": 0, "wasted_usd": 0.0}
    answer = done(writer, number, {"usd": 0.75, "input_tokens": 4000, "output_tokens": 900, "seconds": 30})
    assert answer.status_code == 201, answer.content
    cost = task_cost(writer, number)
    assert cost["usd"] == 0.75 and cost["output_tokens"] == 900 and cost["attempts"] == 1
    spend = Spend.objects.get()
    assert spend.usd == Decimal("0.750000") and spend.model == "m-1"  # a report without a model keeps it
    assert MonthSpend.objects.get().usd == Decimal("0.750000")  # the month moved by the differences


def test_a_done_without_a_claim_reports_against_its_attempt(writer, writer2, tasks3):
    number = claim(writer2)
    writer2.api.post(f"{S}/tasks/{number}/give-back", {"cost": {"usd": 0.1}})
    answer = done(writer, number, {"usd": 0.2, "model": "m-2"})  # writer holds no claim
    assert answer.status_code == 201, answer.content
    spend = Spend.objects.get(claim=None)
    assert spend.attempt_id is not None and spend.usd == Decimal("0.2")
    cost = task_cost(writer, number)
    assert cost["usd"] == pytest.approx(0.3) and cost["wasted_usd"] == pytest.approx(0.1)  # given back: wasted


def test_a_rejected_attempts_spend_is_wasted(space, writer, writer2, tasks3):
    set_space(space, confirmations_required=1)
    number = claim(writer)
    done(writer, number, {"usd": 2})
    attempt = writer.api.get(f"{S}/tasks/{number}").json()["attempts"][0]["number"]
    rejected = writer2.api.post(f"{S}/tasks/{number}/attempts/{attempt}/reject", {"reason": "wrong"})
    assert rejected.status_code == 200, rejected.content
    assert task_cost(writer, number)["wasted_usd"] == 2.0


@pytest.mark.parametrize("cost, field", [
    ({"usd": 0.1234567}, "usd"), ({"usd": "0.1"}, "usd"), ({"usd": -1}, "usd"), ({"usd": 1000.5}, "usd"),
    ({"input_tokens": 1.5}, "input_tokens"), ({"input_tokens": True}, "input_tokens"), ({"seconds": -2}, "seconds"),
    ({"model": 7}, "model"), ({"dollars": 1}, "dollars"),
])
def test_a_report_is_checked_strictly(writer, tasks3, cost, field):
    number = claim(writer)
    response = writer.api.post(f"{S}/tasks/{number}/heartbeat", {"cost": cost})
    assert response.status_code == 422, response.content
    assert field in str(response.json()), response.json()
    assert not Spend.objects.exists()
    assert writer.api.post(f"{S}/tasks/{number}/heartbeat", {"cost": "1"}).status_code == 422
    assert writer.api.post(f"{S}/tasks/{number}/heartbeat", {"cost": None}).status_code == 200


def test_a_task_at_its_budget_is_no_longer_handed_out_and_its_holder_is_told(writer, writer2, steward, tasks3):
    assert steward.api.patch(f"{S}/tasks/1", {"budget_usd": 1.5}).status_code == 200
    for task in (2, 3):
        steward.api.patch(f"{S}/tasks/{task}", {"priority": 4})  # task 1 first in line
    assert claim(writer) == 1
    refused = writer.api.post(f"{S}/tasks/1/heartbeat", {"cost": {"usd": 1.5}})
    assert refused.status_code == 409 and refused.json()["error"] == "budget_exhausted", refused.content
    assert refused.json()["budget_usd"] == 1.5 and refused.json()["spend_usd"] == 1.5
    assert Spend.objects.get().usd == Decimal("1.5")  # the report stays recorded
    assert claim(writer2) != 1  # handed out no more
    assert done(writer, 1).status_code == 201  # a done is still an attempt
    assert steward.api.patch(f"{S}/tasks/1", {"budget_usd": None}).status_code == 200
    kinds = [e["kind"] for e in writer.api.get(f"{S}/tasks/1/history").json()["results"]]
    assert kinds.count("budget_changed") == 2  # set, then cleared: each a history event


def test_a_budget_set_at_create_is_kept_and_refused_when_malformed(writer, tasks3):
    created = writer.api.post(f"{S}/tasks", {"title": "Budgeted work", "budget_usd": 2.5})
    assert created.status_code == 201, created.content
    from tasks.models import Task

    assert Task.objects.get(number=created.json()["number"]).budget_usd == Decimal("2.5")
    for bad in ("2.5", -1, 0.0000001, True):
        refused = writer.api.post(f"{S}/tasks", {"title": f"Budgeted work {bad!r}", "budget_usd": bad})
        assert refused.status_code == 422 and "budget_usd" in str(refused.json()), refused.content


def test_a_space_at_its_months_budget_answers_next_409_and_the_rest_goes_on(space, writer, writer2, steward, tasks3):
    assert steward.api.patch(S, {"budget_usd": 10}).json()["budget_usd"] == 10.0
    number = claim(writer)
    writer.api.post(f"{S}/tasks/{number}/heartbeat", {"cost": {"usd": 8}})
    assert list(Event.objects.filter(type__startswith="budget.").values_list("type", flat=True)) == [
        "budget.threshold"]
    writer.api.post(f"{S}/tasks/{number}/heartbeat", {"cost": {"usd": 10}})
    writer.api.post(f"{S}/tasks/{number}/heartbeat", {"cost": {"usd": 11}})
    assert sorted(Event.objects.filter(type__startswith="budget.").values_list("type", flat=True)) == [
        "budget.exhausted", "budget.threshold"]  # each once a month
    refused = writer2.api.post(f"{S}/next")
    assert refused.status_code == 409 and refused.json()["error"] == "budget_exhausted"
    assert refused.json()["spend_usd"] == 11.0 and refused.json()["budget_usd"] == 10.0
    waited = writer2.api.post(f"{S}/next", {"wait": 1})
    assert waited.status_code == 409 and waited.json()["error"] == "budget_exhausted"
    assert writer2.api.post(f"{S}/tasks", {"title": "Still creating"}).status_code == 201
    assert done(writer, number).status_code == 201
    assert writer2.api.post(f"{S}/next", {"kind": "check"}).status_code == 200  # checking goes on
    summary = writer.api.get(f"{S}/summary").json()["cost"]
    assert summary["spend_usd"] == 11.0 and summary["budget_usd"] == 10.0
    steward.api.patch(S, {"budget_usd": 20})
    assert writer2.api.post(f"{S}/next").status_code == 200


def test_costs_group_a_period_and_give_the_cost_per_accepted_outcome(space, writer, writer2, steward, tasks3):
    set_space(space, confirmations_required=0)
    steward.api.patch(f"{S}/tasks/1", {"labels": ["api"]})
    for persona, usd, model in ((writer, 1, "m-a"), (writer2, 3, "m-b")):
        number = claim(persona)
        assert done(persona, number, {"usd": usd, "model": model}).status_code == 201
    by_member = writer.api.get(f"{S}/costs").json()
    assert by_member["usd"] == 4.0 and by_member["accepted"] == 2 and by_member["per_accepted_usd"] == 2.0
    assert {g["group"]: g["usd"] for g in by_member["groups"]} == {"writer": 1.0, "writer2": 3.0}
    by_model = writer.api.get(f"{S}/costs?group_by=model").json()
    assert [g["group"] for g in by_model["groups"]] == ["m-b", "m-a"]
    period = urlencode({"since": (timezone.now() + timedelta(hours=1)).isoformat(),
                        "until": (timezone.now() + timedelta(hours=2)).isoformat()})
    later = writer.api.get(f"{S}/costs?{period}")
    assert later.json()["usd"] == 0 and later.json()["groups"] == [] and later.json()["per_accepted_usd"] is None
    assert writer.api.get(f"{S}/costs?group_by=colour").status_code == 422
    assert writer.api.get(f"{S}/costs?since=yesterday").status_code == 422


@pytest.mark.django_db(transaction=True)
def test_many_reports_at_once_sum_exactly_in_the_database():
    """Threads report on their own claims at once: the month's total is the sum of every claim's
    last report, to the micro-dollar, whatever the interleaving."""
    from commands.unit import in_transaction, in_unit
    from spaces import services
    from tasks import claims as claim_services
    from tasks.commands import heartbeat
    from tests.factories import create_task

    space = services.create_space(slug="costly", name="Costly")
    members = [services.add_member(space=space, role="writer", name=f"w{n}") for n in range(8)]
    numbers = []
    for n, member in enumerate(members):
        create_task(space=space, actor=member, title=f"Work {n}")
        numbers.append(in_transaction(claim_services.claim_next_task, space=space, member=member)[0].number)
    errors = []

    def report(member, number) -> None:
        try:
            for k in range(1, 21):
                in_unit(lambda unit: heartbeat(member, unit=unit, number=number,
                                               data={"cost": {"usd": round(0.000001 * k + 0.1 * k, 6)}}))
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=report, args=pair) for pair in zip(members, numbers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    expected = 8 * (Decimal("0.000020") + Decimal("2.0"))
    assert MonthSpend.objects.get(space=space).usd == expected
    assert sum(s.usd for s in Spend.objects.filter(space=space)) == expected


def race_against_a_budget(slug: str, *, agents: int, tasks: int, work) -> tuple[object, list[str]]:
    """``agents`` threads against a space of 1 USD a month: each calls ``next`` until refused (the
    refusals' codes are answered), running ``work(member, number)`` on each task it is handed."""
    from commands.unit import in_unit
    from common.refusals import DomainError
    from spaces import services
    from tasks.commands import next_task
    from tests.factories import create_task

    space = services.create_space(slug=slug, name=slug.title())
    services.update_space(space=space, budget_usd=Decimal(1))
    members = [services.add_member(space=space, role="writer", name=f"w{n}") for n in range(agents)]
    for n in range(tasks):
        create_task(space=space, actor=members[n % agents], title=f"Work {n}")
    outcomes: list[str] = []

    def agent(member) -> None:
        try:
            while True:
                try:
                    answer = in_unit(lambda unit: next_task(member, unit=unit, data={}))
                except DomainError as refusal:
                    outcomes.append(refusal.code)
                    return
                if answer.body["task"] is not None:  # None: every task is held right now
                    work(member, answer.body["task"]["number"])
        finally:
            connection.close()

    threads = [threading.Thread(target=agent, args=(member,)) for member in members]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    spent = MonthSpend.objects.get(space=space).usd
    assert spent == sum(s.usd for s in Spend.objects.filter(space=space))  # exact
    return space, outcomes


@pytest.mark.django_db(transaction=True)
def test_a_spaces_budget_holds_while_agents_race():
    """Eight agents claim, report 0.3 USD and give back, over and over, against a 1 USD month:
    every one is refused in the end, and the space passes its budget by no more than the claims
    in flight (one an agent) could spend."""
    from commands.unit import in_unit
    from tasks.commands import give_back
    from tasks.models import Claim

    def work(member, number: int) -> None:
        in_unit(lambda unit: give_back(member, unit=unit, number=number, data={"cost": {"usd": 0.3}}))

    space, outcomes = race_against_a_budget("budgeted", agents=8, tasks=8, work=work)
    assert outcomes == ["budget_exhausted"] * 8
    assert Decimal(1) <= MonthSpend.objects.get(space=space).usd <= Decimal(1) + 8 * Decimal("0.3")
    assert Claim.objects.filter(space=space).count() == Spend.objects.filter(space=space).count()


@pytest.mark.django_db(transaction=True)
def test_sixteen_agents_reporting_as_they_go_pass_the_spaces_budget_by_one_report_a_claim_at_most():
    """Sixteen agents race: each claims, heartbeats its running total 0.05 USD more each time (up
    to 0.5), and stops when told (a heartbeat's 409: it gives the claim back). Against a 1 USD
    month, holders are told once the space's spend reaches it and ``next`` counts the claims in
    flight, so the space passes its budget by at most one report (0.05) a claim in flight."""
    from commands.unit import in_unit
    from common.refusals import DomainError
    from tasks.commands import give_back, heartbeat

    step, agents = Decimal("0.05"), 16
    told_while_holding: list[str] = []

    def work(member, number: int) -> None:
        total = Decimal(0)
        for _ in range(10):
            total += step
            try:
                in_unit(lambda unit: heartbeat(member, unit=unit, number=number, data={"cost": {"usd": float(total)}}))
            except DomainError as refusal:
                told_while_holding.append(refusal.code)
                break
        in_unit(lambda unit: give_back(member, unit=unit, number=number, data={"cost": {"usd": float(total)}}))

    space, outcomes = race_against_a_budget("reporting", agents=agents, tasks=2 * agents, work=work)
    assert outcomes == ["budget_exhausted"] * agents
    assert told_while_holding and set(told_while_holding) == {"budget_exhausted"}
    spent = MonthSpend.objects.get(space=space).usd
    assert Decimal(1) <= spent <= Decimal(1) + agents * step, spent


def test_the_admin_shows_spend_read_only(admin_client, writer, tasks3):
    number = claim(writer)
    writer.api.post(f"{S}/tasks/{number}/heartbeat", {"cost": {"usd": 0.42, "model": "m-admin"}})
    months = admin_client.get("/admin/costs/monthspend/")
    assert months.status_code == 200 and b"0.420000" in months.content
    reports = admin_client.get("/admin/costs/spend/")
    assert reports.status_code == 200 and b"m-admin" in reports.content
    assert admin_client.get("/admin/costs/spend/add/").status_code == 403  # written by reports only
