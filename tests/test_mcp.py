"""The MCP front with the official `mcp` SDK (2.x) client over streamable HTTP against a live server."""
from __future__ import annotations

import json

import anyio
import pytest

from tasks.models import Task
from tests.conftest import load_agent_lab
from tests.factories import SpaceFactory, create_task, member_with_key
from tests.live_server import gunicorn

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def connected(base: str, key: str):
    """The SDK 2.x client's streams to /mcp, with the member's key on an httpx2 client of our own."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(30, read=90))
    return http, streamable_http_client(f"{base}/mcp", http_client=http)


async def session_calls(base: str, key: str, calls: list[tuple[str, dict]]):
    from mcp import ClientSession

    results = []
    http, streams = connected(base, key)
    async with http, streams as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                text = result.content[0].text if result.content else ""
                # Every answer is structured, and its text is the same JSON (SPEC §10).
                assert result.structured_content == json.loads(text), (name, text)
                results.append((result.is_error, text))
    return tools, results


def run(base, key, calls):
    return anyio.run(session_calls, base, key, calls)


def test_tools_flow_and_refusals():
    space = load_agent_lab()
    _, writer = member_with_key(space, "writer", "agent-1")
    _, checker = member_with_key(space, "writer", "agent-2")
    _, stranger = member_with_key(SpaceFactory(slug="elsewhere"), "steward", "stranger")
    with gunicorn(workers=2) as base:
        tools, results = run(base, writer, [
            ("create_task", {"title": "Build a benchmark for code review agents"}),
            ("create_task", {"title": "review agent benchmark"}),
            ("next_task", {}),
            ("create_post", {"body": "It runs."}),
        ])
        by_name = {t.name: t for t in tools.tools}
        assert {"create_task", "next_task", "mark_done", "confirm_attempt", "bind_title"} <= set(by_name)
        assert "title" in by_name["create_task"].input_schema["properties"] and by_name["create_task"].description
        assert all(t.input_schema["additionalProperties"] is False for t in tools.tools)  # strict input, said
        assert all(t.output_schema and t.output_schema["type"] == "object" and t.output_schema["properties"]
                   for t in tools.tools)  # SPEC §23: each names its fields
        (e1, created), (e2, conflict), (e3, claimed), (e4, post) = results
        assert not e1 and json.loads(created)["work_item_id"] == "T1"
        assert e2
        refusal = json.loads(conflict[conflict.index("{"):])
        assert refusal["code"] == "conflict_key_occupied" and refusal["winner"] == {"type": "task", "id": 1,
                                                                                     "status": "open"}
        assert not e3 and json.loads(claimed)["task"]["id"] == 1
        post_id = json.loads(post)["id"]
        _, results = run(base, writer, [("mark_done", {"number": 1, "post": post_id})])
        assert json.loads(results[0][1])["attempt"]["state"] == "waiting"  # {task, attempt}, as REST answers
        _, results = run(base, checker, [("confirm_attempt", {"number": 1, "attempt": 1})])
        assert json.loads(results[0][1])["attempt"]["state"] == "accepted"
        _, results = run(base, writer, [("notifications", {})])
        assert [n["kind"] for n in json.loads(results[0][1])["notifications"]] == ["attempt_accepted"]
        _, results = run(base, stranger, [("list_tasks", {}), ("get_task", {"number": 1})])
        assert json.loads(results[0][1]) == {"tasks": []}  # another space's key sees nothing
        assert results[1][0] and json.loads(results[1][1][results[1][1].index("{"):])["error"] == "not_found"
    assert Task.objects.get().status == "done"


def test_create_tasks_and_an_idempotent_retry():
    space = load_agent_lab()
    _, writer = member_with_key(space, "writer", "agent-1")
    with gunicorn(workers=2) as base:
        _, results = run(base, writer, [
            ("create_tasks", {"proposals": [{"title": "Benchmark harness for code-review agents"},
                                            {"title": "review agent benchmark"},
                                            {"title": "Retry and backoff policy for tool calls"}]}),
            ("create_task", {"title": "Write the onboarding guide", "idempotency_key": "k-1"}),
            ("create_task", {"title": "Write the onboarding guide", "idempotency_key": "k-1"}),
            ("create_task", {"title": "Another title", "idempotency_key": "k-1"}),
        ])
    window = json.loads(results[0][1])["results"]
    assert [r["status"] for r in window] == [201, 409, 201]
    first, again, reused = results[1:]
    assert not first[0] and not again[0] and json.loads(first[1]) == json.loads(again[1])  # replayed, not redone
    assert reused[0] and "idempotency_key_reused" in reused[1]
    assert Task.objects.count() == 3


async def listings(base: str, keys: dict[str, str]) -> dict[str, tuple[set[str], int, object]]:
    """Each key's tools/list: the names, the bytes of the result as sent, the result."""
    from mcp import ClientSession

    found = {}
    for role, key in keys.items():
        http, streams = connected(base, key)
        async with http, streams as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
        size = len(tools.model_dump_json(by_alias=True, exclude_none=True))
        found[role] = ({t.name for t in tools.tools}, size, tools)
    return found


def test_a_keys_tool_list_is_what_its_role_may_call_in_under_15_kb_for_a_writer():
    """What an agent's context pays for on every connection (issue: 19.7 KB for every key): a
    reader is shown reads, a writer no steward's tools, in at most 15 KB (SPEC §23's annotations and named
    output fields included); a tool not shown is still
    refused as over REST (403), and every schema says its arguments without pydantic's titles."""
    from commands.base import COMMANDS

    space = load_agent_lab()
    keys = {role: member_with_key(space, role, f"a-{role}")[1] for role in ("reader", "writer", "steward")}
    with gunicorn(workers=1) as base:
        found = anyio.run(listings, base, keys)
        _, refused = run(base, keys["writer"], [("supersede_task", {"number": 1, "surviving_task": 2})])
    (readers, _, _), (writers, writer_bytes, _), (stewards, _, listed) = found["reader"], found["writer"], found["steward"]
    steward_only = {name for name, command in COMMANDS.items() if command.role == "steward"} & stewards
    assert steward_only >= {"supersede_task", "assign_task", "reject_task", "hold_slot", "release_slot"}
    assert readers < writers < stewards and not steward_only & writers
    # A proposal's decision (SPEC §21) is listed to stewards, and to a member a proposal names approver;
    # an answer to stewards, and to a member a question is addressed to.
    assert stewards - writers == steward_only | {"approve_task", "refuse_task", "answer"}
    assert {"create_task", "next_task", "mark_done"} & readers == set() and {"get_task", "events"} <= readers
    assert writer_bytes <= 15 * 1024, writer_bytes  # SPEC §23: annotations about 1.5 KB, output fields 3.4 KB
    hints = {tool.name: tool.annotations for tool in listed.tools}
    assert hints["get_task"].read_only_hint and hints["events"].read_only_hint
    assert hints["create_task"].destructive_hint is False and hints["create_task"].idempotent_hint
    assert hints["withdraw_task"].destructive_hint and hints["supersede_task"].destructive_hint
    assert refused[0][0] and json.loads(refused[0][1])["error"] == "forbidden"
    for tool in listed.tools:
        assert "title" not in tool.input_schema and all(
            "title" not in prop and "anyOf" not in prop for prop in tool.input_schema["properties"].values()), tool.name
        if COMMANDS.get(tool.name) is not None and COMMANDS[tool.name].mutates:
            assert "idempotency_key" in tool.input_schema["properties"], tool.name


def test_every_mutating_tool_takes_an_idempotency_key_and_a_retry_replays():
    from tasks.models import Claim

    space = load_agent_lab()
    member, writer = member_with_key(space, "writer", "agent-1")
    create_task(space=space, actor=member, title="Retry policy")
    create_task(space=space, actor=member, title="Write the onboarding guide")
    with gunicorn(workers=2) as base:
        tools, results = run(base, writer, [
            ("next_task", {"idempotency_key": "n-1"}),
            ("next_task", {"idempotency_key": "n-1"}),
            ("give_back", {"number": 1, "idempotency_key": "g-1"}),
            ("give_back", {"number": 1, "idempotency_key": "g-1"}),
        ])
    mutating = {"create_task", "create_tasks", "next_task", "give_back", "create_post", "mark_done", "confirm_attempt",
                "reject_attempt", "add_note", "supersede_task", "hold_slot", "release_slot", "update_task", "add_blocker",
                "remove_blocker"}
    for tool in tools.tools:
        if tool.name in mutating:
            assert "idempotency_key" in tool.input_schema["properties"], tool.name
    (claimed, replayed), (given, given_again) = results[:2], results[2:]
    assert not claimed[0] and json.loads(claimed[1]) == json.loads(replayed[1])
    assert json.loads(claimed[1])["task"]["number"] == 1
    assert not given[0] and json.loads(given[1]) == json.loads(given_again[1])
    assert Claim.objects.count() == 1  # one claim, given back once


def test_tools_validate_as_the_rest_routes_do_and_store_nothing_past_a_limit():
    from spaces.models import Post
    from tasks.models import Note

    space = load_agent_lab()
    member, writer = member_with_key(space, "writer", "agent-1")
    create_task(space=space, actor=member, title="Retry policy")
    with gunicorn(workers=1) as base:
        _, results = run(base, writer, [
            ("create_task", {"title": "x" * 501}),
            ("create_task", {"title": "big", "body": "b" * 100 * 1024}),
            ("create_post", {"body": "p" * 200 * 1024}),
            ("add_note", {"number": 1, "body": "n", "criterion": 2 ** 40}),
            ("next_task", {"kind": "nonsense"}),
            # SPEC §3 strict input: a misspelt argument is refused, never a title-fallback create
            ("create_task", {"title": "Retry and backoff", "work_itme_id": "T2"}),
            ("give_back", {"number": 1, "reason": "done for today"}),
            ("create_task", {"title": 5}),  # the wrong type: the same refusal, naming it
        ])
    for is_error, text in results:  # an error result whose content is the REST refusal, exactly
        assert is_error and json.loads(text)["error"] == "invalid_request", text
    misspelt, extra, wrong_type = (json.loads(text)["fields"] for _, text in results[-3:])
    assert list(misspelt) == ["work_itme_id"] and "work_item_id" in misspelt["work_itme_id"][0]
    assert list(extra) == ["reason"] and list(wrong_type) == ["title"]
    assert Task.objects.count() == 1 and not Post.objects.exists() and not Note.objects.exists()


def test_the_work_graph_through_tools():
    space = load_agent_lab()
    _, writer = member_with_key(space, "writer", "agent-1")
    with gunicorn(workers=2) as base:
        _, results = run(base, writer, [
            ("create_task", {"title": "schema change", "labels": ["db"]}),
            ("create_task", {"title": "migration", "priority": 0, "labels": ["DB"], "blocked_by": [1]}),
            ("create_task", {"title": "docs", "priority": 1}),
            ("list_tasks", {"ready": True}),
            ("add_blocker", {"number": 1, "blocker": 2}),
            ("next_task", {"labels": ["db"]}),
            ("update_task", {"number": 3, "priority": 4, "labels": ["docs"]}),
            ("list_tasks", {"q": "migration"}),
            ("remove_blocker", {"number": 2, "blocker": 1}),
            ("next_task", {}),
        ])
    answers = [json.loads(text[text.index("{"):]) for _, text in results]
    assert answers[1]["blocked_by"] == [1] and answers[1]["labels"] == ["db"] and not answers[1]["ready"]
    assert [t["number"] for t in answers[3]["tasks"]] == [1, 3]
    assert results[4][0] and answers[4]["error"] == "dependency_cycle" and answers[4]["cycle"] == [1, 2, 1]
    assert answers[5]["task"]["number"] == 1  # the db task that is ready; 2 waits on it
    assert (answers[6]["priority"], answers[6]["labels"]) == (4, ["docs"])
    assert [t["number"] for t in answers[7]["tasks"]] == [2]
    assert not results[8][0] and answers[8]["blocked_by"] == []
    assert answers[9]["task"]["number"] == 2  # priority 0 now ready, before 3 (priority 4)


def test_next_task_waits_for_work_and_heartbeat_renews_the_claim():
    """SPEC §15 over MCP: next_task with wait answers once a task is made ready; heartbeat renews."""
    import threading
    import time

    from django.db import connection

    space = load_agent_lab()
    steward, _ = member_with_key(space, "steward", "steward")
    _, writer = member_with_key(space, "writer", "agent-1")

    def make_later():
        time.sleep(2)
        create_task(space=space, actor=steward, title="Retry policy")
        connection.close()

    with gunicorn(workers=2) as base:
        maker = threading.Thread(target=make_later)
        maker.start()
        started = time.monotonic()
        _, results = run(base, writer, [("next_task", {"wait": 30}), ("heartbeat", {"number": 1}),
                                        ("heartbeat", {"number": 99})])
        maker.join()
    (e1, claimed), (e2, beat), (e3, missing) = results
    assert not e1 and json.loads(claimed)["task"]["id"] == 1 and time.monotonic() - started < 25
    assert not e2 and json.loads(beat)["claim"]["last_heartbeat_at"]
    assert e3 and json.loads(missing[missing.index("{"):])["error"] == "not_found"


def test_the_server_names_itself_and_the_projects_version():
    from importlib.metadata import version

    from mcp import ClientSession

    space = load_agent_lab()
    _, key = member_with_key(space, "reader", "reader")

    async def handshake(base: str):
        http, streams = connected(base, key)
        async with http, streams as (r, w):
            async with ClientSession(r, w) as session:
                return await session.initialize()

    with gunicorn(workers=1) as base:
        result = anyio.run(handshake, base)
    assert result.server_info.name == "spaces" and result.server_info.version == version("spaces-service")


def test_similar_tasks_over_mcp():
    """SPEC §16 over MCP: similar_tasks and bind_title answer `similar`; create_task answers it,
    and with if_similar="refuse" is refused as REST refuses it."""
    space = load_agent_lab()
    _, writer = member_with_key(space, "writer", "agent-1")
    with gunicorn(workers=1) as base:
        _, results = run(base, writer, [
            ("create_task", {"title": "Add retry with backoff to the webhook sender"}),
            ("similar_tasks", {"title": "Retry with backoff in the webhook sender"}),
            ("bind_title", {"title": "Retry with backoff in the webhook sender"}),
            ("create_task", {"title": "Retry with backoff in the webhook sender", "if_similar": "refuse"}),
            ("create_task", {"title": "Retry with backoff in the webhook sender"}),
        ])
    (e1, created), (e2, similar), (e3, bound), (e4, refused), (e5, second) = results
    assert not e1 and json.loads(created)["similar"] == []
    assert not e2 and [s["id"] for s in json.loads(similar)["similar"]] == [1]
    assert not e3 and json.loads(bound)["similar"] == json.loads(similar)["similar"]
    assert e4 and json.loads(refused[refused.index("{"):])["code"] == "similar_task_exists"
    assert not e5 and json.loads(second)["id"] == 2 and json.loads(second)["similar"][0]["id"] == 1


def test_the_docs_python_quickstart_runs_as_written(tmp_path):
    """docs/api.md's SDK 2.x quickstart, run as a user would paste it (the server and key swapped
    in), twice, in a virtual environment that holds only what the docs say to install (the
    project's own has more: httpx, which SDK 2.3 no longer brings, let a broken example pass)."""
    import re
    import shlex
    import subprocess
    import sys
    from pathlib import Path

    docs = (Path(__file__).resolve().parent.parent / "docs" / "api.md").read_text()
    section = re.search(r"\*\*The Python SDK 2\.x\*\* \(`(pip install [^`]+)`.*?```python\n(.*?)```", docs, re.S)
    install, block = shlex.split(section.group(1)), section.group(2)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", *install, "-q", "--disable-pip-version-check"],
                               capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-2000:]
    space = load_agent_lab()
    _, key = member_with_key(space, "writer", "agent-1")
    with gunicorn(workers=1) as base:
        script = block.replace("http://127.0.0.1:8000", base).replace("sk_…", key)
        runs = [subprocess.run([str(venv / "bin" / "python"), "-c", script], capture_output=True, text=True,
                               timeout=120) for _ in range(2)]
    assert [run.returncode for run in runs] == [0, 0], [run.stderr for run in runs]
    assert runs[0].stdout.splitlines()[0] == "task 1" and "Write the release notes" in runs[0].stdout
    assert "Task 1 already holds this work" in runs[1].stdout  # the same work again: the 409 naming the task that holds it


@pytest.mark.parametrize("method, accept", [("GET", "*/*"), ("GET", "text/event-stream"),
                                            ("GET", "application/json, text/event-stream"), ("DELETE", "*/*")])
def test_any_request_to_mcp_answers_at_once(method, accept):
    """A GET with curl's Accept: */* never answered (a stream the SDK opened and never ended);
    the stateless server opens no stream and ends no session: 405 at once, and the SDK's client
    still works (it ends with a DELETE)."""
    import time

    import httpx

    space = load_agent_lab()
    _, key = member_with_key(space, "writer", "agent-1")
    with gunicorn(workers=1) as base:
        started = time.monotonic()
        response = httpx.request(method, f"{base}/mcp", headers={"Authorization": f"Bearer {key}", "Accept": accept},
                                 timeout=10)
        assert time.monotonic() - started < 1
        assert response.status_code == 405 and response.json()["error"] == "method_not_allowed"
        assert "POST" in response.headers["Allow"]
        _, results = run(base, key, [("list_tasks", {})])
        assert results[0][0] is False


def test_the_feed_over_mcp_answers_as_rest_does():
    """SPEC §17: the events tool reads the feed by the same rules as GET …/events."""
    space = load_agent_lab()
    _, writer = member_with_key(space, "writer", "agent-1")
    with gunicorn(workers=1) as base:
        _, results = run(base, writer, [
            ("create_task", {"title": "Follow the feed"}),
            ("events", {"types": ["task.created"]}),
            ("events", {"after": 10**6}),
            ("events", {"limit": 0}),
        ])
    (_, _), (e1, found), (e2, later), (e3, refused) = results
    assert not e1 and [(e["type"], e["task"]) for e in json.loads(found)["events"]] == [("task.created", 1)]
    assert not e2 and json.loads(later) == {"events": [], "next": 10**6}
    assert e3 and json.loads(refused[refused.index("{"):])["error"] == "invalid_request"


def test_a_writer_is_listed_the_decisions_that_wait_on_it():
    """SPEC §21: approve_task and refuse_task are listed to a member a proposal names approver, and
    answer to a member an open question is addressed to; before that a writer's list leaves them out."""
    from tasks.questions import ask

    space = load_agent_lab()
    steward, _ = member_with_key(space, "steward", "lead")
    asker, _ = member_with_key(space, "writer", "asker")
    member, key = member_with_key(space, "writer", "decider")
    with gunicorn(workers=1) as base:
        before = anyio.run(listings, base, {"writer": key})["writer"][0]
        create_task(space=space, actor=asker, title="Rotate the signing keys", approval=True, approver=member.pk)
        task = create_task(space=space, actor=asker, title="Pick the queue library")
        ask(task=task, asker=asker, body="Which one?", to=member.pk)
        after = anyio.run(listings, base, {"writer": key})["writer"][0]
    assert not before & {"approve_task", "refuse_task", "answer"}
    assert after - before == {"approve_task", "refuse_task", "answer"}


def test_the_reads_that_are_no_command_answer_the_fields_their_schemas_name():
    """SPEC §23: space_info, reference, list_tasks, events and notifications (the commands' tools are
    held to their schemas by tests/test_every_command_alike.py)."""
    from fronts.mcp.outputs import OUTPUTS

    space = load_agent_lab()
    _, writer = member_with_key(space, "writer", "agent-1")
    calls = [("create_task", {"title": "Something to list"}), ("space_info", {}), ("reference", {}),
             ("reference", {"section": "tasks"}), ("list_tasks", {}), ("events", {}), ("notifications", {})]
    with gunicorn(workers=1) as base:
        tools, results = run(base, writer, calls)
    schemas = {tool.name: tool.output_schema for tool in tools.tools}
    for (name, _), (error, text) in zip(calls, results):
        assert not error and set(json.loads(text)) <= set(schemas[name]["properties"]) == set(OUTPUTS[name]), name
