"""SPEC §15's fronts in the client and the CLI, against real gunicorn workers on the shipped
gunicorn.conf.py: waiting for work, heartbeats, `spaces work`, the client's context manager."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from decimal import Decimal

import pytest

from spaces.models import Space
from spaces_client.client import SpacesClient
from spaces.models import Post
from tasks.models import Attempt, Claim, Task
from tests.conftest import load_agent_lab
from tests.factories import create_task, member_with_key
from tests.live_server import ROOT, gunicorn
from tests.test_cli import spaces_cli

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def later(seconds: float, action) -> threading.Thread:
    def run():
        from django.db import connection

        time.sleep(seconds)
        action()
        connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_next_wait_and_heartbeat_from_the_cli():
    space = load_agent_lab()
    steward, _ = member_with_key(space, "steward", "steward")
    _, writer = member_with_key(space, "writer", "agent-1")
    with gunicorn(workers=2, threads=None) as base:
        started = time.monotonic()
        maker = later(1.0, lambda: create_task(space=space, actor=steward, title="Retry policy"))
        claimed = spaces_cli(base, writer, "next", "--wait", "30")
        maker.join()
        assert claimed.returncode == 0 and claimed.stdout.startswith("claimed task 1"), claimed.stdout
        assert time.monotonic() - started < 20
        beat = spaces_cli(base, writer, "heartbeat", "1")
        assert beat.returncode == 0 and "renewed until" in beat.stdout
        assert Claim.objects.get().last_heartbeat_at is not None
        stranger = spaces_cli(base, "sk_wrong", "heartbeat", "1")
        assert stranger.returncode == 1
        nothing = spaces_cli(base, writer, "next", "--wait", "0.5")
        assert nothing.returncode == 0 and nothing.stdout.strip() == "nothing to do"


def test_spaces_work_runs_a_command_on_a_task_and_delivers_its_output(tmp_path):
    space = load_agent_lab()
    steward, _ = member_with_key(space, "steward", "steward")
    _, writer = member_with_key(space, "writer", "agent-1")
    Space.objects.filter(pk=space.pk).update(claim_lease_seconds=10)
    create_task(space=space, actor=steward, title="Retry policy", body="Exponential, capped at 30 s.")
    create_task(space=space, actor=steward, title="Write the onboarding guide")
    agent = tmp_path / "agent.sh"
    # The first task's work outlives its 10 s lease: the heartbeats keep the claim.
    agent.write_text('#!/bin/sh\nif [ "$SPACES_TASK" = 1 ]; then sleep 12; fi\n'
                     'echo "did $SPACES_TASK: $SPACES_TASK_TITLE / $SPACES_TASK_BODY"\n')
    agent.chmod(0o755)
    failing = tmp_path / "fail.sh"
    failing.write_text("#!/bin/sh\necho half-done\nexit 3\n")
    failing.chmod(0o755)
    with gunicorn(workers=2, threads=None) as base:
        failed = spaces_cli(base, writer, "work", "--", str(failing))
        assert failed.returncode == 1 and "gave the claim back" in failed.stderr
        assert Task.objects.get(number=1).status == "open" and not Attempt.objects.exists()
        worked = spaces_cli(base, writer, "work", "--", str(agent))
        assert worked.returncode == 0, worked.stdout + worked.stderr
        assert "working on task 1" in worked.stdout and "attempt 1 is waiting" in worked.stdout
        attempt = Attempt.objects.get(task__number=1)
        assert Post.objects.get(pk=attempt.post_id).body.strip() == "did 1: Retry policy / Exponential, capped at 30 s."
        claim = Claim.objects.filter(task__number=1).order_by("-pk").first()
        assert claim.end_reason == "attempt" and claim.last_heartbeat_at is not None  # never lapsed
        assert not Claim.objects.filter(end_reason="lapsed").exists()
        # --loop takes the next task, then waits for more; a task made while it waits is taken too.
        maker = later(4.0, lambda: create_task(space=space, actor=steward, title="Token spend dashboard"))
        looping = subprocess.Popen(
            [sys.executable, "-m", "spaces_client.cli", "work", "--loop", "--wait", "2", "--", str(agent)], cwd=ROOT,
            env=dict(os.environ, SPACES_URL=f"{base}/v1/spaces/agent-lab", SPACES_KEY=writer, PYTHONPATH=str(ROOT)),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while Attempt.objects.count() < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        looping.terminate()
        looping.communicate(timeout=30)
        maker.join()
    assert sorted(Attempt.objects.values_list("task__number", flat=True)) == [1, 2, 3]


def test_the_clients_context_manager_heartbeats_and_gives_back_on_error():
    space = load_agent_lab()
    steward, _ = member_with_key(space, "steward", "steward")
    _, writer = member_with_key(space, "writer", "agent-1")
    Space.objects.filter(pk=space.pk).update(claim_lease_seconds=10)
    create_task(space=space, actor=steward, title="Retry policy")
    with gunicorn(workers=1, threads=None) as base:
        client = SpacesClient(f"{base}/v1/spaces/agent-lab", writer)
        with pytest.raises(RuntimeError):
            with client.claimed(wait=5) as work:
                assert work.number == 1
                time.sleep(12)  # past the 10 s lease: the background heartbeats keep it
                assert client.task(1)["status"] == "claimed" and not work.lapsed
                raise RuntimeError("the agent ran out of context")
        assert client.task(1)["status"] == "open"  # given back
        claim = Claim.objects.get()
        assert claim.end_reason == "gave_back" and claim.last_heartbeat_at is not None
        with client.claimed(wait=0.5) as again:
            assert again is not None and again.number == 1


def test_spaces_work_reports_the_commands_time_and_the_cost_it_wrote(tmp_path):
    """SPEC §19: `spaces work` reports the command's wall time and what it wrote to
    $SPACES_COST_FILE, on done and on a give-back; `spaces costs` prints the figures."""
    from costs.models import Spend

    space = load_agent_lab()
    steward, _ = member_with_key(space, "steward", "steward")
    _, writer = member_with_key(space, "writer", "agent-1")
    create_task(space=space, actor=steward, title="Retry policy")
    create_task(space=space, actor=steward, title="Write the onboarding guide")
    failing = tmp_path / "fail.sh"
    failing.write_text('#!/bin/sh\necho \'{"usd": 0.05, "model": "m-small"}\' > "$SPACES_COST_FILE"\nexit 3\n')
    failing.chmod(0o755)
    agent = tmp_path / "agent.sh"
    agent.write_text('#!/bin/sh\nsleep 1\necho \'{"usd": 0.123456, "input_tokens": 2000, "output_tokens": 150, '
                     '"model": "m-large"}\' > "$SPACES_COST_FILE"\necho done\n')
    agent.chmod(0o755)
    with gunicorn(workers=2, threads=None) as base:
        assert spaces_cli(base, writer, "work", "--", str(failing)).returncode == 1
        given_back = Spend.objects.get()
        assert given_back.usd == Decimal("0.05") and given_back.model == "m-small"
        worked = spaces_cli(base, writer, "work", "--", str(agent))
        assert worked.returncode == 0, worked.stdout + worked.stderr
        spend = Spend.objects.exclude(pk=given_back.pk).get()
        assert spend.usd == Decimal("0.123456") and spend.input_tokens == 2000 and spend.output_tokens == 150
        assert spend.model == "m-large" and spend.seconds >= 1
        printed = spaces_cli(base, writer, "costs", "--group-by", "model")
        assert printed.returncode == 0, printed.stderr
        assert printed.stdout.splitlines()[0].startswith("m-large") and "0.173456 USD" in printed.stdout
