"""``/v1/schema`` describes every answer the API gives, as schemathesis reads it with every check
(SPEC §3: the schema is a public interface): each operation's refusals with their problem body,
success codes and pages as sent, the query parameters each route takes, strict bodies. The run
is bounded (a few examples an operation, a fixed seed) and fails on any finding that is not a
deviation listed here, with why.
"""
from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import load_agent_lab
from tests.factories import member_with_key
from tests.live_server import gunicorn

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Operations left out of the run: they would take the run's own key or space away from it (a
# steward's key may revoke itself, or set the space's requests_per_minute to 1), so what came
# after would test the refusal, not the route. Each is fuzzed by tests/test_every_route_hostile.py.
LEFT_OUT = ["PATCH /v1/spaces/{slug}", "DELETE /v1/keys/{prefix}", "PATCH /v1/spaces/{slug}/members/{member_id}"]

# A schema-valid request (ST202) the API refuses on purpose, for what JSON Schema cannot say:
# each refused field (or refusal code) here, with why. docs/api.md lists them as deviations.
SEMANTIC_FIELDS = {
    "cursor": "a cursor is one a list gave: opaque, so no schema tells the server's from the rest",
    "offset": "offset pages a list searched with q (a ranking); the others page by cursor",
    "expires_at": "a join link expires in the future, which a schema cannot date",
    "since": "a costs period is since before until, at most 366 days",
    "until": "a costs period is since before until, at most 366 days",
    "wait": "next by number does not wait: two fields together",
    "url": "a webhook's host must resolve to public addresses",
    "task": "a blocker is a task of the space: data, not form",
    "blocked_by": "blockers are tasks of the space: data, not form",
    "post": "a done cites a post of the space: data, not form",
    "member": "a member of the space: data, not form",
    "to": "a message's recipients (or a question's addressee) are members of the space: data, not form",
    "surviving_task": "a task of the space: data, not form",
    "title": "a title holds something visible once white space and invisible characters are removed",
    "budget_usd": "at most 14 digits, 6 of them decimals: JSON Schema's multipleOf is a float",
    "schedule": "a cron schedule's five fields each have their own range and names (minute 0-59, …)",
    "timezone": "an IANA time zone the server's zone database holds",
    "overlap": "a routine bound to a catalog slot cannot allow overlap: two fields together",
}
SEMANTIC_CODES = {
    "unknown_work_item": "a slot id of the form the schema gives that the space's catalog does not hold",
    "task_post_not_found": "a post of the space: data, not form",
    "survivor_invalid": "a surviving task of the space: data, not form",
    "dependency_cycle": "a blocker that would close a cycle",
}


def semantic(failure: dict) -> bool:
    """A schema-valid request refused for what the schema cannot say (SEMANTIC_*), or one that
    was not schema-valid after all (a query parameter the schema does not name)."""
    if failure["code"] != "ST202":
        return False
    try:
        body = json.loads(failure.get("body") or "")
    except ValueError:
        return False
    if body.get("error") in SEMANTIC_CODES:
        return True
    fields = body.get("fields") or {}
    unnamed = all("Unknown query parameter" in str(why) for why in fields.values())
    return bool(fields) and (set(fields) <= set(SEMANTIC_FIELDS) or unnamed)


def test_the_schema_describes_every_answer(tmp_path: Path):
    space = load_agent_lab()
    _, key = member_with_key(space, "steward", "schema-walker")
    config = tmp_path / "schemathesis.toml"
    # The run's space; the feed answered at once (a waited read holds a request up to 60 s).
    config.write_text('[parameters]\n"path.slug" = "agent-lab"\n"query.wait" = "0"\n')
    report = tmp_path / "report.ndjson"
    with gunicorn(workers=2, SPACES_BAD_KEY_LIMIT_PER_MINUTE="1000000") as base:
        run = subprocess.run(
            [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run", f"{base}/v1/schema",
             "--checks", "all", "-H", f"Authorization: Bearer {key}", "--max-examples", "5", "--seed", "1",
             "--workers", "2", "--request-timeout", "30", "--report", "ndjson", "--report-ndjson-path", str(report),
             *[arg for name in LEFT_OUT for arg in ("--exclude-name", name)]],
            capture_output=True, text=True, timeout=900, cwd=tmp_path)  # its cache stays out of the tree
    failures = list(findings(report))
    real = [f for f in failures if not semantic(f)]
    assert "Tested:" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]
    assert not real, "\n".join(f"{f['code']} {f['operation']}: {f['title']} {f['detail'][:300]} -> {f['body'][:300]}"
                               for f in real)


def findings(report: Path):
    """Each failed check the run's events record: its code, operation, title and answer's body."""
    for line in report.read_text().splitlines():
        event = json.loads(line).get("ScenarioFinished")
        if not event:
            continue
        recorder = event["recorder"]
        for case_id, checks in recorder.get("checks", {}).items():
            for check in checks:
                if check.get("status") != "failure":
                    continue
                failure = (check.get("failure_info") or {}).get("failure", {})
                response = (recorder.get("interactions", {}).get(case_id) or {}).get("response") or {}
                body = base64.b64decode((response.get("content") or {}).get("$base64", "")).decode(errors="replace")
                yield {"code": failure.get("code", "?"), "title": failure.get("title", ""),
                       "detail": failure.get("message", ""), "operation": failure.get("operation", recorder["label"]),
                       "body": body}
