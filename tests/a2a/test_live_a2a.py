"""A requester that has only the official A2A SDK (``a2a-sdk``), against real gunicorn workers and a
real ``run_worker``, over each binding: it discovers the space, sends work (twice, and in other
words: one task), follows it to completion by streaming and by push while a Spaces team does and
checks it over REST, reads the checked result, cancels work it created, and reads a refusal."""
from __future__ import annotations

import asyncio
import json
import re
import time
import subprocess
import sys
import threading
import uuid

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError

from tests.conftest import load_agent_lab
from tests.factories import member_with_key
from tests.live_server import ROOT, gunicorn_process, server_env
from tests.webhooks.receiver import Receiver

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
S = "/v1/spaces/agent-lab"
LOCAL = {"SPACES_WEBHOOK_ALLOW_HTTP": "1", "SPACES_WEBHOOK_ALLOW_PRIVATE": "1"}


def text_message(text: str, message_id: str | None = None) -> pb.Message:
    return pb.Message(message_id=message_id or uuid.uuid4().hex, role=pb.Role.ROLE_USER, parts=[pb.Part(text=text)])


async def requester(base: str, key: str, binding: str, *, streaming: bool):
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    config = ClientConfig(httpx_client=http, streaming=streaming, supported_protocol_bindings=[binding])
    return await create_client(f"{base}/a2a/agent-lab", client_config=config), http


async def send(client, message: pb.Message) -> pb.Task:
    async for response in client.send_message(pb.SendMessageRequest(message=message)):
        return response.task
    raise AssertionError("no answer")


def team_does_and_checks(base: str, worker_key: str, checker_key: str, number: str) -> None:
    """A Spaces team at work over REST: one agent claims the task and delivers, another checks it."""
    worker = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {worker_key}"}, timeout=30)
    checker = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {checker_key}"}, timeout=30)
    assert worker.post(f"{S}/next", json={"number": int(number)}).json()["task"]["number"] == int(number)
    post = worker.post(f"{S}/posts", json={"body": "The harness: 40 review cases, scored."}).json()
    assert worker.post(f"{S}/tasks/{number}/done", json={"post": post["id"]}).status_code in (200, 201)
    offered = checker.post(f"{S}/next", json={"kind": "check"}).json()
    assert checker.post(f"{S}/tasks/{number}/attempts/{offered['attempt']['number']}/confirm").status_code == 200


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_a_requester_with_only_the_sdk_hands_work_to_a_team(binding):
    space = load_agent_lab()
    _, key = member_with_key(space, "writer", "requester")
    _, worker_key = member_with_key(space, "writer", "worker")
    _, checker_key = member_with_key(space, "writer", "checker")
    receiver = Receiver()
    run_worker = subprocess.Popen([sys.executable, "manage.py", "run_worker", "--poll", "0.2"], cwd=ROOT,
                                  env=server_env(**LOCAL), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with gunicorn_process(workers=2, **LOCAL) as (base, _):
            asyncio.run(scenario(base, key, worker_key, checker_key, binding, receiver))
    finally:
        run_worker.terminate()
        run_worker.wait(timeout=30)
        receiver.close()


async def scenario(base, key, worker_key, checker_key, binding, receiver) -> None:
    client, http = await requester(base, key, binding, streaming=False)
    streamer, _ = await requester(base, key, binding, streaming=True)
    try:
        # Discovered: the space's catalog as skills, both bindings, a bearer scheme.
        card = (await http.get(f"{base}/a2a/agent-lab/.well-known/agent-card.json")).json()
        assert {"T1", "T2", "T3", "work"} <= {skill["id"] for skill in card["skills"]}

        # Sent twice, then in other words: one task.
        message = text_message("Benchmark harness for code-review agents\nForty cases.", "req-1")
        first = await send(client, message)
        assert (await send(client, message)).id == first.id
        paraphrase = await send(client, text_message("review agent benchmark"))
        assert paraphrase.id == first.id
        assert paraphrase.metadata["spaces"]["outcome"] == "redirect"
        assert first.status.state == pb.TaskState.TASK_STATE_SUBMITTED

        # Followed by push (run_worker delivers to the requester's receiver) and by a stream.
        config = pb.TaskPushNotificationConfig(task_id=first.id, url=receiver.url, token="req-token")
        made = await client.create_task_push_notification_config(config)
        assert made.id and made.task_id == first.id

        streamed: list[pb.StreamResponse] = []

        async def follow() -> None:
            async for update in streamer.subscribe(pb.SubscribeToTaskRequest(id=first.id)):
                streamed.append(update)

        following = asyncio.create_task(follow())
        await asyncio.sleep(0.5)
        team = threading.Thread(target=team_does_and_checks, args=(base, worker_key, checker_key, first.id))
        team.start()
        await asyncio.wait_for(following, timeout=30)  # the stream ends when the task does
        team.join()
        assert streamed[0].HasField("task")
        states = [u.status_update.status.state for u in streamed if u.HasField("status_update")]
        assert pb.TaskState.TASK_STATE_WORKING in states and states[-1] == pb.TaskState.TASK_STATE_COMPLETED
        [artifact] = [u.artifact_update.artifact for u in streamed if u.HasField("artifact_update")]
        assert artifact.parts[0].text == "The harness: 40 review cases, scored."

        # The checked result, read back.
        done = await client.get_task(pb.GetTaskRequest(id=first.id))
        assert done.status.state == pb.TaskState.TASK_STATE_COMPLETED
        assert done.artifacts[0].parts[0].text == "The harness: 40 review cases, scored."
        assert [m.metadata["kind"] for m in done.history][:2] == ["created", "claimed"]

        pushed = await asyncio.to_thread(receiver.wait_for, 3, 20)
        assert all(p.headers["x-a2a-notification-token"] == "req-token" for p in pushed)
        last = json.loads(pushed[-1].body) if len(pushed) else {}
        deadline = asyncio.get_running_loop().time() + 20
        while "task" not in last and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.2)
            last = json.loads(receiver.received[-1].body)
        assert last["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert last["task"]["artifacts"][0]["parts"][0]["text"] == "The harness: 40 review cases, scored."

        # Work it created, canceled; a refusal carries the REST body.
        other = await send(client, text_message("Draft the rollout plan"))
        canceled = await client.cancel_task(pb.CancelTaskRequest(id=other.id))
        assert canceled.status.state == pb.TaskState.TASK_STATE_CANCELED
        with pytest.raises(TaskNotFoundError) as missing:
            await client.get_task(pb.GetTaskRequest(id="999"))
        assert missing.value.data["error"] == "not_found"
        with pytest.raises(TaskNotCancelableError) as taken:
            await client.cancel_task(pb.CancelTaskRequest(id=first.id))
        assert taken.value.data["status"] == 409
    finally:
        await client.close()
        await streamer.close()
        await http.aclose()


def docs_example() -> str:
    text = (ROOT / "docs" / "api.md").read_text()
    [example] = re.findall(r"<!-- a2a-example -->\n```python\n(.*?)```", text, flags=re.S)
    return example


def test_the_docs_example_runs_as_written():
    """docs/api.md's A2A example, run as a requester would: the team does and checks the work
    while the example follows it, and it prints the checked result."""
    space = load_agent_lab()
    _, key = member_with_key(space, "writer", "requester")
    _, worker_key = member_with_key(space, "writer", "worker")
    _, checker_key = member_with_key(space, "writer", "checker")
    with gunicorn_process(workers=2) as (base, _):
        example = subprocess.Popen([sys.executable, "-c", docs_example()], cwd=ROOT, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env={**server_env(), "SPACES_URL": f"{base}/v1/spaces/agent-lab", "SPACES_KEY": key})
        reader = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {worker_key}"}, timeout=30)
        deadline = time.monotonic() + 30
        while not reader.get(f"{S}/tasks").json()["results"] and time.monotonic() < deadline:
            time.sleep(0.2)  # the example has sent its work
        time.sleep(0.5)  # and is following it
        team_does_and_checks(base, worker_key, checker_key, "1")
        out, err = example.communicate(timeout=60)
    assert example.returncode == 0, err
    lines = out.splitlines()
    assert lines[0] == "task 1 created"
    assert "task.claimed TASK_STATE_WORKING" in lines and lines[-2] == "task.accepted TASK_STATE_COMPLETED"
    assert lines[-1] == "TASK_STATE_COMPLETED - The harness: 40 review cases, scored."


def test_a_requester_is_asked_answers_and_gets_the_checked_result():
    """SPEC §21 on A2A, with only the SDK: the worker asks the requester; the task reads
    INPUT_REQUIRED with the question as its status message; the requester's reply (the task's id)
    answers it, and the worker goes on to a checked result."""
    space = load_agent_lab()
    _, key = member_with_key(space, "writer", "requester")
    _, worker_key = member_with_key(space, "writer", "worker")
    _, checker_key = member_with_key(space, "writer", "checker")
    with gunicorn_process(workers=2) as (base, _):
        asyncio.run(asked_and_answered(base, key, worker_key, checker_key))


async def asked_and_answered(base, key, worker_key, checker_key) -> None:
    client, http = await requester(base, key, "JSONRPC", streaming=False)
    worker = httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {worker_key}"}, timeout=30)
    try:
        task = await send(client, text_message("Benchmark harness for code-review agents"))
        assert (await worker.post(f"{S}/next", json={"number": int(task.id)})).status_code == 200
        asked = await worker.post(f"{S}/tasks/{task.id}/questions",
                                  json={"body": "Forty cases or eighty?", "to": "creator", "options": ["40", "80"]})
        assert asked.status_code == 201, asked.text
        shown = await client.get_task(pb.GetTaskRequest(id=task.id))
        assert shown.status.state == pb.TaskState.TASK_STATE_INPUT_REQUIRED
        assert shown.status.message.parts[0].text == "Forty cases or eighty?"
        reply = pb.Message(message_id=uuid.uuid4().hex, role=pb.Role.ROLE_USER, task_id=task.id,
                           parts=[pb.Part(text="Forty.")])
        answered = await send(client, reply)
        assert answered.metadata["spaces"]["outcome"] == "answered"
        assert answered.status.state == pb.TaskState.TASK_STATE_WORKING
        again = await send(client, reply)  # the same message again: the same answer, replayed
        assert again.metadata["spaces"]["outcome"] == "answered" and again.metadata["spaces"]["replayed"]
        question = (await worker.get(f"{S}/tasks/{task.id}/questions")).json()["results"][0]
        assert question["state"] == "answered" and question["answer"] == "Forty."
        await asyncio.to_thread(finish, base, worker_key, checker_key, task.id)
        done = await client.get_task(pb.GetTaskRequest(id=task.id))
        assert done.status.state == pb.TaskState.TASK_STATE_COMPLETED
        assert done.artifacts[0].parts[0].text == "The harness: 40 review cases, scored."
    finally:
        await client.close()
        await http.aclose()
        await worker.aclose()


def finish(base: str, worker_key: str, checker_key: str, number: str) -> None:
    """The worker, still holding the task, delivers; another agent checks it."""
    worker = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {worker_key}"}, timeout=30)
    checker = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {checker_key}"}, timeout=30)
    post = worker.post(f"{S}/posts", json={"body": "The harness: 40 review cases, scored."}).json()
    assert worker.post(f"{S}/tasks/{number}/done", json={"post": post["id"]}).status_code == 201
    offered = checker.post(f"{S}/next", json={"kind": "check"}).json()
    assert checker.post(f"{S}/tasks/{number}/attempts/{offered['attempt']['number']}/confirm").status_code == 200
