"""The README's walk-through runs as written, and again after a restart: its shell blocks, taken
from the README itself (and docs/api.md's approval example after them, in the same shell),
against a started bin/run, on two starts in a row."""
from __future__ import annotations

import re
import subprocess

import pytest

from tests.live_server import ROOT, free_port
from tests.test_bin_run import cleanup_run, start, stop

pytestmark = [pytest.mark.slow]


def walkthrough() -> str:
    """The README's shell blocks from the curl walk-through to the board section, as one script."""
    text = (ROOT / "README.md").read_text()
    part = text[text.index("## A walk-through with curl"):text.index("## The board")]
    blocks = re.findall(r"```sh\n(.*?)```", part, flags=re.S)
    assert len(blocks) >= 3, "the walk-through's blocks moved"
    return "\n".join(blocks)


def people_in_the_loop() -> str:
    """docs/api.md's example of an approval and a question, then of fleet controls, which continue
    the walk-through in its shell."""
    text = (ROOT / "docs" / "api.md").read_text()
    found = []
    for start, end in (("## People in the loop", "## Fleet controls"), ("## Fleet controls", "## Details")):
        blocks = re.findall(r"```sh\n(.*?)```", text[text.index(start):text.index(end)], flags=re.S)
        assert len(blocks) == 1, f"the example of {start[3:]} moved"
        found += blocks
    return "\n".join(found)


def run_as_written(script: str, key: str, port: int) -> subprocess.CompletedProcess:
    """The blocks with only what a reader fills in: the key bin/run printed, and its port."""
    script = script.replace("KEY=sk_…", f"KEY={key}").replace("127.0.0.1:8000", f"127.0.0.1:{port}")
    return subprocess.run(["bash", "-c", "set -eo pipefail\n" + script], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_the_walkthrough_runs_as_written_on_two_starts_in_a_row():
    name, script = f"readme-{free_port()}", walkthrough() + "\n" + people_in_the_loop()
    try:
        for start_number in (1, 2):
            port = free_port()
            process, key, _ = start(name, port)
            try:
                done = run_as_written(script, key, port)
            finally:
                stop(process)
            output = done.stdout
            assert done.returncode == 0, f"start {start_number}:\n{output[-3000:]}\n{done.stderr[-3000:]}"
            assert '"code":"conflict_key_occupied"' in output.replace(" ", "")  # the other phrasing lost
            assert output.lower().count("idempotent-replayed: true") == 1  # the retry was replayed
            assert '"state":"accepted"' in output.replace(" ", "")  # the check went through
            assert "working on task" in output and "is waiting" in output  # spaces work delivered
            assert '"type":"task.created"' in output and "Tell the receiver" in output  # the webhook arrived
            assert '"error":"task_not_open"' in output.replace(" ", "")  # the proposal waited for a person
            assert '"status":"open"' in output.replace(" ", "")  # …and the steward's approval opened it
            assert '"questions":[{' in output.replace(" ", "")  # the writer's question waited in the inbox
            assert output.replace(" ", "").count('"state":"answered"') >= 1  # …and the steward answered it
            assert '"label_caps":{"gpu":2}' in output.replace(" ", "")  # the fleet controls were set
            assert '"next_run_at":"' in output.replace(" ", "")  # …and the routine says when it runs
            assert "not valid" not in output and '"status":5' not in output.replace(" ", "")
    finally:
        cleanup_run(name)
