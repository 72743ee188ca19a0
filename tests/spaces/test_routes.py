"""SPEC §2, §3.1: join links, members, keys, the space, the catalog and posts."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from allocation.catalog_index import catalog_index
from spaces.models import ApiKey, CharterItem, JoinLink, Member, Post, Space
from tasks.models import Task
from tests.conftest import ApiClient

S = "/v1/spaces/agent-lab"


def test_it_creates_a_join_link_and_joins_with_it(steward, anonymous):
    created = steward.api.post(f"{S}/join-links", {"role": "writer", "max_uses": 1})
    assert created.status_code == 201
    link = created.json()
    assert {"id", "link", "token"} <= link.keys()
    joined = anonymous.post("/v1/join", {"link": link["link"], "name": "newbie"})
    assert joined.status_code == 201
    body = joined.json()
    assert body["space"] == "agent-lab" and body["role"] == "writer" and body["member"]["name"] == "newbie"
    assert ApiClient(body["key"]).get(S).status_code == 200
    assert JoinLink.objects.get(pk=link["id"]).uses == 1


def test_a_bare_token_also_joins(steward, anonymous):
    token = steward.api.post(f"{S}/join-links", {"role": "reader"}).json()["token"]
    assert anonymous.post("/v1/join", {"link": token}).status_code == 201


@pytest.mark.parametrize("route", ["join", "create"])
@pytest.mark.parametrize("idempotency_key", ["", " ", "k" * 256, "k\x01", "k\tk", "\tk"])
def test_an_idempotency_key_is_checked_by_one_rule_on_every_route(steward, writer, anonymous, route, idempotency_key):
    """SPEC §7.1: 1 to 255 printable characters, the join's key as every other route's."""
    if route == "join":
        token = steward.api.post(f"{S}/join-links", {"role": "reader"}).json()["token"]
        refused = anonymous.post("/v1/join", {"link": token}, headers={"Idempotency-Key": idempotency_key})
    else:
        refused = writer.api.post(f"{S}/tasks", {"title": "Retry policy"}, headers={"Idempotency-Key": idempotency_key})
    assert refused.status_code == 422, refused.content
    assert refused.json()["fields"] == {"Idempotency-Key": ["1 to 255 printable characters."]}


def test_a_used_up_link_is_refused(steward, anonymous):
    token = steward.api.post(f"{S}/join-links", {"role": "reader", "max_uses": 1}).json()["token"]
    assert anonymous.post("/v1/join", {"link": token}).status_code == 201
    refused = anonymous.post("/v1/join", {"link": token})
    assert refused.status_code == 404 and refused.json()["error"] == "join_link_invalid"
    assert Member.objects.filter(role="reader").count() == 1  # only the first join made a member


def test_an_expired_or_deleted_link_is_refused(steward, anonymous):
    from spaces.models import JoinLink

    soon = (timezone.now() + timedelta(minutes=1)).isoformat()
    token = steward.api.post(f"{S}/join-links", {"role": "reader", "expires_at": soon}).json()["token"]
    JoinLink.objects.update(expires_at=timezone.now() - timedelta(seconds=1))  # the minute passed
    assert anonymous.post("/v1/join", {"link": token}).json()["error"] == "join_link_invalid"
    created = steward.api.post(f"{S}/join-links", {"role": "reader"}).json()
    assert steward.api.delete(f"{S}/join-links/{created['id']}").status_code == 204
    assert anonymous.post("/v1/join", {"link": created["token"]}).status_code == 404


def test_join_links_reject_unknown_roles(steward):
    response = steward.api.post(f"{S}/join-links", {"role": "admin"})
    assert response.status_code == 422 and "role" in response.json()["fields"]


def test_stewards_list_join_links(steward):
    steward.api.post(f"{S}/join-links", {"role": "writer"})
    assert len(steward.api.get(f"{S}/join-links").json()["results"]) == 1


def test_it_lists_members_with_their_keys(steward, writer):
    members = steward.api.get(f"{S}/members").json()["results"]
    assert {m["name"] for m in members} == {"steward", "writer"}
    assert all(len(m["keys"]) == 1 for m in members)


def test_a_role_change_bumps_the_key_generation(steward, writer):
    before = writer.member.api_keys.get().generation
    response = steward.api.patch(f"{S}/members/{writer.member.pk}", {"role": "reader"})
    assert response.status_code == 200 and response.json()["role"] == "reader"
    assert writer.member.api_keys.get().generation == before + 1
    assert writer.api.post(f"{S}/posts", {"body": "x"}).status_code == 403


def test_the_last_steward_cannot_be_demoted(steward):
    response = steward.api.patch(f"{S}/members/{steward.member.pk}", {"role": "writer"})
    assert response.status_code == 409 and response.json()["error"] == "last_steward"


def test_rotation_keeps_two_live_keys_and_raises_the_generation(steward, writer):
    first = writer.member.api_keys.get()
    second = writer.api.post(f"{S}/members/{writer.member.pk}/keys", {})
    assert second.status_code == 201
    assert second.json()["generation"] == first.generation + 1
    assert writer.api.get(S).status_code == 200  # the old key still works while rotating
    assert ApiClient(second.json()["key"]).get(S).status_code == 200
    third = steward.api.post(f"{S}/members/{writer.member.pk}/keys", {}).json()
    assert writer.api.get(S).status_code == 401  # the oldest went when a third was issued
    live = list(ApiKey.objects.filter(ApiKey.live(timezone.now()), member=writer.member))
    assert len(live) == 2 and third["prefix"] in {k.prefix for k in live}


def test_writers_cannot_issue_keys_for_others(writer, writer2):
    response = writer.api.post(f"{S}/members/{writer2.member.pk}/keys", {})
    assert response.status_code == 403


def test_members_revoke_only_their_own_keys(writer, writer2):
    prefix = writer2.member.api_keys.get().prefix
    assert writer.api.delete(f"/v1/keys/{prefix}").status_code == 404
    assert writer2.api.get(S).status_code == 200


def test_stewards_revoke_any_key_of_their_space(steward, writer, outsider):
    prefix = writer.member.api_keys.get().prefix
    assert outsider.api.delete(f"/v1/keys/{prefix}").status_code == 404
    assert steward.api.delete(f"/v1/keys/{prefix}").status_code == 204
    assert writer.api.get(S).status_code == 401


def test_it_reads_and_patches_the_space(steward, reader):
    assert reader.api.get(S).json()["task_claim_hours"] == 4
    response = steward.api.patch(S, {"task_claim_hours": 8, "confirmations_required": 0})
    assert response.status_code == 200
    space = Space.objects.get(slug="agent-lab")
    assert (space.task_claim_hours, space.confirmations_required) == (8, 0)


def test_space_settings_are_range_checked(steward):
    for body in [{"task_claim_hours": 0}, {"task_claim_hours": 25}, {"confirmations_required": -1},
                 {"max_claims_per_task": 4}]:
        response = steward.api.patch(S, body)
        assert response.status_code == 422, body


def test_the_catalog_is_listed_in_id_order(reader):
    rows = reader.api.get(f"{S}/charter").json()["results"]
    assert [r["work_item_id"] for r in rows] == ["T1", "T2", "T3"]


def test_charter_upsert_normalizes_the_id_and_refreshes_the_index(steward, space):
    before = catalog_index(space)
    created = steward.api.put(f"{S}/charter/t04", {"canonical_title": "Onboarding guide", "aliases": ["docs"]})
    assert created.status_code == 201 and created.json()["work_item_id"] == "T4"
    assert catalog_index(space) is not before and len(catalog_index(space)) == 4
    updated = steward.api.put(f"{S}/charter/T4", {"canonical_title": "Onboarding guide v2"})
    assert updated.status_code == 200
    assert CharterItem.objects.get(space=space, work_item_id="T4").canonical_title == "Onboarding guide v2"
    bind = steward.api.post(f"{S}/bind", {"title": "Onboarding guide v2"}).json()
    assert bind["work_item_id"] == "T4"


def test_charter_rows_are_validated(steward):
    assert steward.api.put(f"{S}/charter/X1", {"canonical_title": "x"}).json()["error"] == "catalog_invalid"
    assert steward.api.put(f"{S}/charter/T5", {"canonical_title": ""}).status_code == 422
    assert steward.api.put(f"{S}/charter/T5", {"canonical_title": "x", "aliases": ["a"] * 51}).status_code == 422


def test_charter_delete(steward, space):
    assert steward.api.delete(f"{S}/charter/T3").status_code == 204
    assert not CharterItem.objects.filter(space=space, work_item_id="T3").exists()
    assert steward.api.delete(f"{S}/charter/T3").status_code == 404


def test_posts_create_list_hide_withhold(writer, writer2, steward):
    post = writer.api.post(f"{S}/posts", {"title": "Result", "body": "It works"}).json()
    other = writer2.api.post(f"{S}/posts", {"body": "Mine"}).json()
    assert writer2.api.post(f"{S}/posts/{post['id']}/hide").status_code == 403
    assert writer.api.post(f"{S}/posts/{post['id']}/hide").json()["hidden"] is True
    assert [p["id"] for p in writer2.api.get(f"{S}/posts").json()["results"]] == [other["id"]]
    assert {p["id"] for p in writer.api.get(f"{S}/posts").json()["results"]} == {post["id"], other["id"]}
    assert steward.api.post(f"{S}/posts/{other['id']}/withhold").json()["withheld"] is True
    assert Post.objects.get(pk=other["id"]).withheld_by_id == steward.member.pk
    assert writer2.api.get(f"{S}/posts").json()["results"] == []


def test_reference_sections(anonymous):
    everything = anonymous.get("/v1/reference").json()
    assert {"refusals", "allocation", "tasks"} <= everything.keys()
    allocation = anonymous.get("/v1/reference?section=allocation").json()["allocation"]
    assert allocation["binding"]["threshold"] == "7/20" and allocation["binding"]["margin"] == "2/25"
    assert anonymous.get("/v1/reference?section=nope").status_code == 422


def test_schema_and_docs_are_served(anonymous):
    schema = anonymous.get("/v1/schema")
    assert schema.status_code == 200 and b"/v1/spaces/{slug}/tasks" in schema.content
    assert anonymous.get("/v1/docs").status_code == 200


def test_the_server_serves_its_own_static_files_and_the_docs_load_nothing_from_outside(anonymous):
    from django.test import Client

    browser = Client()
    assert browser.get("/static/admin/css/base.css").status_code == 200  # debug is off in the tests
    docs = browser.get("/v1/docs").content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in docs
    assert "cdn" not in docs.lower() and "https://" not in docs
    script = docs.split('src="')[1].split('"')[0]
    assert browser.get(script).status_code == 200


def test_the_root_and_v1_say_where_to_start(anonymous, space):
    """``/`` is a page for people (it redirected to JSON), saying where to go; the boards are
    listed for staff only. The site has an icon (it was a 404)."""
    home = anonymous.get("/")
    page = home.content.decode()
    assert home.status_code == 200 and home["Content-Type"].startswith("text/html")
    assert 'href="/v1/docs"' in page and 'href="/admin/"' in page and "/board/" not in page
    icon = anonymous.get("/favicon.ico")
    assert icon.status_code == 200 and icon["Content-Type"] == "image/svg+xml" and icon.content.startswith(b"<svg")
    index = anonymous.get("/v1/")
    assert index.status_code == 200 and index.json()["docs"] == "/v1/docs"
    assert anonymous.get("/v1/nope").status_code == 404  # unknown routes stay 404


def test_history_rows_name_themselves(space, writer):
    from tasks.models import TaskEvent
    from tests.factories import create_task

    create_task(space=space, actor=writer.member, title="Retry policy")
    assert str(TaskEvent.objects.get()) == "created"  # by its kind; the admin shows its time beside it, once


@pytest.mark.parametrize("method, path, body, unknown", [
    ("post", f"{S}/tasks", {"title": "Retry policy", "work_itme_id": "T2"}, "work_itme_id"),
    ("post", f"{S}/tasks", {"titel": "Retry policy"}, "titel"),
    ("post", f"{S}/tasks/window", {"proposals": [{"title": "Retry policy"}], "extra": 1}, "extra"),
    ("post", f"{S}/next", {"wait_for": 5}, "wait_for"),
    ("post", f"{S}/posts", {"body": "x", "id": 7}, "id"),
    ("post", f"{S}/bind", {"title": "Retry policy", "mode": "result"}, "mode"),
])
def test_an_unknown_body_field_is_422_naming_it_and_the_fields_the_route_takes(writer, method, path, body, unknown):
    """SPEC §3 strict input: a misspelt field must not quietly become a title-fallback create."""
    response = getattr(writer.api, method)(path, body)
    assert response.status_code == 422, response.content
    fields = response.json()["fields"]
    found = fields.get(unknown) or next(v for v in fields.values() if isinstance(v, (dict, list)) and unknown in str(v))
    assert "this route takes" in str(found)
    assert Task.objects.count() == 0


def test_a_window_proposal_with_an_unknown_field_is_answered_as_its_single_create(writer):
    response = writer.api.post(f"{S}/tasks/window", {"proposals": [{"title": "Retry policy", "labelz": ["x"]},
                                                                  {"title": "Write the onboarding guide"}]})
    assert response.status_code == 200
    first, second = response.json()["results"]
    assert first["status"] == 422 and "this route takes" in first["body"]["fields"]["labelz"][0]
    assert second["status"] == 201 and Task.objects.count() == 1


def test_an_expiry_already_past_is_422_for_a_key_and_a_join_link(steward, writer):
    past = (timezone.now() - timedelta(seconds=1)).isoformat()
    link = steward.api.post(f"{S}/join-links", {"role": "writer", "expires_at": past})
    assert link.status_code == 422 and "expires_at" in link.json()["fields"]
    key = steward.api.post(f"{S}/members/{writer.member.pk}/keys", {"expires_at": past})
    assert key.status_code == 422 and "expires_at" in key.json()["fields"]
    assert not JoinLink.objects.exists() and ApiKey.objects.filter(member=writer.member).count() == 1
    later = (timezone.now() + timedelta(hours=1)).isoformat()
    assert steward.api.post(f"{S}/join-links", {"role": "writer", "expires_at": later}).status_code == 201


@pytest.mark.parametrize("headers", [{}, {"Idempotency-Key": "dup"}])
def test_a_json_object_naming_a_member_twice_is_400_malformed_json(writer, headers):
    """SPEC §3: the last one does not quietly win."""
    response = writer.api.post(f"{S}/tasks", raw='{"title": "Retry policy", "title": "Other"}', headers=headers)
    assert response.status_code == 400 and response.json()["error"] == "malformed_json", response.content
    assert "twice" in response.json()["detail"]
    nested = writer.api.post(f"{S}/tasks/window", raw='{"proposals": [{"title": "a", "body": "x", "body": "y"}]}')
    assert nested.status_code == 400
    assert writer.api.post(f"{S}/tasks", raw='{"title": NaN}').status_code == 400
    assert Task.objects.count() == 0


def test_an_unknown_query_parameter_is_422_naming_it_and_what_the_route_takes(writer, steward, anonymous):
    """SPEC §3 strict input: ``?stauts=open`` is refused, never read as the unfiltered list."""
    S = "/v1/spaces/agent-lab"
    misspelt = writer.api.get(f"{S}/tasks?stauts=open")
    assert misspelt.status_code == 422
    message = misspelt.json()["fields"]["stauts"][0]
    assert "this route takes" in message and "status" in message and "label" in message
    known = writer.api.get(f"{S}/tasks?status=open&label=db&ready=true&order=next&limit=5&include_superseded=1")
    assert known.status_code == 200, known.content
    assert writer.api.get(f"{S}/tasks?status=open&cursor=bogus").json()["fields"].keys() == {"cursor"}
    assert writer.api.get("/v1/notifications?unread=true").status_code == 200
    assert writer.api.get("/v1/notifications?unreed=true").json()["fields"].keys() == {"unreed"}
    assert writer.api.get(f"{S}/tasks/1/history?verbose=1").status_code in (404, 422)  # no task 1: 404 first
    assert anonymous.get("/v1/reference?section=tasks").status_code == 200
    assert anonymous.get("/v1/reference?sectoin=tasks").status_code == 422
    refused = writer.api.post(f"{S}/next?wait=30")  # a POST takes its input in the body
    assert refused.status_code == 422 and "wait" in refused.json()["fields"]
    assert anonymous.get(f"{S}/tasks?stauts=open").status_code == 401  # who asks comes first


@pytest.mark.parametrize("query, field", [
    ("limit=abc", "limit"), ("limit=0", "limit"), ("limit=-1", "limit"), ("limit=1.5", "limit"),
    ("cursor=bogus", "cursor"),
    ("cursor=cD1hYmM%3D", "cursor"),  # "p=abc": a position the ordering column cannot hold
    ("cursor=cD05OTk5OTk5OTk5OTk5OTk5OTk5OTk5OQ%3D%3D", "cursor"),  # beyond a bigint
    ("q=retry&offset=x", "offset"), ("q=retry&offset=-3", "offset"), ("q=retry&limit=none", "limit"),
    ("offset=2", "offset"),  # a list paged by cursor
    ("q=retry&cursor=cD0x", "cursor"),  # a list paged by offset (the cursor says p=1)
    # base64 that decodes to nothing (DRF's decoding drops what is not of its alphabet), or to a
    # cursor no list writes that way: never the first page
    ("cursor=%25%25%25", "cursor"), ("cursor=%2525", "cursor"), ("cursor=!!!", "cursor"), ("cursor=====", "cursor"),
    ("cursor=", "cursor"), ("cursor=cD0x%20", "cursor"), ("cursor=cD0x!", "cursor"), ("cursor=cD0wMQ%3D%3D", "cursor"),
])
def test_paging_parameters_are_strict_input(writer, query, field):
    """SPEC §3: a paging value outside its type, or one that pages the other kind of list, is a
    422 naming it, never the first page read as if it had not been sent, and a cursor made up by
    hand is never a 500."""
    response = writer.api.get(f"{S}/tasks?{query}")
    assert response.status_code == 422, response.content[:300]
    assert response.json()["fields"].keys() == {field}
    if not query.startswith("q="):
        assert writer.api.get(f"{S}/charter?{query}").status_code == 422


@pytest.mark.parametrize("query, field", [
    ("include_superseded=2", "include_superseded"), ("include_superseded=maybe", "include_superseded"),
    ("work_item_id=zzz", "work_item_id"), ("work_item_id=T1234567890", "work_item_id"),
])
def test_a_filter_value_outside_its_type_is_422(writer, query, field):
    response = writer.api.get(f"{S}/tasks?{query}")
    assert response.status_code == 422 and response.json()["fields"].keys() == {field}


def test_the_slot_filter_takes_a_slot_id_as_every_input_does(writer, space):
    from urllib.parse import urlencode

    from tests.factories import create_task

    create_task(space=space, actor=writer.member, title="Retry policy", work_item_id="T2")
    for given in ("T2", "t2", " t002 "):
        found = writer.api.get(f"{S}/tasks?{urlencode({'work_item_id': given})}").json()
        assert [t["work_item_id"] for t in found["results"]] == ["T2"], given


def test_paging_takes_what_it_says(writer, space):
    from tests.factories import create_task

    for n in range(3):
        create_task(space=space, actor=writer.member, title=f"Retry policy {n}")
    first = writer.api.get(f"{S}/tasks?limit=2").json()
    assert [t["id"] for t in first["results"]] == [1, 2] and first["next"]
    rest = writer.api.get(first["next"].split("testserver")[-1]).json()
    assert [t["id"] for t in rest["results"]] == [3]
    assert len(writer.api.get(f"{S}/tasks?limit=1000").json()["results"]) == 3  # above the most: the most
    ranked = writer.api.get(f"{S}/tasks?q=retry&limit=1&offset=2").json()
    assert len(ranked["results"]) == 1


def test_every_mutating_route_refuses_a_body_field_it_does_not_take(steward, writer, space):
    """SPEC §3 strict input, on every route of the API that changes something, walked from the
    URL configuration (a new route is walked too): a field the route does not know is a 422
    naming it, routes that take no body included (``give-back``, ``heartbeat``, ``hide``,
    an export's ``retry``, the ``DELETE``s), and nothing is changed."""
    from django.urls import URLPattern

    from exports.services import request_export
    from webhooks.models import Delivery, Endpoint
    from settings.urls import API_ROUTES
    from spaces import services
    from tests.factories import create_task

    create_task(space=space, actor=writer.member, title="Retry policy")
    create_task(space=space, actor=writer.member, title="Write the onboarding guide")
    post = services.create_post(space=space, author=writer.member, body="a result")
    link, _ = services.create_join_link(space=space, actor=steward.member, role="writer")
    export = request_export(space=space, actor=steward.member, api_key=None)
    hook = Endpoint.objects.create(space=space, url="https://example.com/hook", secret="whsec_AAAA")
    delivery = Delivery.objects.create(space=space, endpoint=hook, event_id="evt_1", type="task.created", body="{}",
                                       state="failed", give_up_at=hook.created_at)
    values = {"slug": space.slug, "number": "1", "blocker": "2", "attempt": "1", "post_id": str(post.pk),
              "link_id": str(link.pk), "member_id": str(writer.member.pk), "prefix": writer.key.split("_")[1],
              "work_item_id": "T1", "export_id": str(export.pk), "token": "no-such-token",
              "webhook_id": str(hook.pk), "delivery_id": str(delivery.pk), "question": "1", "routine": "1"}
    def state() -> tuple:
        from tasks.models import TaskEvent

        return (TaskEvent.objects.count(), list(Endpoint.objects.values_list("types", "enabled", "secret")),
                Delivery.objects.filter(state="failed").count(), Post.objects.filter(hidden_at=None, withheld_at=None).count(),
                JoinLink.objects.count(), CharterItem.objects.count(), ApiKey.objects.filter(revoked_at=None).count(),
                list(Space.objects.values_list("name", "similar_threshold")))

    walked = []
    for pattern in API_ROUTES:
        assert isinstance(pattern, URLPattern)
        view = pattern.callback.view_class
        path = "/v1/" + str(pattern.pattern)
        for name, value in values.items():
            path = path.replace(f"<slug:{name}>", value).replace(f"<str:{name}>", value)
        assert "<" not in path, path
        for method in ("post", "put", "patch", "delete"):
            if not hasattr(view, method):
                continue
            before = state()
            response = steward.api.request(method.upper(), path, {"zzz_unknown": 1})
            assert response.status_code == 422, (method, path, response.status_code, response.content[:300])
            assert "zzz_unknown" in response.json()["fields"], (method, path, response.json())
            assert state() == before, (method, path)
            walked.append(f"{method} {path}")
    assert len(walked) >= 35, walked
    # A route that takes no body takes nothing, null or {} still.
    assert writer.api.request("POST", f"{S}/posts/{post.pk}/hide", None).status_code == 200
    assert steward.api.request("POST", f"{S}/posts/{post.pk}/withhold", {}).status_code == 200
    assert steward.api.post(f"{S}/tasks/1/give-back", [1]).status_code == 422


@pytest.mark.parametrize("route, body, field", [
    ("tasks", {"title": "Retry policy", "priority": "1"}, "priority"),
    ("tasks", {"title": "Retry policy", "priority": True}, "priority"),
    ("next", {"number": "3"}, "number"),
    ("next", {"join": "true"}, "join"),
    ("next", {"wait": "1"}, "wait"),
    ("", {"claim_lease_seconds": "10"}, "claim_lease_seconds"),
    ("", {"similar_threshold": "0.5"}, "similar_threshold"),
    ("tasks/1/blockers", {"task": "2"}, "task"),
])
def test_a_number_or_a_boolean_sent_as_a_string_is_422(steward, route, body, field):
    """SPEC §3: a number in a JSON body is a JSON number (``"priority": "1"`` is 422), a boolean a
    JSON boolean; DRF alone would read both."""
    path = f"{S}/{route}" if route else S
    response = steward.api.patch(path, body) if not route else steward.api.post(path, body)
    assert response.status_code == 422, response.content
    assert field in response.json()["fields"], response.content
