"""The stewards' admin pages and actions, through Django's test client (SPEC §5.3)."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from commands.unit import in_transaction, in_unit
from allocation.conflict_keys import ConflictKey
from allocation.models import Occupancy, Reservation, SlotHold
from idempotency.models import Operation
from allocation.services import reserve
from spaces.models import ApiKey, CharterItem, Member
from spaces.key_lookup import authenticate_key
from tasks.models import Task
from tests.factories import create_task


@pytest.fixture
def admin_client(db) -> Client:
    User.objects.create_superuser("ada", "ada@example.com", "pw")
    client = Client()
    client.login(username="ada", password="pw")
    return client


def action(client, model: str, name: str, ids, **extra):
    data = {"action": name, "_selected_action": [str(i) for i in ids], **extra}
    return client.post(f"/admin/{model}/", data, follow=True)


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_every_page_renders(admin_client, space, steward):
    task = create_task(space=space, actor=steward.member, title="Retry policy")
    for url in ["/admin/", "/admin/spaces/space/", f"/admin/spaces/space/{space.pk}/change/", "/admin/spaces/member/",
                f"/admin/spaces/member/{steward.member.pk}/change/", "/admin/spaces/apikey/", "/admin/spaces/post/",
                "/admin/tasks/task/", f"/admin/tasks/task/{task.pk}/change/", "/admin/allocation/reservation/",
                "/admin/allocation/occupancy/", "/admin/idempotency/operation/", "/admin/allocation/slothold/",
                f"/admin/spaces/space/{space.pk}/bind/", "/admin/events/event/", "/admin/events/event/?numbered=yes"]:
        assert admin_client.get(url).status_code == 200, url


def test_the_feed_is_read_in_the_admin_and_changed_by_nobody(admin_client, space, steward):
    from events.models import Event

    task = create_task(space=space, actor=steward.member, title="Retry policy")
    event = Event.objects.get(task_number=task.number)
    listed = admin_client.get("/admin/events/event/", {"q": "task.created"}).content.decode()
    assert "task.created" in listed and f">{event.seq}<" in listed
    page = admin_client.get(f"/admin/events/event/{event.pk}/change/").content.decode()
    assert "task.created" in page and "<pre>" in page and 'name="_save"' not in page
    assert admin_client.post(f"/admin/events/event/{event.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Event.objects.filter(pk=event.pk).exists()


def test_bind_preview_shows_fractions_decision_and_key(admin_client, space):
    response = admin_client.get(f"/admin/spaces/space/{space.pk}/bind/", {"title": "T2 — Retry & backoff policy for tool calls",
                                                                          "delivery_mode": "result"})
    html = response.content.decode()
    assert "Binds to <strong>T3</strong>" in html and "5/9" in html and "1/13" in html
    assert "task:agent-lab:slot:T3" in html


def test_the_task_page_shows_the_full_history(admin_client, space, steward):
    task = create_task(space=space, actor=steward.member, title="Retry policy")
    html = admin_client.get(f"/admin/tasks/task/{task.pk}/change/").content.decode()
    assert "history" in html.lower() and "created" in html


def test_supersede_through_the_intermediate_form(admin_client, space, steward):
    keep = create_task(space=space, actor=steward.member, title="Retry policy")
    dup = create_task(space=space, actor=steward.member, title="Retry policy", delivery_mode="review")
    form = action(admin_client, "tasks/task", "supersede", [dup.pk])
    page = form.content.decode()
    assert "Surviving task number" in page and 'list="survivors"' in page
    picker = page[page.index('<datalist id="survivors">'):page.index("</datalist>")]
    assert f'value="{keep.number}">#{keep.number} Retry policy' in picker  # a live task of the space
    assert f'value="{dup.number}"' not in picker  # not the one being superseded
    done = action(admin_client, "tasks/task", "supersede", [dup.pk], apply="1", surviving_task=keep.number,
                  reason="allocation_duplicate")
    dup.refresh_from_db()
    assert dup.status == "superseded" and dup.superseded_by == keep
    assert dup.closed_by.name == "admin:ada" and dup.events.last().actor.name == "admin:ada"
    assert any("Superseded 1" in m for m in messages_of(done))
    listed = admin_client.get("/admin/tasks/task/").content.decode()
    assert f"/admin/tasks/task/{keep.pk}/change/" in listed and f"/admin/tasks/task/{dup.pk}/change/" not in listed
    assert f"/admin/tasks/task/{dup.pk}/change/" in admin_client.get("/admin/tasks/task/?superseded=include").content.decode()


def test_refusals_are_messages_not_errors(admin_client, space, steward):
    task = create_task(space=space, actor=steward.member, title="Retry policy")
    response = action(admin_client, "tasks/task", "supersede", [task.pk], apply="1", surviving_task=task.number,
                      reason="x")
    assert response.status_code == 200
    assert any("another task" in m for m in messages_of(response))
    assert Task.objects.get(pk=task.pk).status == "open"


def test_withdraw_reject_and_hold(admin_client, space, steward):
    a = create_task(space=space, actor=steward.member, title="Retry policy")
    b = create_task(space=space, actor=steward.member, title="Write the onboarding guide")
    c = create_task(space=space, actor=steward.member, title="Benchmark harness for code-review agents")
    action(admin_client, "tasks/task", "withdraw", [a.pk])
    action(admin_client, "tasks/task", "reject", [b.pk])
    held = action(admin_client, "tasks/task", "hold_slot", [c.pk, a.pk])
    assert Task.objects.get(pk=a.pk).status == "withdrawn" and Task.objects.get(pk=b.pk).status == "rejected"
    assert list(SlotHold.objects.values_list("work_item_id", flat=True)) == ["T1"]
    assert any("not bound" in m for m in messages_of(held))
    assert not Occupancy.objects.filter(task__in=[a, b]).exists()


def space_settings(space, **changes) -> dict:
    """The space form's fields as the page shows them, with ``changes``."""
    values = {"slug": space.slug, "name": space.name, "task_claim_hours": 4, "claim_lease_seconds": "",
              "confirmations_required": 1, "allocation_window_seconds": 15, "max_claims_per_task": 3,
              "max_attempts_per_cycle": 5, "requests_per_minute": "", "similar_threshold": 0.45,
              "max_queued_exports": 3, "max_waits_per_key": 8, "event_retention_days": 30,
              "approval_required": "none", "checks_by": "any", "max_claims_per_member": "", "label_caps": "{}",
              "priority_aging_minutes": "", "max_cycles": ""}
    return {**values, **changes}


def no_catalog_rows() -> dict:
    return {"charter_items-TOTAL_FORMS": "0", "charter_items-INITIAL_FORMS": "0", "charter_items-MIN_NUM_FORMS": "0",
            "charter_items-MAX_NUM_FORMS": "1000"}


def test_a_steward_sets_every_space_setting_in_the_admin(admin_client, space):
    # The same settings as PATCH /v1/spaces/{slug} (SPEC §3.1), through the same service.
    changes = {"claim_lease_seconds": 60, "requests_per_minute": 120, "similar_threshold": 0.6, "max_queued_exports": 5,
               "max_waits_per_key": 4, "event_retention_days": 7, "max_claims_per_member": 2, "label_caps": '{"gpu": 3}',
               "priority_aging_minutes": 60, "max_cycles": 4}
    response = admin_client.post(f"/admin/spaces/space/{space.pk}/change/", {**space_settings(space, **changes),
                                                                              **no_catalog_rows()})
    assert response.status_code == 302, response.content.decode()[:2000]
    space.refresh_from_db()
    assert {name: getattr(space, name) for name in changes} == {**changes, "label_caps": {"gpu": 3}}


def test_a_space_made_in_the_admin_has_its_settings_and_catalog_through_the_commands(admin_client, space):
    """A new space, its settings and a first catalog row in one form: each saved as the API's
    commands save them (the settings' event, the row's catalog version), nothing half made."""
    from events.models import Event
    from spaces.models import Space

    data = {**space_settings(space, slug="new-lab", name="New lab", task_claim_hours=6, requests_per_minute=90),
            "charter_items-TOTAL_FORMS": "1", "charter_items-INITIAL_FORMS": "0", "charter_items-MIN_NUM_FORMS": "0",
            "charter_items-MAX_NUM_FORMS": "1000", "charter_items-0-work_item_id": "t7",
            "charter_items-0-canonical_title": "Write the guide", "charter_items-0-aliases": "guide\ndocs"}
    response = admin_client.post("/admin/spaces/space/add/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    made = Space.objects.get(slug="new-lab")
    assert (made.name, made.task_claim_hours, made.requests_per_minute) == ("New lab", 6, 90)
    assert list(made.charter_items.values_list("work_item_id", "aliases")) == [("T7", ["guide", "docs"])]
    assert made.catalog_version == 1
    assert set(Event.objects.filter(space_id=made.pk).values_list("type", flat=True)) == {
        "space.settings_changed", "catalog.item_saved"}


def test_a_member_added_in_the_admin_is_announced_as_one_that_joined(admin_client, space):
    from events.models import Event

    response = admin_client.post("/admin/spaces/member/add/", {
        "space": space.pk, "name": "reviewer-2", "role": "reader", "kind": "person", "created_at_0": "2026-01-01",
        "created_at_1": "00:00:00", "api_keys-TOTAL_FORMS": "0", "api_keys-INITIAL_FORMS": "0",
        "api_keys-MIN_NUM_FORMS": "0", "api_keys-MAX_NUM_FORMS": "1000"})
    assert response.status_code == 302, response.content.decode()[:2000]
    member = Member.objects.get(space=space, name="reviewer-2")
    assert member.kind == "person"
    assert Event.objects.get(space_id=space.pk, type="member.added").data == {
        "member": member.pk, "name": "reviewer-2", "role": "reader"}


def test_a_setting_out_of_range_in_the_admin_is_a_form_error(admin_client, space):
    response = admin_client.post(f"/admin/spaces/space/{space.pk}/change/", {**space_settings(space, similar_threshold=2),
                                                                              **no_catalog_rows()})
    assert response.status_code == 200 and "errornote" in response.content.decode()
    space.refresh_from_db()
    assert space.similar_threshold == 0.45


def test_catalog_inline_edits_aliases_one_per_line_and_bumps_the_version(admin_client, space):
    item = CharterItem.objects.get(space=space, work_item_id="T1")
    version = space.catalog_version
    data = {
        **space_settings(space),
        "charter_items-TOTAL_FORMS": "4", "charter_items-INITIAL_FORMS": "3", "charter_items-MIN_NUM_FORMS": "0",
        "charter_items-MAX_NUM_FORMS": "1000",
    }
    for i, row in enumerate(CharterItem.objects.filter(space=space).order_by("position")):
        data.update({f"charter_items-{i}-id": row.pk, f"charter_items-{i}-space": space.pk,
                     f"charter_items-{i}-work_item_id": row.work_item_id,
                     f"charter_items-{i}-canonical_title": row.canonical_title,
                     f"charter_items-{i}-aliases": "\n".join(row.aliases)})
    data["charter_items-0-aliases"] = "review agent benchmark\n\n  agent eval harness  \n"
    data.update({"charter_items-3-space": space.pk, "charter_items-3-work_item_id": "t04",
                 "charter_items-3-canonical_title": "Onboarding guide", "charter_items-3-aliases": "docs"})
    response = admin_client.post(f"/admin/spaces/space/{space.pk}/change/", data, follow=True)
    assert response.status_code == 200
    item.refresh_from_db()
    assert item.aliases == ["review agent benchmark", "agent eval harness"]
    assert CharterItem.objects.get(space=space, work_item_id="T4").aliases == ["docs"]
    space.refresh_from_db()
    assert space.catalog_version > version


def test_catalog_inline_rejects_bad_ids(admin_client, space):
    data = {
        **space_settings(space),
        "charter_items-TOTAL_FORMS": "1", "charter_items-INITIAL_FORMS": "0", "charter_items-MIN_NUM_FORMS": "0",
        "charter_items-MAX_NUM_FORMS": "1000", "charter_items-0-space": space.pk,
        "charter_items-0-work_item_id": "X9", "charter_items-0-canonical_title": "x", "charter_items-0-aliases": "",
    }
    response = admin_client.post(f"/admin/spaces/space/{space.pk}/change/", data)
    assert response.status_code == 200 and "T followed by digits" in response.content.decode()


def test_issue_a_key_shown_once_and_revoke(admin_client, space, writer):
    response = action(admin_client, "spaces/member", "issue_key", [writer.member.pk])
    raw = re.search(r"<code>(sk_[a-z0-9]+_[0-9a-f]+)</code>", " ".join(messages_of(response))).group(1)
    assert authenticate_key(raw).member == writer.member
    action(admin_client, "spaces/member", "revoke_keys", [writer.member.pk])
    assert authenticate_key(raw) is None
    assert not ApiKey.objects.filter(ApiKey.live(timezone.now()), member=writer.member).exists()


def test_role_change_in_the_admin_goes_through_the_service(admin_client, space, writer):
    generation = writer.member.api_keys.get().generation
    admin_client.post(f"/admin/spaces/member/{writer.member.pk}/change/", {
        "space": space.pk, "name": writer.member.name, "role": "reader", "kind": "agent", "created_at_0": "2026-01-01",
        "created_at_1": "00:00:00", "api_keys-TOTAL_FORMS": "0", "api_keys-INITIAL_FORMS": "0",
        "api_keys-MIN_NUM_FORMS": "0", "api_keys-MAX_NUM_FORMS": "1000"})
    assert Member.objects.get(pk=writer.member.pk).role == "reader"
    assert writer.member.api_keys.get().generation == generation + 1


def test_expire_now_on_reservations_and_operations(admin_client, space, writer):
    r = in_transaction(reserve, operation=None, commits_alone=True, space=space, key=ConflictKey("create_task", "task:agent-lab:x", "result"),
                       member=writer.member, payload_sha256="x")
    action(admin_client, "allocation/reservation", "expire_now", [r.pk])
    assert not Reservation.objects.exists()
    writer.api.post("/v1/spaces/agent-lab/posts", {"body": "x"}, headers={"Idempotency-Key": "k"})
    Operation.objects.update(state="in_progress")
    action(admin_client, "idempotency/operation", "expire_now", list(Operation.objects.values_list("pk", flat=True)))
    assert Operation.objects.get().state == "unknown"


def test_admin_pages_carry_a_content_security_policy_that_allows_only_the_server(admin_client, space):
    policy = admin_client.get("/admin/").headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy and "frame-ancestors 'none'" in policy


def test_the_task_list_shows_and_filters_the_work_graph(admin_client, space, steward):
    first = create_task(space=space, actor=steward.member, title="schema change", priority=1, labels=["db"])
    second = create_task(space=space, actor=steward.member, title="migration", labels=["db", "api"],
                         blocked_by=[first.number])
    create_task(space=space, actor=steward.member, title="docs", priority=4)
    page = admin_client.get("/admin/tasks/task/").content.decode()
    assert "blocked" in page and "db, api" in page

    def listed(query: str) -> set[str]:
        html = admin_client.get(f"/admin/tasks/task/?{query}").content.decode()
        return set(re.findall(r'/admin/tasks/task/\d+/change/[^>]*>(\d+)<', html))

    assert listed("readiness=ready") == {"1", "3"}
    assert listed("readiness=blocked") == {"2"}
    assert listed("priority=4") == {"3"}
    assert listed("q=migrations") == {"2"}  # full-text: stemmed
    assert listed("q=3") == {"3"} and listed("q=zebra") == set()
    assert listed("label=api") == {"2"}
    html = admin_client.get(f"/admin/tasks/task/{second.pk}/change/").content.decode()
    assert f'/admin/tasks/task/{first.pk}/change/">#1</a>' in html  # what it waits on
    html = admin_client.get(f"/admin/tasks/task/{first.pk}/change/").content.decode()
    assert f'/admin/tasks/task/{second.pk}/change/">#2</a>' in html  # what it blocks


def test_a_space_page_links_its_bind_preview_and_its_board(admin_client, space):
    html = admin_client.get(f"/admin/spaces/space/{space.pk}/change/").content.decode()
    assert f'href="/admin/spaces/space/{space.pk}/bind/"' in html and 'href="/board/agent-lab/"' in html
    assert admin_client.get("/admin/spaces/space/add/").status_code == 200


def test_the_task_list_estimates_its_count_past_ten_thousand(admin_client, space, steward, monkeypatch):
    from fronts.admin.tasks import EstimatedCountPaginator

    for n in range(12):
        create_task(space=space, actor=steward.member, title=f"work item {n}")
    monkeypatch.setattr(EstimatedCountPaginator, "ESTIMATE_FROM", 5)
    page = admin_client.get("/admin/tasks/task/")
    assert page.status_code == 200 and page.context["cl"].result_count >= 6  # PostgreSQL's estimate
    monkeypatch.setattr(EstimatedCountPaginator, "ESTIMATE_FROM", 100)
    assert admin_client.get("/admin/tasks/task/").context["cl"].result_count == 12  # exact below it


def test_the_admin_reads_as_this_product_and_names_rows_by_what_they_are(admin_client, space, steward, writer):
    from datetime import timedelta

    from tasks.models import Attempt, Claim

    page = admin_client.get("/admin/").content.decode()
    assert "Spaces administration" in page and "Django administration" not in page
    create_task(space=space, actor=steward.member, title="Retry policy")
    writer.api.post("/v1/spaces/agent-lab/next")
    claim = Claim.objects.get()
    Claim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() + timedelta(hours=3, minutes=5))
    assert str(Claim.objects.get()) == "claim by writer, lapses in 3 h"
    post = writer.api.post("/v1/spaces/agent-lab/posts", {"body": "It runs."}).json()["id"]
    writer.api.post("/v1/spaces/agent-lab/tasks/1/done", {"post": post})
    assert str(Claim.objects.get()).startswith("claim by writer, attempt ")
    assert str(Attempt.objects.get()) == "attempt 1 by writer (waiting)"


def test_a_tasks_page_is_titled_by_the_task_with_its_internals_folded(admin_client, space, steward):
    task = create_task(space=space, actor=steward.member, title="Retry policy")
    page = admin_client.get(f"/admin/tasks/task/{task.pk}/change/").content.decode()
    assert "Task #1: Retry policy" in page and "Change task" not in page
    internals = page[page.index("Internals"):]
    assert "payload_sha256" in internals.lower().replace(" ", "_") or "Payload sha256" in internals


def test_the_bind_preview_shows_slot_titles_and_which_are_taken(admin_client, space, steward):
    task = create_task(space=space, actor=steward.member, title="Build a benchmark for code review agents")
    assert task.work_item_id == "T1"
    html = admin_client.get(f"/admin/spaces/space/{space.pk}/bind/",
                            {"title": "Build a benchmark for code review agents", "delivery_mode": "result"}
                            ).content.decode()
    title = CharterItem.objects.get(space=space, work_item_id="T1").canonical_title
    assert title in html and f"taken by #{task.number}" in html and "free" in html  # T2, T3 are free


def test_history_reads_in_words_with_members_by_name_and_each_time_once(admin_client, space, steward, writer):
    task = create_task(space=space, actor=steward.member, title="Retry policy")
    writer.api.post("/v1/spaces/agent-lab/next")
    html = admin_client.get(f"/admin/tasks/task/{task.pk}/change/").content.decode()
    history = html[html.index("history"):]
    assert "claimed it" in history and '"member":' not in history  # in words, not JSON with ids
    assert " UTC</p>" not in history  # the row's own time is not repeated in its heading


def test_likely_duplicates_page_keeps_one_or_remembers_a_distinct_pair(admin_client, space, steward):
    for title in ["Add retry with backoff to the webhook sender", "Retry with backoff in the webhook sender",
                  "Translate the README into Spanish", "Spanish translation of the README",
                  "Upgrade PostgreSQL to 17"]:
        create_task(space=space, actor=steward.member, title=title)
    page = f"/admin/tasks/task/duplicates/{space.pk}/"
    response = admin_client.get(page)
    assert response.status_code == 200
    assert sorted((a.number, b.number) for a, b, _ in response.context["pairs"]) == [(1, 2), (3, 4)]
    assert "Keep #1" in response.content.decode() and "Not a duplicate" in response.content.decode()
    # Keep #1: task 2 is superseded by it, under the staff user's steward member
    response = admin_client.post(page, {"first": "1", "second": "2", "keep": "1"}, follow=True)
    assert "Task 2 is superseded by task 1." in messages_of(response)
    task = Task.objects.get(space=space, number=2)
    assert task.status == "superseded" and task.superseded_by.number == 1
    assert task.events.get(kind="superseded").actor.name == "admin:ada"
    # Not a duplicate: remembered, not shown again
    response = admin_client.post(page, {"first": "3", "second": "4", "distinct": "1"}, follow=True)
    assert "Tasks 3 and 4 are distinct work: not shown again." in messages_of(response)
    assert response.context["pairs"] == []
    # a refusal is shown in words
    response = admin_client.post(page, {"first": "1", "second": "2", "keep": "2"}, follow=True)
    assert any("superseded" in m for m in messages_of(response))


def test_likely_duplicates_page_takes_the_view_permission_and_acting_the_change_one(space, steward):
    from django.contrib.auth.models import Permission

    create_task(space=space, actor=steward.member, title="Add retry with backoff to the webhook sender")
    create_task(space=space, actor=steward.member, title="Retry with backoff in the webhook sender")
    page = f"/admin/tasks/task/duplicates/{space.pk}/"
    staff = User.objects.create_user("viewer", "viewer@example.com", "pw", is_staff=True)
    client = Client()
    client.login(username="viewer", password="pw")
    assert client.get(page).status_code == 403
    staff.user_permissions.set(Permission.objects.filter(codename="view_task"))
    response = client.get(page)
    assert response.status_code == 200 and "Keep #1" not in response.content.decode()
    assert client.post(page, {"first": "1", "second": "2", "keep": "1"}).status_code == 403
    assert Task.objects.get(space=space, number=2).status == "open"


def test_the_label_filter_offers_every_label_a_task_carried_and_reads_no_task(admin_client, space, steward):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from commands.unit import in_unit
    from spaces.services import create_space
    from tasks import services as task_services
    from tests.factories import member_with_key

    done = create_task(space=space, actor=steward.member, title="old work", labels=["legacy"])
    in_unit(lambda unit: task_services.update_task(task=done, actor=steward.member, labels=["legacy", "renamed"]))
    Task.objects.filter(pk=done.pk).update(status="done")  # a finished task's labels are offered too
    create_task(space=space, actor=steward.member, title="new work", labels=["db"])
    other = create_space(slug="other", name="Other")
    member, _ = member_with_key(other, "writer")
    create_task(space=other, actor=member, title="elsewhere", labels=["zeta"])

    def offered(query: str) -> list[str]:
        with CaptureQueriesContext(connection) as queries:
            response = admin_client.get(f"/admin/tasks/task/?{query}")
        filters = [spec for spec in response.context["cl"].filter_specs if spec.title == "label"]
        lookups = [lookup for lookup, _ in filters[0].lookup_choices]
        label_queries = [q["sql"] for q in queries if "spacelabel" in q["sql"]]
        assert label_queries and not any("tasks_task" in sql for sql in label_queries)
        return lookups

    assert offered(f"space__id__exact={space.pk}") == ["db", "legacy", "renamed"]
    assert offered("") == ["db", "legacy", "renamed", "zeta"]


def test_the_front_door_and_the_admin_index_link_each_board_for_staff(admin_client, space):
    home = admin_client.get("/").content.decode()
    assert f'href="/board/{space.slug}/"' in home
    index = admin_client.get("/admin/").content.decode()
    assert f'href="/board/{space.slug}/"' in index and "Boards" in index


def test_a_tasks_page_reads_as_a_record_not_a_form(admin_client, space, steward):
    """No Save buttons for fields none of which can change, the heading once, no internals of
    the similar-tasks index, and no inline that has nothing to show."""
    from tests.factories import create_task

    task = create_task(space=space, actor=steward.member, title="Rotate the signing keys")
    page = admin_client.get(f"/admin/tasks/task/{task.pk}/change/").content.decode()
    assert 'name="_save"' not in page and 'name="_continue"' not in page and 'name="_addanother"' not in page
    # <title>, breadcrumb, <h1> and the title field: no subtitle repeating the heading
    assert page.count("Rotate the signing keys") == 4 and "<h2>#1 Rotate" not in page
    assert "Title terms" not in page and "Search:" not in page
    assert "Claims" not in page and "Checks" not in page  # no claim, no check yet: no bare headers
    assert "history" in page.lower()  # the created event is there


def test_questions_and_messages_are_listed_and_changed_by_nobody(admin_client, space, steward, writer):
    """SPEC §21: the admin lists the space's questions (and proposals: the task list by status)."""
    from tasks.models import Message, Question

    create_task(space=space, actor=steward.member, title="Pick the queue library")
    writer.api.post("/v1/spaces/agent-lab/next", {})
    writer.api.post("/v1/spaces/agent-lab/tasks/1/questions", {"body": "Which broker?", "to": "stewards"})
    writer.api.post("/v1/spaces/agent-lab/tasks/1/messages", {"body": "Reading the docs now."})
    question, message = Question.objects.get(), Message.objects.get()
    listed = admin_client.get("/admin/tasks/question/", {"state": "open"}).content.decode()
    assert f">{question.pk}<" in listed and "writer" in listed
    page = admin_client.get(f"/admin/tasks/question/{question.pk}/change/").content.decode()
    assert "Which broker?" in page and 'name="_save"' not in page
    assert admin_client.get("/admin/tasks/message/").status_code == 200
    assert "Reading the docs now." in admin_client.get(f"/admin/tasks/message/{message.pk}/change/").content.decode()
    assert admin_client.post(f"/admin/tasks/question/{question.pk}/delete/", {"post": "yes"}).status_code == 403
    assert admin_client.get("/admin/tasks/task/", {"status__exact": "waiting"}).status_code == 200


def test_routines_are_listed_with_their_next_run_and_paused_through_the_commands(admin_client, space, steward):
    """SPEC §22: the admin lists routines with their schedule and next run; its Pause and Resume
    are the API's update command under the staff user's steward member (the page edits nothing)."""
    from tasks.models import Routine

    made = steward.api.post("/v1/spaces/agent-lab/routines",
                            {"title": "Audit the dependencies", "schedule": "0 9 * * 1"}).json()
    listed = admin_client.get("/admin/tasks/routine/")
    assert listed.status_code == 200 and "Audit the dependencies" in listed.content.decode()
    assert "0 9 * * 1" in listed.content.decode()
    response = action(admin_client, "tasks/routine", "pause", [made["id"]])
    assert response.status_code == 200 and messages_of(response) == ["Paused 1 routine(s)."]
    routine = Routine.objects.get()
    assert routine.enabled is False and routine.next_run_at is None
    action(admin_client, "tasks/routine", "resume", [made["id"]])
    assert Routine.objects.get().next_run_at is not None
    assert admin_client.post(f"/admin/tasks/routine/{made['id']}/change/", {"title": "x"}).status_code == 403
