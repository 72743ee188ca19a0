"""The `spaces` CLI as a subprocess against a live server (real gunicorn, PostgreSQL)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from commands.unit import in_transaction
from allocation.conflict_keys import ConflictKey
from allocation.models import Reservation
from idempotency.models import Operation
from allocation.services import reserve
from spaces.models import Post
from tasks.models import Task
from tests.conftest import load_agent_lab
from tests.factories import member_with_key
from tests import live_server
from tests.live_server import ROOT, gunicorn

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def spaces_cli(base: str, key: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, SPACES_URL=f"{base}/v1/spaces/agent-lab", SPACES_KEY=key, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "spaces_client.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_the_agent_flow_and_exit_codes():
    space = load_agent_lab()
    _, writer = member_with_key(space, "writer", "agent-1")
    _, checker = member_with_key(space, "writer", "agent-2")
    with gunicorn(workers=2) as base:
        created = spaces_cli(base, writer, "create", "Build a benchmark for code review agents")
        assert created.returncode == 0 and "task 1 [T1] (open" in created.stdout
        conflict = spaces_cli(base, checker, "--json", "create", "review agent benchmark")
        assert conflict.returncode == 1
        assert json.loads(conflict.stdout)["winner"] == {"type": "task", "id": 1, "status": "open"}
        claimed = spaces_cli(base, writer, "next")
        assert claimed.returncode == 0 and claimed.stdout.startswith("claimed task 1")
        post = json.loads(spaces_cli(base, writer, "--json", "post", "It runs.").stdout)["id"]
        done = spaces_cli(base, writer, "done", "1", "--post", str(post))
        assert done.returncode == 0 and "attempt 1 is waiting" in done.stdout
        assert spaces_cli(base, writer, "confirm", "1", "1").returncode == 1  # doer_cannot_check
        confirmed = spaces_cli(base, checker, "confirm", "1", "1")
        assert confirmed.returncode == 0 and "attempt 1 is accepted" in confirmed.stdout
        assert spaces_cli(base, "sk_wrong_key", "tasks").returncode == 1  # 401 is a refusal
        assert spaces_cli(base, writer, "frobnicate").returncode == 2  # usage
    assert Task.objects.get().status == "done"
    unreachable = spaces_cli("http://127.0.0.1:9", writer, "--deadline", "0.5", "tasks")
    assert unreachable.returncode == 2


def test_a_retried_create_is_one_task_on_the_server():
    space = load_agent_lab()
    member, key = member_with_key(space, "writer", "retrier")
    blocker, _ = member_with_key(space, "writer", "blocker")
    held = in_transaction(reserve, operation=None, commits_alone=True, space=space,
                          key=ConflictKey("create_task", "task:agent-lab:retry policy", "result"),
                          member=blocker, payload_sha256="x")

    def release_soon():
        from django.db import connection

        # Release once the CLI's first try has met 409 conflict_key_reserved (its operation
        # is then retryable); the CLI retries after 200 ms.
        deadline = time.monotonic() + 60
        while not Operation.objects.filter(member=member, state="unknown").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        Reservation.objects.filter(pk=held.pk).delete()
        connection.close()

    with gunicorn(workers=2) as base:
        releaser = threading.Thread(target=release_soon)
        releaser.start()
        result = spaces_cli(base, key, "create", "Retry policy")
        releaser.join()
    assert result.returncode == 0, result.stdout + result.stderr
    assert Task.objects.filter(conflict_target="task:agent-lab:retry policy").count() == 1
    operation = Operation.objects.get(member=member)  # one Idempotency-Key across every try
    assert operation.state == "completed"
    assert list(operation.observations.order_by("pk").values_list("kind", flat=True)) == ["transient", "success"]


def test_the_work_graph_commands():
    space = load_agent_lab()
    _, writer = member_with_key(space, "writer", "agent-1")
    with gunicorn(workers=1) as base:
        assert spaces_cli(base, writer, "create", "schema change", "--label", "api").returncode == 0
        created = spaces_cli(base, writer, "create", "migration", "--priority", "1", "--label", "api",
                             "--blocked-by", "1")
        assert created.returncode == 0 and "waits on 1" in created.stdout and "#api" in created.stdout
        assert spaces_cli(base, writer, "create", "docs", "--priority", "0").returncode == 0
        assert spaces_cli(base, writer, "block", "3", "1").returncode == 0
        cycle = spaces_cli(base, writer, "block", "1", "3")
        assert cycle.returncode == 1 and "cycle" in cycle.stdout
        ready = spaces_cli(base, writer, "ready")
        assert [line.split()[1] for line in ready.stdout.splitlines()] == ["1"]
        assert spaces_cli(base, writer, "unblock", "3", "1").returncode == 0
        ready = spaces_cli(base, writer, "ready")
        assert [line.split()[1] for line in ready.stdout.splitlines()] == ["3", "1"]  # by priority
        claimed = spaces_cli(base, writer, "next", "--label", "api")
        assert claimed.returncode == 0 and "claimed task 1 " in claimed.stdout
        updated = spaces_cli(base, writer, "update", "2", "--priority", "4", "--no-labels")
        assert "P4" in updated.stdout and "#" not in updated.stdout
        found = spaces_cli(base, writer, "tasks", "-q", "migration")
        assert [line.split()[1] for line in found.stdout.splitlines()] == ["2"]
        board = spaces_cli(base, writer, "board")
        rows = (re.match(r"^(\S.*?)\s{2,}(\S.*)$", line) for line in board.stdout.splitlines())
        lines = {row.group(1): row.group(2) for row in rows if row}
        assert board.returncode == 0 and board.stdout.startswith("space agent-lab")
        assert lines["live"].strip() == "3" and lines["ready"].strip() == "1" and lines["blocked"].strip() == "1"
        assert "agent-1" in board.stdout and "duplicates prevented (24 h)" in board.stdout


def test_similar_and_create_if_similar_refuse():
    space = load_agent_lab()
    _, writer = member_with_key(space, "writer", "agent-1")
    with gunicorn(workers=1) as base:
        first = spaces_cli(base, writer, "create", "Add retry with backoff to the webhook sender")
        assert first.returncode == 0 and "similar" not in first.stdout
        similar = spaces_cli(base, writer, "similar", "Retry with backoff in the webhook sender")
        assert similar.returncode == 0 and "task 1 (open): Add retry with backoff" in similar.stdout
        refused = spaces_cli(base, writer, "--json", "create", "Retry with backoff in the webhook sender",
                             "--if-similar", "refuse")
        assert refused.returncode == 1 and json.loads(refused.stdout)["code"] == "similar_task_exists"
        created = spaces_cli(base, writer, "create", "Retry with backoff in the webhook sender")
        assert created.returncode == 0 and created.stdout.startswith("task 2")
        assert "similar live tasks" in created.stdout and "task 1 (open)" in created.stdout
        assert spaces_cli(base, writer, "similar", "Translate the docs into Welsh").stdout.strip() == \
            "no similar live task"


def test_events_lists_the_feed_and_follow_prints_each_new_event_once_as_it_comes():
    """SPEC §17: `spaces events` lists the feed; `--follow` keeps printing events as they commit,
    each once, resuming from the last seq it printed."""
    space = load_agent_lab()
    _, writer = member_with_key(space, "writer", "agent-1")
    with gunicorn(workers=1) as base:
        spaces_cli(base, writer, "create", "First for the feed")
        listed = spaces_cli(base, writer, "events", "--type", "task.created")
        assert listed.returncode == 0 and re.fullmatch(r"\d+  \S+  task.created task 1 by agent-1\n", listed.stdout)
        after = int(listed.stdout.split()[0])
        env = dict(os.environ, SPACES_URL=f"{base}/v1/spaces/agent-lab", SPACES_KEY=writer, PYTHONPATH=str(ROOT))
        follower = subprocess.Popen([sys.executable, "-m", "spaces_client.cli", "--json", "events", "--follow",
                                     "--after", str(after)], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        try:
            for n in (2, 3):
                spaces_cli(base, writer, "create", f"Task {n} for the feed")
            lines = [json.loads(follower.stdout.readline()) for _ in range(2)]
        finally:
            follower.terminate()
            follower.wait(10)
        assert [(e["type"], e["task"]) for e in lines] == [("task.created", 2), ("task.created", 3)]
        assert [e["seq"] for e in lines] == [after + 1, after + 2]


def test_a_steward_manages_webhooks_from_the_command_line():
    """SPEC §17 from the CLI: add (the secret shown once), list, a test event delivered by the
    worker, its deliveries, remove; a writer is refused."""
    from tests.webhooks.receiver import Receiver

    space = load_agent_lab()
    _, steward = member_with_key(space, "steward", "lead")
    _, writer = member_with_key(space, "writer", "agent-1")
    receiver = Receiver()
    local = {"SPACES_WEBHOOK_ALLOW_HTTP": "1", "SPACES_WEBHOOK_ALLOW_PRIVATE": "1"}
    try:
        with gunicorn(workers=1, **local) as base:
            added = spaces_cli(base, steward, "webhooks", "add", receiver.url, "--type", "task.created")
            assert added.returncode == 0 and "signing secret (shown this once, keep it): whsec_" in added.stdout
            webhook = added.stdout.split()[1]
            listed = spaces_cli(base, steward, "webhooks", "list")
            assert listed.stdout.split() == [webhook, "enabled", receiver.url, "task.created"]
            assert spaces_cli(base, writer, "webhooks", "list").returncode == 1  # stewards only
            queued = spaces_cli(base, steward, "webhooks", "test", webhook)
            assert re.fullmatch(r"delivery \d+ \(webhook.test\) is pending\n", queued.stdout), queued.stdout
            worker = subprocess.run([sys.executable, "manage.py", "run_worker", "--once"], cwd=ROOT, timeout=60,
                                    env=dict(os.environ, **local, DATABASE_URL=live_server.test_database_url(),
                                             DJANGO_SETTINGS_MODULE="settings.base", DJANGO_DEBUG="1"),
                                    capture_output=True, text=True)
            assert "1 webhook delivery(ies) made" in worker.stdout, worker.stderr
            deliveries = spaces_cli(base, steward, "webhooks", "deliveries", webhook)
            assert re.fullmatch(r"\d+  webhook.test  delivered  1 tries  last: 200\n", deliveries.stdout), \
                deliveries.stdout
            assert spaces_cli(base, steward, "webhooks", "remove", webhook).stdout == "removed\n"
            assert spaces_cli(base, steward, "webhooks", "list").stdout == "none\n"
    finally:
        receiver.close()


def test_a_proposal_is_approved_or_refused_from_the_command_line():
    """SPEC §21: `spaces create --approval`, then `spaces approve` or `spaces refuse`."""
    space = load_agent_lab()
    _, writer = member_with_key(space, "writer", "agent-1")
    _, steward = member_with_key(space, "steward", "lead")
    with gunicorn(workers=1) as base:
        created = spaces_cli(base, writer, "create", "Migrate the build to the new runner", "--approval")
        assert created.returncode == 0 and "(proposed" in created.stdout, created.stdout
        assert json.loads(spaces_cli(base, writer, "--json", "next").stdout) == {"task": None}
        refused_by_writer = spaces_cli(base, writer, "--json", "approve", "1")
        assert refused_by_writer.returncode == 1 and "not_approver" in refused_by_writer.stdout, refused_by_writer.stdout
        assert spaces_cli(base, steward, "approve", "1").returncode == 0
        second = spaces_cli(base, writer, "create", "Rotate the signing keys", "--approval")
        assert second.returncode == 0
        assert spaces_cli(base, steward, "refuse", "2", "--reason", "not now").returncode == 0
    assert dict(Task.objects.values_list("number", "status")) == {1: "open", 2: "rejected"}
    assert Task.objects.get(number=2).close_reason == "not now"


def test_ask_answer_message_and_inbox_from_the_command_line():
    """SPEC §21: `spaces ask`, `spaces inbox`, `spaces answer`, `spaces message`."""
    space = load_agent_lab()
    _, writer = member_with_key(space, "writer", "agent-1")
    _, steward = member_with_key(space, "steward", "lead")
    with gunicorn(workers=1) as base:
        assert spaces_cli(base, steward, "create", "Pick the queue library").returncode == 0
        assert spaces_cli(base, writer, "next").returncode == 0
        asked = spaces_cli(base, writer, "ask", "1", "Which one: A or B?", "--option", "A", "--option", "B")
        found = re.match(r"question (\d+) on task 1 is open", asked.stdout)
        assert asked.returncode == 0 and found, asked.stdout + asked.stderr
        question = found.group(1)
        inbox = spaces_cli(base, steward, "inbox")
        assert f"question {question} on task 1: Which one: A or B?" in inbox.stdout, inbox.stdout
        answered = spaces_cli(base, steward, "answer", "1", question, "--option", "B")
        assert answered.returncode == 0 and "is answered: B" in answered.stdout, answered.stdout
        late = spaces_cli(base, steward, "--json", "answer", "1", question, "A after all")
        assert late.returncode == 1 and json.loads(late.stdout)["error"] == "question_closed"
        sent = spaces_cli(base, writer, "message", "Going with B.", "--task", "1")
        assert sent.returncode == 0 and re.match(r"message \d+ to ", sent.stdout), sent.stdout
        assert "from" in spaces_cli(base, steward, "inbox", "--read").stdout
        assert spaces_cli(base, steward, "inbox").stdout.strip() == "nothing waits on you"
    assert Task.objects.get().status == "claimed"


ASKING_AGENT = """\
import os, sys
answer = os.environ.get("SPACES_ANSWER")
if answer is None:
    open(os.environ["SPACES_QUESTION_FILE"], "w").write('{"body": "Forty cases or eighty?", "options": ["40", "80"]}')
    sys.exit(75)
print(f"built the harness with {answer} cases")
"""


def test_spaces_work_asks_a_person_holds_the_claim_and_goes_on_with_the_answer(tmp_path):
    """SPEC §21: the command writes a question and exits 75; `spaces work --hold` asks it of the
    task's creator, keeps the claim paused, and runs the command again with the answer."""
    space = load_agent_lab()
    _, worker = member_with_key(space, "writer", "agent-1")
    _, person_key = member_with_key(space, "writer", "ana")
    agent = tmp_path / "agent.py"
    agent.write_text(ASKING_AGENT)
    with gunicorn(workers=2) as base:
        assert spaces_cli(base, person_key, "create", "Benchmark harness for code review agents").returncode == 0
        outcome: dict[str, subprocess.CompletedProcess] = {}
        working = threading.Thread(target=lambda: outcome.setdefault("work", spaces_cli(
            base, worker, "work", "--hold", "--", sys.executable, str(agent), timeout=120)))
        working.start()
        deadline = time.monotonic() + 60
        while not (questions := json.loads(spaces_cli(base, person_key, "--json", "inbox").stdout)["questions"]):
            assert time.monotonic() < deadline, "the question never reached the creator's inbox"
            time.sleep(0.2)
        assert Task.objects.get().status == "waiting"
        assert spaces_cli(base, person_key, "answer", "1", str(questions[0]["id"]), "--option", "40").returncode == 0
        working.join(120)
    work = outcome["work"]
    assert work.returncode == 0, work.stdout + work.stderr
    assert re.search(r"asked question \d+ on task 1", work.stdout) and "attempt 1 is waiting" in work.stdout
    assert Task.objects.get().status == "in_review"
    assert Post.objects.get().body.strip() == "built the harness with 40 cases"


def test_spaces_work_without_hold_asks_and_gives_the_claim_back(tmp_path):
    space = load_agent_lab()
    _, worker = member_with_key(space, "writer", "agent-1")
    _, creator = member_with_key(space, "writer", "ana")
    agent = tmp_path / "agent.py"
    agent.write_text(ASKING_AGENT)
    with gunicorn(workers=1) as base:
        assert spaces_cli(base, creator, "create", "Benchmark harness for code review agents").returncode == 0
        work = spaces_cli(base, worker, "work", "--", sys.executable, str(agent))
        assert work.returncode == 0 and "gave the claim back" in work.stdout, work.stdout + work.stderr
        assert Task.objects.get().status == "waiting"
        question = json.loads(spaces_cli(base, creator, "--json", "inbox").stdout)["questions"][0]["id"]
        assert spaces_cli(base, creator, "answer", "1", str(question), "--option", "80").returncode == 0
        assert Task.objects.get().status == "open"


def test_routines_and_unpark_from_the_command_line():
    """SPEC §22: `spaces routines add|list|pause|resume|remove`, and `spaces unpark`."""
    from spaces.models import Space
    from tasks.models import Routine

    space = load_agent_lab()
    _, writer = member_with_key(space, "writer", "agent-1")
    _, steward = member_with_key(space, "steward", "lead")
    with gunicorn(workers=1) as base:
        added = spaces_cli(base, steward, "routines", "add", "Audit the dependencies", "--schedule", "0 9 * * 1",
                           "--timezone", "Europe/Paris", "--label", "deps")
        assert added.returncode == 0, added.stdout
        made = Routine.objects.get()
        assert added.stdout.startswith(f"routine {made.pk} 'Audit the dependencies'  0 9 * * 1 Europe/Paris  next 20")
        assert made.labels == ["deps"]
        bad = spaces_cli(base, steward, "routines", "add", "Audit", "--schedule", "0 25 * * *")
        assert bad.returncode == 1 and "schedule" in bad.stdout, bad.stdout
        assert f"routine {made.pk} " in spaces_cli(base, writer, "routines").stdout
        assert "paused" in spaces_cli(base, steward, "routines", "pause", str(made.pk)).stdout
        assert Routine.objects.get().enabled is False
        assert "next 20" in spaces_cli(base, steward, "routines", "resume", str(made.pk)).stdout
        assert spaces_cli(base, steward, "routines", "remove", str(made.pk)).stdout.strip() == "removed"
        Space.objects.filter(pk=space.pk).update(max_cycles=1)
        spaces_cli(base, writer, "create", "Flaky migration")
        spaces_cli(base, writer, "next")
        spaces_cli(base, writer, "give-back", "1")
        assert Task.objects.get(number=1).status == "parked"
        refused = spaces_cli(base, writer, "--json", "unpark", "1")
        assert refused.returncode == 1 and json.loads(refused.stdout)["error"] == "forbidden", refused.stdout
        unparked = spaces_cli(base, steward, "unpark", "1")
        assert unparked.returncode == 0 and "unparked" in unparked.stdout, unparked.stdout
    assert Task.objects.get(number=1).status == "open"
