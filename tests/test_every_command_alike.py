"""One command layer for every front: the same script of commands, run once through the REST routes
and once through the MCP tools on a database reset in between, gets the same answers — bodies,
refusal codes and all. Every command is walked (a command added later without a step fails here).
The A2A front is held to the same script for the commands it maps (create, withdraw, read)."""
from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from django.core.management import call_command

from commands.base import COMMANDS
from fronts.mcp.outputs import OUTPUTS
from tasks import commands as task_commands  # noqa: F401  (registers the task commands)
from tests.conftest import load_agent_lab
from tests.factories import member_with_key
from tests.live_server import gunicorn
from tests.test_every_tool_hostile import call_raw

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

S = "/v1/spaces/agent-lab"

# (who, command, path lookups, input). Each command appears at least once; refusals are steps too.
SCRIPT: list[tuple[str, str, dict, Any]] = [
    ("writer", "create_task", {}, {"title": "Build a benchmark for code review agents", "labels": ["eval"]}),
    ("writer", "create_task", {}, {"title": "review agent benchmark"}),  # 409 naming task 1
    ("writer", "create_task", {}, {"title": "x" * 501}),  # 422
    ("writer", "create_tasks", {}, {"proposals": [{"title": "Write the onboarding guide"},
                                                  {"title": "Retry and backoff policy for tool calls"},
                                                  {"title": "Token spend dashboard", "priority": 9}]}),
    ("reader", "bind_title", {}, {"title": "The onboarding guide"}),
    ("reader", "similar_tasks", {}, {"title": "Onboarding guide, written"}),
    ("reader", "similar_tasks", {}, {"title": ""}),  # 422
    ("writer", "create_task", {}, {"title": "Write the onboarding guide!", "if_similar": "refuse"}),  # 409
    ("writer", "create_task", {}, {"title": "The onboarding guide, written"}),  # 201 with similar: task 4
    ("reader", "likely_duplicates", {}, None),
    ("writer", "mark_not_duplicate", {"number": 4}, {"task": 2}),  # 403: a steward's
    ("steward", "mark_not_duplicate", {"number": 4}, {"task": 99}),  # 404
    ("steward", "mark_not_duplicate", {"number": 4}, {"task": 2}),
    ("reader", "likely_duplicates", {}, None),  # the pair is gone
    ("writer", "update_task", {"number": 1}, {"priority": 1}),
    ("writer", "add_blocker", {"number": 3}, {"task": 1}),
    ("writer", "add_blocker", {"number": 1}, {"task": 3}),  # 422 dependency_cycle
    ("writer", "remove_blocker", {"number": 3, "blocker": 1}, None),
    ("writer", "next_task", {}, {}),
    ("writer", "heartbeat", {"number": 1}, None),
    ("writer", "heartbeat", {"number": 1}, {"cost": {"usd": 0.5, "model": "m-1"}}),
    ("writer", "heartbeat", {"number": 1}, {"cost": {"usd": "1"}}),  # 422: a number is a JSON number
    ("writer", "give_back", {"number": 1}, {"cost": {"usd": 0.75, "input_tokens": 1200}}),
    ("writer", "give_back", {"number": 1}, None),  # 409: holds nothing
    ("writer", "heartbeat", {"number": 1}, None),  # 409 not_holder
    ("writer", "next_task", {}, {"number": 1}),
    ("writer", "next_task", {}, {"kind": "bogus"}),  # 422
    ("writer", "create_post", {}, {"body": "It runs.", "title": "Harness"}),
    ("writer", "mark_done", {"number": 1}, {"post": 1, "cost": {"usd": 1.25, "output_tokens": 300}}),
    ("checker", "next_task", {}, {"kind": "check"}),
    ("checker", "confirm_attempt", {"number": 1, "attempt": 1}, None),
    ("checker", "confirm_attempt", {"number": 1, "attempt": 9}, None),  # 404
    ("writer", "next_task", {}, {"number": 2}),
    ("writer", "create_post", {}, {"body": "A guide."}),
    ("writer", "mark_done", {"number": 2}, {"post": 2}),
    ("checker", "reject_attempt", {"number": 2, "attempt": 1}, {"reason": "too short"}),
    ("writer", "add_note", {"number": 2}, {"body": "Say more about keys.", "criterion": 1}),
    ("writer", "add_note", {"number": 2}, {"body": "Say more about keys.", "criterion": 1}),  # 409
    ("writer", "supersede_task", {"number": 3}, {"surviving_task": 2}),  # 403: a steward's
    ("steward", "supersede_task", {"number": 3}, {"surviving_task": 99}),  # 422 survivor_invalid
    ("steward", "supersede_task", {"number": 3}, {"surviving_task": 2}),
    ("steward", "assign_task", {"number": 2}, {"member": 2}),
    ("writer", "withdraw_task", {"number": 2}, {"reason": "done elsewhere"}),
    ("steward", "reject_task", {"number": 99}, {}),  # 404
    ("steward", "hold_slot", {}, {"work_item_id": "T2", "reason": "reserved for the team"}),
    ("steward", "hold_slot", {}, {"work_item_id": "T999"}),  # 422
    ("steward", "release_slot", {"work_item_id": "t2"}, None),
    ("steward", "release_slot", {"work_item_id": "T2"}, None),  # 404: not held any more
    ("writer", "release_slot", {"work_item_id": "T2"}, None),  # 403: a steward's
    ("writer", "get_task", {"number": 1}, None),
    ("writer", "get_task", {"number": 2}, None),
    ("reader", "space_costs", {}, {"group_by": "model"}),
    ("reader", "space_costs", {}, {"group_by": "colour"}),  # 422
    # SPEC §21: approval before work starts.
    ("writer", "create_task", {}, {"title": "Migrate the build to the new runner", "approval": True}),  # proposed: 5
    ("writer", "next_task", {}, {"number": 5}),  # 409 task_not_open: a proposal is not ready
    ("writer", "approve_task", {"number": 5}, None),  # 403 not_approver
    ("steward", "approve_task", {"number": 5}, None),
    ("steward", "refuse_task", {"number": 5}, {"reason": "not now"}),  # 409 task_not_proposed
    ("writer", "create_task", {}, {"title": "Rotate the signing keys", "approval": True, "approver": 99}),  # 422
    ("writer", "create_task", {}, {"title": "Rotate the signing keys", "approval": True}),  # proposed: 6
    ("steward", "refuse_task", {"number": 6}, {"reason": "not now"}),
    # SPEC §21: questions, answers, messages and the inbox.
    ("checker", "ask_question", {"number": 4}, {"body": "Which audience?", "to": "creator"}),  # 403 not_asker
    ("writer", "next_task", {}, {"number": 4}),
    ("writer", "ask_question", {"number": 4}, {"body": "Which audience?", "to": "stewards",
                                               "options": ["agents", "people"]}),  # question 1
    ("writer", "ask_question", {"number": 4}, {"body": "Which audience?", "to": "stewards"}),  # 409
    ("steward", "read_inbox", {}, None),
    ("checker", "answer_question", {"number": 4, "question": 1}, {"body": "agents"}),  # 403 not_addressee
    ("steward", "answer_question", {"number": 4, "question": 1}, {"option": "agents"}),
    ("steward", "answer_question", {"number": 4, "question": 1}, {"body": "people"}),  # 409 question_closed
    ("writer", "post_task_message", {"number": 4}, {"body": "Writing for agents, then."}),
    ("writer", "post_task_message", {"number": 4}, {"body": "Writing for agents, then."}),  # 409
    ("writer", "post_direct_message", {}, {"body": "Can you check task 4 when it is done?", "to": [2]}),
    ("writer", "post_direct_message", {}, {"body": "Anyone?", "to": [99]}),  # 422
    ("checker", "read_inbox", {}, None),
    # SPEC §22: dead letters and routines.
    ("writer", "unpark_task", {"number": 4}, None),  # 403: a steward's
    ("steward", "unpark_task", {"number": 4}, None),  # 409 task_not_parked
    ("writer", "create_routine", {}, {"title": "Audit the dependencies", "schedule": "0 9 * * 1"}),  # 403
    ("steward", "create_routine", {}, {"title": "Audit the dependencies", "schedule": "0 9 * * 1",
                                       "timezone": "Europe/Paris"}),
    ("steward", "create_routine", {}, {"title": "Audit", "schedule": "0 25 * * *"}),  # 422
    ("steward", "update_routine", {"routine": 1}, {"enabled": False}),
    ("steward", "update_routine", {"routine": 9}, {"enabled": True}),  # 404
    ("steward", "delete_routine", {"routine": 1}, None),
]

REST: dict[str, tuple[str, str]] = {
    "create_task": ("POST", "/tasks"), "create_tasks": ("POST", "/tasks/window"),
    "update_task": ("PATCH", "/tasks/{number}"), "add_blocker": ("POST", "/tasks/{number}/blockers"),
    "remove_blocker": ("DELETE", "/tasks/{number}/blockers/{blocker}"), "next_task": ("POST", "/next"),
    "give_back": ("POST", "/tasks/{number}/give-back"), "heartbeat": ("POST", "/tasks/{number}/heartbeat"), "create_post": ("POST", "/posts"),
    "mark_done": ("POST", "/tasks/{number}/done"), "add_note": ("POST", "/tasks/{number}/notes"),
    "confirm_attempt": ("POST", "/tasks/{number}/attempts/{attempt}/confirm"),
    "reject_attempt": ("POST", "/tasks/{number}/attempts/{attempt}/reject"),
    "supersede_task": ("POST", "/tasks/{number}/supersede"), "assign_task": ("POST", "/tasks/{number}/assign"),
    "withdraw_task": ("POST", "/tasks/{number}/withdraw"), "reject_task": ("POST", "/tasks/{number}/reject"),
    "hold_slot": ("POST", "/holds"), "release_slot": ("DELETE", "/holds/{work_item_id}"), "get_task": ("GET", "/tasks/{number}"),
    "bind_title": ("POST", "/bind"), "similar_tasks": ("GET", "/tasks/similar"),
    "likely_duplicates": ("GET", "/tasks/duplicates"), "mark_not_duplicate": ("POST", "/tasks/{number}/not-duplicate"),
    "space_costs": ("GET", "/costs"), "approve_task": ("POST", "/tasks/{number}/approve"),
    "refuse_task": ("POST", "/tasks/{number}/refuse"), "ask_question": ("POST", "/tasks/{number}/questions"),
    "answer_question": ("POST", "/tasks/{number}/questions/{question}/answer"),
    "post_task_message": ("POST", "/tasks/{number}/messages"), "post_direct_message": ("POST", "/messages"),
    "read_inbox": ("GET", "/v1/inbox"), "unpark_task": ("POST", "/tasks/{number}/unpark"),
    "create_routine": ("POST", "/routines"), "update_routine": ("PATCH", "/routines/{routine}"),
    "delete_routine": ("DELETE", "/routines/{routine}"),
}
# The MCP tool a command is, where its name is not the command's (SPEC §21's ask, answer, message, inbox).
MCP_TOOLS = {"ask_question": "ask", "answer_question": "answer", "post_task_message": "message",
             "post_direct_message": "message", "read_inbox": "inbox"}
# MCP tool arguments where they are not the input itself (flat lookups, and renamed fields).
MCP_ARGUMENTS = {"add_blocker": lambda data: {"blocker": data["task"]}}
TIMES = {"next_run_at", "last_period", "last_heartbeat_at", "closed_at", "created_at", "updated_at", "expires_at", "decided_at", "ended_at", "read_at",
         "since", "until"}


def route(path: str, lookups: dict) -> str:
    """A step's URL: under the space, or (``/v1/…``) the caller's own."""
    return path if path.startswith("/v1/") else S + path.format(**lookups)


def comparable(body: Any) -> Any:
    """A body with its timestamps blanked (they differ run to run, nothing else may)."""
    if isinstance(body, dict):
        return {k: "<time>" if k in TIMES and v is not None else comparable(v) for k, v in body.items()}
    if isinstance(body, list):
        return [comparable(v) for v in body]
    return body


def seed() -> dict[str, str]:
    call_command("flush", interactive=False, verbosity=0)  # ids start again from 1 for both runs
    space = load_agent_lab()
    _, writer = member_with_key(space, "writer", "agent-1")
    _, checker = member_with_key(space, "writer", "agent-2")
    _, steward = member_with_key(space, "steward", "lead")
    _, reader = member_with_key(space, "reader", "watcher")
    return {"writer": writer, "checker": checker, "steward": steward, "reader": reader}


def through_rest(base: str) -> list[tuple[int, Any]]:
    keys, answers = seed(), []
    with httpx.Client(base_url=base, timeout=30) as http:
        for who, name, lookups, data in SCRIPT:
            method, path = REST[name]
            query = method == "GET" and data is not None  # a GET's input is its query string
            response = http.request(method, route(path, lookups), json=None if query else data,
                                    params=data if query else None,
                                    headers={"Authorization": f"Bearer {keys[who]}"})
            answers.append((response.status_code, response.json() if response.content else None))
    return answers


def through_mcp(base: str) -> list[tuple[int, Any]]:
    keys, answers = seed(), []
    for who, name, lookups, data in SCRIPT:
        arguments = {**lookups, **(MCP_ARGUMENTS.get(name, lambda d: d or {})(data or {}))}
        (_, answer), = call_raw(base, keys[who], [(MCP_TOOLS.get(name, name), arguments)])
        result = answer["result"]
        text = result["content"][0]["text"] if result.get("content") else "null"
        body = json.loads(text[text.index("{"):] if result.get("isError") else text)
        answers.append((body.get("status", 200) if result.get("isError") else 200, body))
        if not result.get("isError"):  # SPEC §23: its output schema names every field it answers
            assert set(body) <= set(OUTPUTS[MCP_TOOLS.get(name, name)]), (name, sorted(body))
    return answers


# MCP's Tasks extension's own commands (SPEC §23): they follow a long call made over MCP, so they
# have no REST twin to be answered alike; tests/test_mcp_tasks.py walks each.
FOLLOWING_CALLS = {"follow_call", "cancel_call", "set_aside_inputs"}


def test_every_command_is_walked():
    assert {name for _, name, _, _ in SCRIPT} == set(COMMANDS) - FOLLOWING_CALLS


def test_rest_and_mcp_answer_every_command_alike():
    with gunicorn(workers=1) as base:
        rest = through_rest(base)
        mcp = through_mcp(base)
    for (who, name, lookups, data), (rest_status, rest_body), (mcp_status, mcp_body) in zip(SCRIPT, rest, mcp):
        step = f"{who} {name} {lookups} {data}"
        if rest_status >= 400:
            assert mcp_status == rest_status, step
            assert comparable(mcp_body) == comparable(rest_body), step
        elif rest_status == 204:
            assert mcp_status == 200, step  # SPEC §13: REST's DELETE answers no body; MCP answers the task
        else:
            assert mcp_status == 200 and comparable(mcp_body) == comparable(rest_body), step
    assert sum(status >= 400 for status, _ in rest) >= 10  # the refusals were walked too


# --- A2A (SPEC §18): the commands it maps, answered alike ----------------------------------------

def a2a_params(name: str, lookups: dict, data: Any) -> tuple[str, dict] | None:
    """The A2A call a step is, or None when A2A cannot say it (the step then goes over REST)."""
    from fronts.a2a.messages import DATA_FIELDS

    if name == "create_task" and set(data) <= set(DATA_FIELDS):
        return "SendMessage", {"message": {"messageId": f"step-{id(data)}", "role": "ROLE_USER",
                                           "parts": [{"data": data}]}}
    if name == "withdraw_task":
        return "CancelTask", {"id": str(lookups["number"]), "metadata": data}
    if name == "get_task":
        return "GetTask", {"id": str(lookups["number"])}
    return None


def through_a2a(base: str) -> list[tuple[str, int, Any]]:
    """The script again, each step A2A can say over JSON-RPC, the rest over REST (so the space
    goes through the same states): ("a2a" or "rest", status, body), a refusal's body the REST
    problem body the A2A error carries."""
    keys, answers = seed(), []
    with httpx.Client(base_url=base, timeout=30) as http:
        for who, name, lookups, data in SCRIPT:
            call = a2a_params(name, lookups, data)
            headers = {"Authorization": f"Bearer {keys[who]}"}
            if call is None:
                method, path = REST[name]
                query = method == "GET" and data is not None
                response = http.request(method, route(path, lookups), json=None if query else data,
                                        params=data if query else None, headers=headers)
                answers.append(("rest", response.status_code, response.json() if response.content else None))
                continue
            answer = http.post("/a2a/agent-lab", json={"jsonrpc": "2.0", "id": 1, "method": call[0], "params": call[1]},
                               headers={**headers, "A2A-Version": "1.0"}).json()
            if "error" in answer:
                [info] = [d for d in answer["error"]["data"] if d["@type"].endswith("ErrorInfo")]
                answers.append(("a2a", info["metadata"]["status"], info["metadata"]))
            else:
                answers.append(("a2a", 200, answer["result"].get("task", answer["result"])))
    return answers


def test_a2a_answers_the_commands_it_maps_as_rest_does():
    with gunicorn(workers=1) as base:
        rest = through_rest(base)
        a2a = through_a2a(base)
    mapped = 0
    for (who, name, lookups, data), (rest_status, rest_body), (front, status, body) in zip(SCRIPT, rest, a2a):
        step = f"{who} {name} {lookups} {data}"
        if front == "rest":
            assert (status, comparable(body)) == (rest_status, comparable(rest_body)), step
            continue
        mapped += 1
        winner = rest_body.get("winner") if rest_status == 409 else None
        if winner and winner["type"] == "task":  # SPEC §18: converge on the task that holds the work
            assert status == 200 and body["id"] == str(winner["id"]), step
            assert body["metadata"]["spaces"]["outcome"] == "redirect", step
        elif rest_status >= 400:
            assert (status, comparable(body)) == (rest_status, comparable(rest_body)), step
        else:
            assert status == 200 and body["id"] == str(rest_body["number"]), step
            assert body["metadata"]["spaces"]["status"] == rest_body["status"], step
    assert mapped >= 6
