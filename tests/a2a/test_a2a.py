"""The A2A front (SPEC §18) in one process: the card, both bindings, the operations over the same
commands as REST, refusals as A2A errors carrying the REST problem body."""
from __future__ import annotations

import json
import uuid

import pytest

from tasks.models import Task, TaskStatus

pytestmark = pytest.mark.django_db(transaction=True)
A = "/a2a/agent-lab"
S = "/v1/spaces/agent-lab"


def rpc(persona, method: str, params: dict, *, version: str = "1.0"):
    """One JSON-RPC call; the response's JSON."""
    response = persona.api.post(A, {"jsonrpc": "2.0", "id": 7, "method": method, "params": params},
                                headers={"A2A-Version": version})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == 7
    return body


def message(text: str | None = None, *, data: dict | None = None, message_id: str | None = None,
            task_id: str | None = None) -> dict:
    parts = ([{"text": text}] if text is not None else []) + ([{"data": data}] if data is not None else [])
    sent = {"messageId": message_id or uuid.uuid4().hex, "role": "ROLE_USER", "parts": parts}
    if task_id:
        sent["taskId"] = task_id
    return {"message": sent}


def problem(error: dict) -> dict:
    """The REST problem body an A2A error carries (google.rpc.ErrorInfo's metadata)."""
    [info] = [d for d in error["data"] if d["@type"].endswith("ErrorInfo")]
    return info["metadata"]


def test_the_card_describes_the_space_to_anyone_and_an_unknown_space_is_404(anonymous, space):
    card = anonymous.get(f"{A}/.well-known/agent-card.json").json()
    assert card["name"] == space.name
    assert [i["protocolBinding"] for i in card["supportedInterfaces"]] == ["JSONRPC", "HTTP+JSON"]
    assert all(i["url"].endswith(A) and i["protocolVersion"] == "1.0" for i in card["supportedInterfaces"])
    assert card["capabilities"] == {"streaming": True, "pushNotifications": True, "extendedAgentCard": True}
    skills = {skill["id"]: skill for skill in card["skills"]}
    assert skills["T1"]["name"] == "Benchmark harness for code-review agents"
    assert skills["T1"]["examples"] == ["review agent benchmark", "code review evaluation suite"]
    assert "work" in skills
    [scheme] = card["securitySchemes"].values()
    assert scheme["httpAuthSecurityScheme"]["scheme"] == "bearer"
    assert anonymous.get("/a2a/nowhere/.well-known/agent-card.json").status_code == 404


def test_a_message_creates_a_task_once_and_a_paraphrase_of_catalogued_work_converges(writer, writer2):
    sent = message("Benchmark harness for code-review agents\nIt scores review comments.", message_id="m-1")
    first = rpc(writer, "SendMessage", sent)["result"]["task"]
    assert first["id"] == "1" and first["contextId"] == "agent-lab"
    assert first["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert first["metadata"]["spaces"]["outcome"] == "created"
    assert first["metadata"]["spaces"]["work_item_id"] == "T1"
    again = rpc(writer, "SendMessage", sent)["result"]["task"]  # a retry: the same task, nothing new
    assert again["id"] == "1" and again["metadata"]["spaces"]["replayed"] is True
    other = rpc(writer2, "SendMessage", message("code review evaluation suite"))["result"]["task"]
    assert other["id"] == "1" and other["metadata"]["spaces"]["outcome"] == "redirect"
    assert other["metadata"]["spaces"]["conflict_key"] == first["metadata"]["spaces"]["conflict_key"]
    assert Task.objects.count() == 1
    task = Task.objects.get()
    assert task.title == "Benchmark harness for code-review agents" and task.body == "It scores review comments."


def test_a_context_other_than_the_spaces_is_refused_and_nothing_is_written(writer):
    """A2A v1.0: a client's context the agent cannot take is refused, never answered in another."""
    sent = message("Write the onboarding guide")
    sent["message"]["contextId"] = "a-context-of-the-clients"
    error = rpc(writer, "SendMessage", sent)["error"]
    assert error["code"] == -32602 and "contextId" in problem(error)["fields"]
    assert not Task.objects.exists()
    sent["message"]["contextId"] = "agent-lab"  # the space's own: taken
    assert rpc(writer, "SendMessage", sent)["result"]["task"]["contextId"] == "agent-lab"


def test_the_same_message_over_the_other_binding_is_the_same_task(writer):
    sent = message("Write the onboarding guide", message_id="m-both")
    over_rpc = rpc(writer, "SendMessage", sent)["result"]["task"]
    over_rest = writer.api.post(f"{A}/message:send", sent, headers={"A2A-Version": "1.0"}).json()["task"]
    assert over_rpc["id"] == over_rest["id"] and Task.objects.count() == 1


def test_a_data_part_takes_integral_doubles_and_refuses_the_rest_as_rest_does(writer):
    created = rpc(writer, "SendMessage", message(data={"title": "Tune retries", "priority": 1.0,
                                                       "labels": ["infra"]}))["result"]["task"]
    assert created["metadata"]["spaces"]["priority"] == 1 and created["metadata"]["spaces"]["labels"] == ["infra"]
    refused = rpc(writer, "SendMessage", message(data={"title": "Half a priority", "priority": 1.5}))["error"]
    assert refused["code"] == -32602  # InvalidParams
    body = problem(refused)
    assert body["error"] == "invalid_request" and "priority" in body["fields"]
    unknown = problem(rpc(writer, "SendMessage", message(data={"title": "x", "prio": 1}))["error"])
    assert list(unknown["fields"]) == ["prio"]
    assert problem(rpc(writer, "SendMessage", message(""))["error"])["fields"] == {
        "title": ["The first line of the first text part, or a data part's title."]}


def test_get_list_and_a_note(writer, steward):
    rpc(writer, "SendMessage", message("First piece of work"))
    rpc(writer, "SendMessage", message("Second piece of work"))
    steward.api.post(f"{S}/tasks/2/assign", {"member": writer.member.pk})
    got = rpc(writer, "GetTask", {"id": "2"})["result"]
    assert got["status"]["state"] == "TASK_STATE_WORKING"
    assert [m["metadata"]["kind"] for m in got["history"]] == ["created", "assigned"]
    assert all(m["role"] == "ROLE_AGENT" for m in got["history"])
    working = rpc(writer, "ListTasks", {"status": "TASK_STATE_WORKING"})["result"]
    assert [t["id"] for t in working["tasks"]] == ["2"] and working["totalSize"] == 1
    page = rpc(writer, "ListTasks", {"pageSize": 1})["result"]  # the last changed first (A2A v1.0)
    assert [t["id"] for t in page["tasks"]] == ["2"] and page["nextPageToken"]
    rest = rpc(writer, "ListTasks", {"pageSize": 1, "pageToken": page["nextPageToken"]})["result"]
    assert [t["id"] for t in rest["tasks"]] == ["1"] and rest["nextPageToken"] == "" and rest["pageSize"] == 1
    none = rpc(writer, "ListTasks", {"status": "TASK_STATE_COMPLETED"})["result"]
    assert none == {"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0}  # required fields shown
    for bad in ({"pageToken": "2"}, {"pageToken": "9" * 18 + "-1"}, {"historyLength": -1}):
        assert rpc(writer, "ListTasks", bad)["error"]["code"] == -32602, bad
    assert rpc(writer, "GetTask", {"id": "1", "historyLength": -1})["error"]["code"] == -32602
    since = Task.objects.get(number=1).updated_at.isoformat().replace("+00:00", "Z")
    changed = rpc(writer, "ListTasks", {"statusTimestampAfter": since})["result"]
    assert [t["id"] for t in changed["tasks"]] == ["2"]  # assigned after task 1 last changed
    steward.api.post(f"{S}/tasks/1/assign", {"member": writer.member.pk})
    assert [t["id"] for t in rpc(writer, "ListTasks", {})["result"]["tasks"]] == ["1", "2"]
    noted = rpc(writer, "SendMessage", message("Started on it.", task_id="1"))["result"]["task"]
    assert noted["id"] == "1" and noted["metadata"]["spaces"]["outcome"] == "noted"
    assert writer.api.get(f"{S}/tasks/1/notes").json()["results"][0]["body"] == "Started on it."
    again = rpc(writer, "SendMessage", message("Started on it.", task_id="1"))["result"]["task"]  # a new message id
    assert again["metadata"]["spaces"]["outcome"] == "redirect"  # answered by the note already left
    assert again["metadata"]["spaces"]["note"] == noted["metadata"]["spaces"]["note"]
    assert len(writer.api.get(f"{S}/tasks/1/notes").json()["results"]) == 1
    missing = rpc(writer, "GetTask", {"id": "99"})["error"]
    assert missing["code"] == -32001 and problem(missing)["error"] == "not_found"


def test_cancel_is_withdraw_the_creators_or_a_stewards(writer, writer2, steward):
    rpc(writer, "SendMessage", message("Work to cancel"))
    refused = rpc(writer2, "CancelTask", {"id": "1"})["error"]
    assert problem(refused)["error"] == "not_task_creator"
    canceled = rpc(writer, "CancelTask", {"id": "1", "metadata": {"reason": "not needed"}})["result"]
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert Task.objects.get().status == TaskStatus.WITHDRAWN
    again = rpc(writer, "CancelTask", {"id": "1"})["error"]
    assert again["code"] == -32002  # TaskNotCancelable, with the REST refusal
    assert problem(again)["status"] == 409


def test_a_reader_may_look_but_not_send(reader, writer):
    rpc(writer, "SendMessage", message("Visible work"))
    assert rpc(reader, "GetTask", {"id": "1"})["result"]["id"] == "1"
    refused = rpc(reader, "SendMessage", message("Not allowed"))["error"]
    assert problem(refused)["error"] == "forbidden"


def test_protocol_errors(writer, anonymous, outsider):
    assert rpc(writer, "NoSuchMethod", {})["error"]["code"] == -32601
    assert rpc(writer, "GetTask", {"id": "1", "bogus": 1})["error"]["code"] == -32602
    assert rpc(writer, "GetTask", {"id": "1"}, version="0.3")["error"]["code"] == -32009
    raw = writer.api.post(A, raw=b"{not json")
    assert raw.json()["error"]["code"] == -32700
    assert writer.api.post(A, [1, 2]).json()["error"]["code"] == -32600
    assert anonymous.post(A, {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "1"}}).status_code == 401
    assert outsider.api.post(A, {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {}}).status_code == 404


def test_the_http_json_binding(writer, steward):
    headers = {"A2A-Version": "1.0"}
    task = writer.api.post(f"{A}/message:send", message("Over HTTP+JSON"), headers=headers).json()["task"]
    assert writer.api.get(f"{A}/tasks/{task['id']}", headers=headers).json()["id"] == task["id"]
    listed = writer.api.get(f"{A}/tasks?status=TASK_STATE_SUBMITTED&pageSize=10", headers=headers).json()
    assert [t["id"] for t in listed["tasks"]] == [task["id"]]
    unknown = writer.api.get(f"{A}/tasks?bogus=1", headers=headers)
    assert unknown.status_code == 400 and unknown.json()["error"]["status"] == "INVALID_ARGUMENT"
    missing = writer.api.get(f"{A}/tasks/99", headers=headers)
    assert missing.status_code == 404
    [info] = missing.json()["error"]["details"]
    assert info["reason"] == "TASK_NOT_FOUND" and info["metadata"]["error"] == "not_found"
    canceled = writer.api.post(f"{A}/tasks/{task['id']}:cancel", {}, headers=headers).json()
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    card = writer.api.get(f"{A}/extendedAgentCard", headers=headers).json()
    assert "writer" in card["description"]


def test_a_done_task_is_completed_with_the_accepted_post_as_its_artifact(writer, writer2, steward):
    rpc(writer, "SendMessage", message("Deliver a checked result"))
    worker = writer2
    assert worker.api.post(f"{S}/next", {}).status_code == 200
    post = worker.api.post(f"{S}/posts", {"body": "The result, in full."}).json()
    assert worker.api.post(f"{S}/tasks/1/done", {"post": post["id"]}).status_code in (200, 201)
    in_review = rpc(writer, "GetTask", {"id": "1", "historyLength": 0})["result"]
    assert in_review["status"]["state"] == "TASK_STATE_WORKING" and "history" not in in_review
    assert steward.api.post(f"{S}/tasks/1/attempts/1/confirm").status_code == 200
    done = rpc(writer, "GetTask", {"id": "1"})["result"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    [artifact] = done["artifacts"]
    assert artifact["parts"][0]["text"] == "The result, in full."


def test_a_superseded_task_shows_its_survivors_state(writer, steward):
    rpc(writer, "SendMessage", message("Speed up the nightly build"))
    rpc(writer, "SendMessage", message("Make nightly builds faster"))
    assert steward.api.post(f"{S}/tasks/2/supersede", {"surviving_task": 1}).status_code == 200
    steward.api.post(f"{S}/tasks/1/withdraw", {})
    shown = rpc(writer, "GetTask", {"id": "2"})["result"]
    assert shown["status"]["state"] == "TASK_STATE_CANCELED"
    assert shown["metadata"]["spaces"]["superseded_by"] == 1 and shown["metadata"]["spaces"]["status"] == "superseded"


def test_a_push_config_is_the_requesters_and_its_url_is_checked(writer, writer2, settings):
    rpc(writer, "SendMessage", message("Work to follow"))
    refused = rpc(writer, "CreateTaskPushNotificationConfig",
                  {"taskId": "1", "url": "http://127.0.0.1:9/hook"})["error"]
    assert problem(refused)["fields"]["url"]
    settings.SPACES_WEBHOOK_ALLOW_HTTP = settings.SPACES_WEBHOOK_ALLOW_PRIVATE = True
    made = rpc(writer, "CreateTaskPushNotificationConfig",
               {"taskId": "1", "id": "mine", "url": "http://127.0.0.1:9/hook", "token": "t0k",
                "authentication": {"scheme": "Bearer", "credentials": "secret"}})["result"]
    assert made == {"id": "mine", "taskId": "1", "url": "http://127.0.0.1:9/hook", "token": "t0k",
                    "authentication": {"scheme": "Bearer"}}
    assert rpc(writer, "GetTaskPushNotificationConfig", {"taskId": "1", "id": "mine"})["result"]["id"] == "mine"
    assert rpc(writer2, "ListTaskPushNotificationConfigs", {"taskId": "1"})["result"] == {}  # not theirs
    assert problem(rpc(writer2, "GetTaskPushNotificationConfig", {"taskId": "1", "id": "mine"})["error"])[
        "error"] == "not_found"
    assert rpc(writer, "DeleteTaskPushNotificationConfig", {"taskId": "1", "id": "mine"})["result"] == {}
    assert rpc(writer, "ListTaskPushNotificationConfigs", {"taskId": "1"})["result"] == {}
    assert problem(rpc(writer, "CreateTaskPushNotificationConfig",
                       {"taskId": "9", "url": "http://127.0.0.1:9/hook"})["error"])["error"] == "not_found"


def test_json_rpc_answers_are_json(writer):
    response = writer.api.post(A, {"jsonrpc": "2.0", "id": "x", "method": "ListTasks", "params": {}})
    assert response["Content-Type"] == "application/json" and json.loads(response.content)["id"] == "x"


def test_a_streamed_send_opens_with_the_task_then_its_updates(writer, monkeypatch):
    from events import feed

    monkeypatch.setattr(feed, "STREAM_SECONDS", 60.0)  # a bound: the test reads until what it waits for came
    monkeypatch.setattr(feed, "KEEPALIVE_SECONDS", 0.3)
    response = writer.api.post(A, {"jsonrpc": "2.0", "id": 3, "method": "SendStreamingMessage",
                                   "params": message("Streamed work")}, headers={"A2A-Version": "1.0"})
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    read, blocks, updates = "", [], []
    for chunk in response.streaming_content:  # until two updates and a keep-alive came, however slowly
        read += chunk.decode()
        *whole, read = read.split("\n\n")
        blocks += [block for block in whole if block]
        updates += [json.loads(block[len("data: "):]) for block in whole if block.startswith("data: ")]
        if len(updates) >= 2 and ": keep-alive" in blocks:
            break
    response.close()
    assert updates[0]["id"] == 3 and updates[0]["result"]["task"]["id"] == "1"
    assert updates[1]["result"]["statusUpdate"]["metadata"]["spaces"]["event"] == "task.created"
    assert ": keep-alive" in blocks
    refused = writer.api.post(A, {"jsonrpc": "2.0", "id": 4, "method": "SendStreamingMessage",
                                  "params": message("")}, headers={"A2A-Version": "1.0"})
    assert refused["Content-Type"] == "application/json" and refused.json()["error"]["code"] == -32602


def test_the_reference_describes_the_a2a_front_from_its_code(anonymous, writer):
    section = anonymous.get("/v1/reference?section=a2a").json()["a2a"]
    from fronts.a2a.views import OPERATIONS

    assert section["operations"] == sorted(OPERATIONS)
    assert "/a2a/{slug}/tasks/{id}:cancel" in section["http_json_routes"]
    assert section["states"]["in_review"] == "TASK_STATE_WORKING"
    card = anonymous.get(f"{A}/.well-known/agent-card.json").json()
    assert card["documentationUrl"].endswith("/v1/reference?section=a2a")


def test_a_push_config_sent_with_the_message_is_registered_once_for_its_task(writer, settings):
    from webhooks.models import Endpoint

    settings.SPACES_WEBHOOK_ALLOW_HTTP = settings.SPACES_WEBHOOK_ALLOW_PRIVATE = True
    sent = {**message("Work pushed to me", message_id="m-push"),
            "configuration": {"taskPushNotificationConfig": {"url": "http://127.0.0.1:9/hook", "token": "t"}}}
    assert rpc(writer, "SendMessage", sent)["result"]["task"]["id"] == "1"
    assert rpc(writer, "SendMessage", sent)["result"]["task"]["metadata"]["spaces"]["replayed"] is True
    [endpoint] = Endpoint.objects.all()
    assert (endpoint.task_number, endpoint.push_id, endpoint.format) == (1, "message-m-push", "a2a")
    listed = rpc(writer, "ListTaskPushNotificationConfigs", {"taskId": "1"})["result"]["configs"]
    assert [config["id"] for config in listed] == ["message-m-push"]


@pytest.mark.parametrize("config, field", [
    ({"url": "https://[64:ff9b::7f00:1]/hook"}, "url"),
    ({"url": "https://8.8.8.8/hook", "token": "line\r\nX-Injected: 1"}, "token"),
    ({"url": "https://8.8.8.8/hook", "token": "tökén"}, "token"),
    ({"url": "https://8.8.8.8/hook", "authentication": {"scheme": "Bearer", "credentials": "a\nb"}},
     "authentication"),
])
def test_a_message_with_a_push_config_that_could_never_be_sent_creates_nothing(writer, config, field):
    sent = {**message("Never created: its push config is refused"), "configuration": {
        "taskPushNotificationConfig": config}}
    error = rpc(writer, "SendMessage", sent)["error"]
    assert error["code"] == -32602 and field in problem(error)["fields"]
    assert not Task.objects.exists()


def test_a_bad_filter_or_field_is_refused_in_words(writer):
    """``?status=nope`` is refused as REST refuses a bad filter, never read as no filter, and a
    field of the wrong type says which field and what it takes, not Python's exception."""
    rpc(writer, "SendMessage", message("Listed work"))
    for query, words in [("status=nope", "Bad status 'nope': must be one of TASK_STATE_SUBMITTED"),
                         ("pageSize=abc", "Bad pageSize: must be an integer."),
                         ("historyLength=x", "Bad historyLength: must be an integer.")]:
        response = writer.api.get(f"{A}/tasks?{query}")
        assert response.status_code == 400, (query, response.content)
        assert response.json()["error"]["message"].startswith(words), response.content
    assert len(writer.api.get(f"{A}/tasks?status=TASK_STATE_SUBMITTED").json()["tasks"]) == 1
    for params, words in [({"id": 5}, "Bad id: must be a string."),
                          ({"message": {"messageId": "m", "role": "ROLE_USER", "parts": 5}},
                           "Bad message.parts: must be a list of "),
                          ({"status": "NOPE"}, "Bad status: must be one of TASK_STATE_SUBMITTED")]:
        method = "ListTasks" if "status" in params else "GetTask" if "id" in params else "SendMessage"
        error = rpc(writer, method, params)["error"]
        assert error["code"] == -32602 and error["message"].startswith(words), error
        assert "not iterable" not in error["message"] and "literal" not in error["message"]


def test_the_base_url_serves_with_and_without_its_trailing_slash(writer, anonymous):
    """A client resolving the card against ``…/agent-lab/`` (URL rules drop a last segment that has
    no slash) calls JSON-RPC there too."""
    assert anonymous.get(f"{A}/.well-known/agent-card.json").status_code == 200
    response = writer.api.post(f"{A}/", {"jsonrpc": "2.0", "id": 7, "method": "SendMessage",
                                         "params": message("Sent to the slashed base")},
                               headers={"A2A-Version": "1.0"})
    assert response.status_code == 200 and response.json()["result"]["task"]["id"] == "1"


def test_a_parked_task_is_submitted_work_waiting_to_go_back_in_the_queue(writer, steward, space):
    """SPEC §22 on A2A: a parked task is TASK_STATE_SUBMITTED (not ended, not worked on)."""
    from spaces.models import Space
    from tests.factories import create_task

    create_task(space=space, actor=steward.member, title="Flaky migration")
    Space.objects.filter(pk=space.pk).update(max_cycles=1)
    writer.api.post(f"{S}/next")
    writer.api.post(f"{S}/tasks/1/give-back")
    assert Task.objects.get(number=1).status == TaskStatus.PARKED
    assert rpc(writer, "GetTask", {"id": "1"})["result"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    submitted = rpc(writer, "ListTasks", {"status": "TASK_STATE_SUBMITTED"})["result"]
    assert [t["id"] for t in submitted["tasks"]] == ["1"]  # listed by the state it shows
