"""SPEC §3 for the MCP front, tool by tool: every tool, found at run time (a tool added later cannot
skip this), answers hostile arguments with a refusal, never a server error, and writes nothing."""
from __future__ import annotations

import inspect
import json
import typing

import httpx
import pytest

from fronts.mcp.tools import TOOLS
from tests.conftest import load_agent_lab
from tests.factories import member_with_key
from tests.live_server import gunicorn
from tests.test_every_route_hostile import domain_rows

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

DEEP = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
for _ in range(6):
    DEEP = [DEEP, DEEP]  # deep and wide: 2**6 copies of 32 levels
HOSTILE = {
    str: ["x\ud800y", "a\x00b", "x" * 300_000],
    int: [10**40, -(10**40)],
    list: [DEEP, list(range(20_000)), ["\x00"], [{"title": "\ud800"}]],
    bool: ["\x00", 10**40],
}


def tools() -> dict[str, inspect.Signature]:
    return {name: inspect.signature(fn) for name, fn in TOOLS.items()}


def kind(annotation) -> type | None:
    """The plain type a parameter takes (``int | None`` → int)."""
    hint = annotation if not isinstance(annotation, str) else eval(annotation, vars(typing), {})  # noqa: S307
    options = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    base = typing.get_origin(options[0]) or options[0]
    return base if base in HOSTILE else None


def hostile_calls() -> list[tuple[str, dict]]:
    """Per tool and parameter, each hostile value of its type, the others left at sane values."""
    sane = {int: 1, str: "ok", list: [], bool: False}
    calls = []
    for name, signature in tools().items():
        params = {p: signature.parameters[p] for p in signature.parameters if p != "self"}
        base = {p: sane.get(kind(param.annotation), None) for p, param in params.items()
                if param.default is inspect.Parameter.empty}
        for p, param in params.items():
            for value in HOSTILE.get(kind(param.annotation), []):
                calls.append((name, {**base, p: value}))
    return calls


def call_raw(base: str, key: str, calls: list[tuple[str, dict]]) -> list[tuple[int, dict | None]]:
    """JSON-RPC posted as bytes, as a hostile client would (the SDK cannot even encode a lone
    surrogate): per call, the HTTP status and the JSON answer."""
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    answers = []
    with httpx.Client(timeout=60) as client:
        for number, (name, arguments) in enumerate(calls):
            body = json.dumps({"jsonrpc": "2.0", "id": number, "method": "tools/call",
                               "params": {"name": name, "arguments": arguments}})  # \ud800 stays escaped
            response = client.post(f"{base}/mcp", content=body, headers=headers)
            try:
                answers.append((response.status_code, response.json()))
            except ValueError:
                answers.append((response.status_code, None))
    return answers


def test_every_tool_has_hostile_cases():
    covered = {name for name, _ in hostile_calls()}
    # A tool without parameters (space_info) takes no input to be hostile with.
    assert covered == {name for name, sig in tools().items() if len(sig.parameters) > 0}


def test_every_tool_refuses_hostile_arguments_and_writes_nothing():
    from tests.factories import create_task

    space = load_agent_lab()
    member, steward = member_with_key(space, "steward", "boss")
    create_task(space=space, actor=member, title="Retry policy")
    before = domain_rows()
    calls = hostile_calls()
    with gunicorn(workers=1) as base:
        answers = call_raw(base, steward, calls)
    ours = 0
    for (name, arguments), (status, answer) in zip(calls, answers):
        where = f"{name}({ {k: str(v)[:40] for k, v in arguments.items()} })"
        assert status < 500 and answer is not None, (where, status)
        if "error" in answer:
            continue  # a JSON-RPC refusal of the arguments, before any service ran
        result = answer["result"]
        text = result["content"][0]["text"] if result.get("content") else ""
        assert result.get("isError"), (where, text[:300])
        assert "Traceback" not in text and "Internal" not in text, (where, text[:300])
        if '{"error"' in text:  # our refusal; else the SDK's own argument check, before any service ran
            refusal = json.loads(text[text.index('{"error"'):])
            assert 400 <= refusal["status"] < 500, (where, refusal)
            ours += 1
    print(f"{len(calls)} hostile calls, {ours} refused by the services, the rest by the SDK's argument check")
    assert ours > len(calls) // 2  # most reach the services: the suite tests ours, not only the SDK's
    assert domain_rows() == before
